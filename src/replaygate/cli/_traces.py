"""``replaygate traces``, ``replaygate trace ID`` and ``replaygate failures``: read captured traces.

Traces come from ``--source``: ``store`` (the default), ``phoenix`` or ``langfuse`` (``phoenix:URL``,
``langfuse:URL`` to name the server; see ``replaygate.sources``). The store is ``--store PATH`` (a file,
a ``sqlite:///path`` or a ``postgresql+psycopg://`` URL), else ``$REPLAYGATE_STORE``, else
``.replaygate/replaygate.db``. ``traces`` also reports the spans agents dropped before they reached the
store (their export queue was full), as the agents reported them.
Model output and retrieved text are untrusted: they are printed as plain text (never interpreted as
rich markup) with control characters replaced.

``--json`` prints one stable document for scripts (``format_version`` 1)::

    traces / failures: {"format_version": 1, "store": PATH, "traces": [TRACE, ...],
                        "dropped_spans": N}   newest first; N (stores only): spans agents dropped
    trace:             {"format_version": 1, "store": PATH, "trace": TRACE_DETAIL}

    TRACE = {trace_id, start (ISO-8601 UTC), start_ns, end_ns, latency_s, session_id, user_id,
             agent_name, agent_version, variant, config_id, turns [str], output, error, escalated,
             escalation_reason, clarification, failure_reasons [str], input_tokens, output_tokens,
             failure_note (the text given to mark_failure), feedback [{score, comment, created_ns}]}
    TRACE_DETAIL = TRACE + {outputs, chunks [{id, score, rank, text, query, metadata}],
             tool_calls [{name, arguments, result, call_id, error}],
             llm_calls [{model, provider, input_tokens, output_tokens, latency_s, cost_usd}],
             spans [{trace_id, span_id, parent_id, name, kind, start_ns, end_ns, status,
                     status_message, attributes, events}]}
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import re
import sys
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import click
from replaygate.instrumentation import FAILURE_REASONS, ReplaygateError, SpanRecord, TraceRecord
from replaygate.instrumentation import semconv as sc
from rich.console import Console
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from replaygate.cli._options import json_option, store_option
from replaygate.store import TraceStore

__all__ = [
    "JSON_FORMAT_VERSION",
    "is_store_source",
    "open_traces",
    "parse_since",
    "register",
    "source_label",
    "source_option",
    "trace_to_json",
]

JSON_FORMAT_VERSION = 1
PREVIEW = 60
ID_PREFIX = 12
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_SINCE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")

F = TypeVar("F", bound=Callable[..., Any])


class StoreDataError(click.ClickException):
    """A store that is missing or unreadable, or a trace that is not there: exit code 3."""

    exit_code = 3


def parse_since(text: str, now: datetime | None = None) -> int:
    """Turn ``30m``, ``2h``, ``1d``, ``1w`` (ago) or an ISO-8601 time (naive = UTC) into epoch ns.

    A duration longer than the time since 1970 (``100000d``) means every trace: 0.
    """
    now = now or datetime.now(UTC)
    match = _SINCE.match(text)
    if match:
        seconds = float(match.group(1)) * _UNITS[match.group(2)]
        if seconds >= now.timestamp():  # reaches back before 1970: every trace (none is older)
            return 0
        moment = now - timedelta(seconds=seconds)
    else:
        try:
            moment = datetime.fromisoformat(text.strip())
        except ValueError:
            raise click.BadParameter(
                f"{text!r} is neither a duration (30m, 2h, 1d, 1w) nor an ISO-8601 time (2026-11-29T08:00)",
                param_hint="--since",
            ) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1_000_000) * 1000


def _iso(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _short_time(ns: int, with_year: bool) -> str:
    return datetime.fromtimestamp(ns / 1e9, UTC).strftime(
        "%Y-%m-%d %H:%M:%S" if with_year else "%m-%d %H:%M:%S"
    )


def _failure_note(record: TraceRecord) -> str | None:
    """The text an agent gave ``mark_failure(reason)``, if any."""
    for span in record.spans:
        note = span.attributes.get(sc.RG_FAILURE_REASON) if span.kind == "agent" else None
        if note:
            return str(note)
    return None


def trace_to_json(record: TraceRecord, *, detail: bool = False) -> dict[str, Any]:
    """The documented ``--json`` form of one trace (``detail`` adds chunks, calls and spans)."""
    s = record.summary
    data: dict[str, Any] = {
        "trace_id": s.trace_id,
        "start": _iso(record.start_ns),
        "start_ns": record.start_ns,
        "end_ns": record.end_ns,
        "latency_s": s.latency_s,
        "session_id": s.session_id,
        "user_id": s.user_id,
        "agent_name": s.agent_name,
        "agent_version": s.agent_version,
        "variant": s.variant,
        "config_id": s.config_id,
        "turns": list(s.turns),
        "output": s.output,
        "error": s.error,
        "escalated": s.escalated,
        "escalation_reason": s.escalation_reason,
        "clarification": s.clarification,
        "failure_reasons": list(s.failure_reasons),
        "input_tokens": s.input_tokens,
        "output_tokens": s.output_tokens,
        "failure_note": _failure_note(record),
        "feedback": [dict(f) for f in record.feedback],
    }
    if detail:
        data["outputs"] = list(s.outputs)
        data["chunks"] = [dataclasses.asdict(c) for c in s.chunks]
        data["tool_calls"] = [dataclasses.asdict(c) for c in s.tool_calls]
        data["llm_calls"] = [dataclasses.asdict(c) for c in s.llm_calls]
        data["spans"] = [dict(dataclasses.asdict(span), events=list(span.events)) for span in record.spans]
    return data


def _clean(text: str | None, limit: int | None = None) -> str:
    """Untrusted text made safe to print: control characters replaced, optionally one line and truncated."""
    if text is None:
        return ""
    keep = "\n\t" if limit is None else ""
    cleaned = "".join(
        ch if ch in keep or unicodedata.category(ch) not in ("Cc", "Cf") else ("␤" if ch == "\n" else "�")
        for ch in text
    )
    if limit is not None and len(cleaned) > limit:
        return cleaned[: limit - 1] + "…"
    return cleaned


def _console() -> Console:
    return Console(file=sys.stdout, highlight=False, emoji=False, soft_wrap=False)


def is_store_source(source: str | None) -> bool:
    """True when ``--source`` names the embedded store (the default), not Phoenix or Langfuse."""
    head = (source or "store").split(":", 1)[0].strip().lower()
    return head not in ("phoenix", "langfuse", "http", "https")


_SOURCE_KINDS = ("store", "phoenix", "langfuse")


def _store_path(source: str | None) -> str | None:
    """The store path a store ``--source`` gives (``store``, ``store:PATH`` or a path; None: ``--store``).

    A bare word close to a source kind that names no file (``langfuze``) is refused as a typo rather than
    looked for as a store file.
    """
    if source is None or source.strip().lower() == "store":
        return None
    if source.lower().startswith("store:"):
        return source.split(":", 1)[1] or None
    word = source.strip()
    if not any(c in word for c in (os.sep, ".", ":")) and not os.path.exists(word):
        import difflib

        close = difflib.get_close_matches(word.lower(), _SOURCE_KINDS, n=1, cutoff=0.6)
        if close:
            raise StoreDataError(
                f"--source {source!r}: no such source or store file; did you mean --source {close[0]}? "
                f"(a source is {', '.join(_SOURCE_KINDS)}, or a store path)"
            )
    return source


@contextmanager
def open_traces(store: str | None, source: str | None = None) -> Iterator[Any]:
    """The trace source ``--source`` names (the store, read-only, by default); errors exit with code 3.

    Phoenix and Langfuse are loaded only when asked for (their clients are slow to import).
    """
    try:
        if is_store_source(source):
            trace_store = TraceStore(_store_path(source) or store, create=False)
        else:
            trace_store = importlib.import_module("replaygate.sources").open_source(source, store=store)
        try:
            yield trace_store
        finally:
            trace_store.close()
    except ReplaygateError as exc:
        raise StoreDataError(str(exc)) from exc


def source_label(source: Any) -> str:
    """Where traces were read: the store's path or the source's description."""
    return str(source.path) if isinstance(source, TraceStore) else str(source.describe())


def source_option(fn: F) -> F:
    """``--source store|phoenix|langfuse`` (or ``phoenix:URL`` / ``langfuse:URL``)."""
    return click.option(
        "--source",
        metavar="SOURCE",
        default=None,
        help="Where traces are read: store (default), phoenix, langfuse, phoenix:URL or langfuse:URL.",
    )(fn)


def _emit_json(data: dict[str, Any]) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def _limit_option(fn: F) -> F:
    return click.option(
        "--limit", type=click.IntRange(min=1), default=100, show_default=True, help="At most N traces."
    )(fn)


def _trace_table(records: Sequence[TraceRecord], title: str, width: int) -> Table:
    wide = width >= 150
    table = Table(title=title, title_justify="left")
    table.add_column("time (UTC)", no_wrap=True)
    table.add_column("trace id", no_wrap=True)
    roomy = width >= 100
    if roomy:
        table.add_column("agent / session", min_width=8, overflow="fold")
    table.add_column("input", min_width=12, ratio=1, overflow="fold")
    table.add_column("output", min_width=12, ratio=1, overflow="fold")
    table.add_column("failure reasons", min_width=10, overflow="fold")
    for record in records:
        s = record.summary
        who = " / ".join(_clean(x, 24) for x in (s.agent_name, s.session_id) if x)
        cells = [
            Text(_short_time(record.start_ns, wide)),
            Text(s.trace_id if wide else s.trace_id[:ID_PREFIX]),
            Text(_clean(s.turns[-1] if s.turns else None, PREVIEW)),
            Text(_clean(s.output if s.output is not None else s.error, PREVIEW)),
            Text(", ".join(s.failure_reasons), style="red" if s.failure_reasons else ""),
        ]
        if roomy:
            cells.insert(2, Text(who))
        table.add_row(*cells)
    return table


def _drop_warning(store: TraceStore, dropped: int) -> str:
    """The drops and what to raise (a PostgreSQL store's agents export through `replaygate collect`)."""
    collected = store.store.dialect == "postgresql"  # agents cannot write PostgreSQL themselves
    advice = " or the collector's capacity (`replaygate collect --workers`)" if collected else ""
    return (
        f"warning: agents dropped {dropped} spans before they reached this store (export queue full; "
        f"{len(store.drops().sources)} processes): raise REPLAYGATE_QUEUE_SIZE in the agents{advice}"
    )


def _list(records: Sequence[TraceRecord], store: Any, as_json: bool, what: str) -> None:
    where = source_label(store)
    dropped = store.drops().total if isinstance(store, TraceStore) else 0
    if as_json:
        document: dict[str, Any] = {
            "format_version": JSON_FORMAT_VERSION,
            "store": where,
            "traces": [trace_to_json(r) for r in records],
        }
        if isinstance(store, TraceStore):
            document["dropped_spans"] = dropped
        _emit_json(document)
        return
    console = _console()
    if dropped:
        console.print(Text(_drop_warning(store, dropped), style="yellow"))
    if not records:
        console.print(Text(f"no {what} in {where}"))
        return
    title = f"{len(records)} {what} in {where}, newest first"
    console.print(_trace_table(records, title, console.width))
    if console.width < 150:
        console.print(
            Text("(trace ids shortened: `replaygate trace PREFIX` accepts them; --json has full ids)")
        )


def _span_label(span: SpanRecord) -> Text:
    label = Text(_clean(span.name, 80))
    label.append(f"  [{span.kind}]", style="cyan")
    label.append(f"  {(span.end_ns - span.start_ns) / 1e6:.1f} ms")
    if span.status == "error":
        label.append(f"  error: {_clean(span.status_message, 80)}", style="red")
    return label


def _span_tree(record: TraceRecord) -> Tree:
    tree = Tree(Text(f"spans ({len(record.spans)})"))
    ids = {s.span_id for s in record.spans}
    children: dict[str | None, list[SpanRecord]] = {}
    for span in record.spans:
        parent = span.parent_id if span.parent_id in ids else None
        children.setdefault(parent, []).append(span)

    def add(node: Tree, parent: str | None, depth: int) -> None:
        for span in sorted(children.get(parent, []), key=lambda s: s.start_ns):
            branch = node.add(_span_label(span))
            if depth < 50:
                add(branch, span.span_id, depth + 1)

    add(tree, None, 0)
    return tree


def _table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> Table:
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    return table


def _detail_tables(record: TraceRecord) -> list[Table]:
    s = record.summary
    tables = []
    if s.chunks:
        chunk_rows = [
            (
                str(c.rank),
                _clean(c.id, 40),
                "" if c.score is None else f"{c.score:.3f}",
                _clean(c.query, 40),
                _clean(c.text, PREVIEW),
            )
            for c in s.chunks
        ]
        tables.append(_table("retrieved chunks", ("rank", "id", "score", "query", "text"), chunk_rows))
    if s.tool_calls:
        tool_rows = [
            (
                _clean(t.name, 40),
                _clean(json.dumps(t.arguments, ensure_ascii=False, default=str), PREVIEW),
                _clean(t.result if isinstance(t.result, str) else json.dumps(t.result, default=str), PREVIEW),
                _clean(t.error, 60),
            )
            for t in s.tool_calls
        ]
        tables.append(_table("tool calls", ("tool", "arguments", "result", "error"), tool_rows))
    if s.llm_calls:
        llm_rows = [
            (
                _clean(c.model, 40),
                _clean(c.provider, 20),
                "?" if c.input_tokens is None else str(c.input_tokens),
                "?" if c.output_tokens is None else str(c.output_tokens),
                f"{c.latency_s:.3f} s",
            )
            for c in s.llm_calls
        ]
        columns = ("model", "provider", "input tokens", "output tokens", "latency")
        tables.append(_table("LLM calls", columns, llm_rows))
    return tables


def _show_trace(record: TraceRecord) -> None:
    s = record.summary
    console = _console()
    console.print(Text(f"trace {s.trace_id}", style="bold"))
    facts = [
        ("started", _iso(record.start_ns)),
        ("latency", f"{s.latency_s:.3f} s"),
        ("agent", " ".join(x for x in (s.agent_name, s.agent_version) if x)),
        ("session", s.session_id),
        ("user", s.user_id),
        ("variant", " / ".join(x for x in (s.variant, s.config_id) if x)),
        ("tokens", f"in {s.input_tokens} / out {s.output_tokens}" if s.llm_calls else None),
        ("failure reasons", ", ".join(s.failure_reasons) or "none"),
        ("error", s.error),
        ("failure note", _failure_note(record)),
        ("escalated", s.escalation_reason or "yes" if s.escalated else None),
        ("clarification asked", "yes" if s.clarification else None),
    ]
    for name, value in facts:
        if value:
            console.print(Text(f"  {name}: ").append(_clean(value)))
    for index, turn in enumerate(s.turns):
        console.print(Text(f"turn {index + 1} — user:", style="bold"))
        console.print(Text(_clean(turn)))
        if index < len(s.outputs):
            console.print(Text("agent:", style="bold"))
            console.print(Text(_clean(s.outputs[index]) if s.outputs[index] is not None else "(no output)"))
    console.print(_span_tree(record))
    for table in _detail_tables(record):
        console.print(table)
    for item in record.feedback:
        line = Text(f"feedback {item['score']:+.2f} at {_iso(int(item['created_ns']))}")
        if item.get("comment"):
            line.append(": " + _clean(str(item["comment"])))
        console.print(line)


def register(group: click.Group) -> None:
    """Add ``traces``, ``trace`` and ``failures`` to the root group."""

    @group.command("traces")
    @store_option
    @source_option
    @_limit_option
    @click.option("--session", metavar="ID", default=None, help="Only traces of this session/conversation.")
    @click.option("--variant", metavar="NAME", default=None, help="Only traces of this variant (canary arm).")
    @click.option(
        "--since", metavar="WHEN", default=None, help="Only traces since 30m, 2h, 1d or an ISO time."
    )
    @json_option
    def traces(
        store: str | None,
        source: str | None,
        limit: int,
        session: str | None,
        variant: str | None,
        since: str | None,
        as_json: bool,
    ) -> None:
        """List captured traces, newest first."""
        since_ns = parse_since(since) if since else None
        with open_traces(store, source) as trace_store:
            records = trace_store.list_traces(
                limit=limit, since_ns=since_ns, session_id=session, variant=variant
            )
            _list(records, trace_store, as_json, "traces")

    @group.command("trace")
    @click.argument("trace_id")
    @store_option
    @source_option
    @json_option
    def trace(trace_id: str, store: str | None, source: str | None, as_json: bool) -> None:
        """Show one trace (full id or a unique prefix): turns, answers, span tree, chunks, calls, feedback."""
        with open_traces(store, source) as trace_store:
            record = trace_store.get_trace(trace_store.resolve_trace_id(trace_id))
            if as_json:
                _emit_json(
                    {
                        "format_version": JSON_FORMAT_VERSION,
                        "store": source_label(trace_store),
                        "trace": trace_to_json(record, detail=True),
                    }
                )
            else:
                _show_trace(record)

    @group.command("failures")
    @store_option
    @source_option
    @click.option(
        "--reason",
        "reasons",
        multiple=True,
        type=click.Choice(FAILURE_REASONS),
        help="Only these failure reasons (repeatable).",
    )
    @click.option(
        "--since", metavar="WHEN", default=None, help="Only failures since 30m, 2h, 1d or an ISO time."
    )
    @_limit_option
    @json_option
    def failures(
        store: str | None,
        source: str | None,
        reasons: tuple[str, ...],
        since: str | None,
        limit: int,
        as_json: bool,
    ) -> None:
        """The failure inbox: failure candidates with their reasons, newest first."""
        since_ns = parse_since(since) if since else None
        with open_traces(store, source) as trace_store:
            records = trace_store.failures(reasons=reasons or None, since_ns=since_ns, limit=limit)
            _list(records, trace_store, as_json, "failure candidates")
