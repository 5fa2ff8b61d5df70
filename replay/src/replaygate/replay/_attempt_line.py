"""An attempt line of a run file read without building the attempt: the fields a summary reads.

:func:`~replaygate.replay.dump_run` writes each attempt as ``Attempt.model_dump_json()``: every field,
in declaration order, compactly. :func:`parse_attempt_line` matches that exact layout with one compiled
pattern and takes the fields a reader that keeps a summary needs (:class:`AttemptFields`), with the
line's :func:`~replaygate.replay.attempt_digest`, in a fraction of the time ``Attempt`` validation takes.

The pattern is stricter than the schema, never looser: it accepts only strings with no escape sequence
(no backslash, no control character), numbers in JSON's grammar, ``true``/``false``/``null`` where the
field allows them, no judges, no conversation, and every key in place. Whatever it does not accept (a
judge, an escaped quote, another layout, an invalid value) returns None, and the caller validates that
line as an :class:`Attempt` (which gives the same fields, through :func:`attempt_fields`, or the
validation error). So a line read here is one ``Attempt`` validation accepts, with the same values.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from replaygate.replay._runfile import Attempt, JudgeResult

__all__ = ["LINE_PATTERN", "AttemptFields", "attempt_fields", "failed_checks", "parse_attempt_line"]


@dataclass(slots=True)
class AttemptFields:
    """What a run's summary reads of one attempt (``retrieval``: hit rate, MRR, recall, NDCG)."""

    scenario_id: str
    index: int
    status: str
    error: str | None
    answer: str | None
    failed_checks: tuple[tuple[str, str], ...]  # (name, detail) of each check that did not pass
    judges: tuple[JudgeResult, ...]
    retrieval: tuple[float, float, float, float] | None
    latency_s: float
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    escalated: bool
    empty: bool
    llm_calls: int | None


def attempt_fields(a: Attempt) -> AttemptFields:
    """The fields of a validated attempt (what :func:`parse_attempt_line` gives for its line)."""
    r, m = a.retrieval, a.measures
    return AttemptFields(
        a.scenario_id,
        a.index,
        a.status,
        a.error,
        a.answer,
        tuple((c.name, c.detail) for c in a.checks if not c.passed),
        tuple(a.judges),
        (r.hit_rate, r.mrr, r.recall, r.ndcg) if r is not None else None,
        m.latency_s,
        m.input_tokens,
        m.output_tokens,
        m.cost_usd,
        m.escalated,
        m.empty,
        m.llm_calls,
    )


_S = rb'"[^"\\\x00-\x1f]*"'  # a string with no escape: its bytes are its UTF-8 text
_I = rb"-?(?:0|[1-9][0-9]{0,17})"  # an int well inside 64 bits
_F = rb"-?(?:0|[1-9][0-9]{0,19})(?:\.[0-9]{1,40})?(?:[eE][+-]?[0-9]{1,3})?"
_B = rb"(?:true|false)"
_CHECK = rb'\{"name":' + _S + rb',"passed":' + _B + rb',"detail":' + _S + rb"\}"
_CHECK_FIELDS = re.compile(rb'\{"name":"([^"]*)","passed":(true|false),"detail":"([^"]*)"\}')
_RETRIEVAL = (
    rb'\{"k":' + _I + rb',"hit_rate":(?P<hit>' + _F + rb'),"mrr":(?P<mrr>' + _F + rb'),"recall":(?P<rec>'
    + _F + rb'),"ndcg":(?P<ndcg>' + _F + rb'),"retrieved":' + _I + rb',"filtered":(?:' + _I
    + rb'|null),"threshold":(?:' + _F + rb'|null),"threshold_noop":' + _B + rb"\}"
)  # fmt: skip
LINE_PATTERN = re.compile(
    rb'\{"scenario_id":"(?P<sid>[^"\\\x00-\x1f]*)","index":(?P<index>' + _I + rb')'
    rb',"status":"(?P<status>pass|fail|error)"'
    rb',"error":(?:"(?P<error>[^"\\\x00-\x1f]*)"|null)'
    rb',"answer":(?:"(?P<answer>[^"\\\x00-\x1f]*)"|null)'
    rb',"checks":\[(?P<checks>(?:' + _CHECK + rb'(?:,' + _CHECK + rb')*)?)\]'
    rb',"judges":\[\]'
    rb',"retrieval":(?:null|(?P<retrieval>' + _RETRIEVAL + rb'))'
    rb',"measures":\{"latency_s":(?P<latency>' + _F + rb')'
    rb',"input_tokens":(?:(?P<tin>' + _I + rb')|null)'
    rb',"output_tokens":(?:(?P<tout>' + _I + rb')|null)'
    rb',"cost_usd":(?:(?P<cost>' + _F + rb')|null)'
    rb',"escalated":(?P<esc>' + _B + rb'),"empty":(?P<empty>' + _B + rb'),"steps":' + _I
    + rb',"llm_calls":(?:(?P<calls>' + _I + rb')|null)\}'
    rb',"attribution":(?:null|"retrieval"|"generation")'
    rb',"trace_id":(?:' + _S + rb'|null)'
    rb'(?P<path>,"artifact_path":(?:' + _S + rb'|null))'
    rb',"started":' + _S + rb',"conversation":null\}'
)  # fmt: skip


def _text(raw: bytes | None) -> str | None:
    return raw.decode("utf-8") if raw is not None else None


def _int(raw: bytes | None) -> int | None:
    return int(raw) if raw is not None else None


def failed_checks(checks: bytes) -> tuple[tuple[str, str], ...]:
    """(name, detail) of each check that did not pass, from the text inside a matched line's ``checks``."""
    if b'"passed":false' not in checks:
        return ()
    return tuple(
        (name.decode("utf-8"), detail.decode("utf-8"))
        for name, passed, detail in _CHECK_FIELDS.findall(checks)
        if passed == b"false"
    )


def parse_attempt_line(data: bytes, start: int, stop: int) -> tuple[AttemptFields, bytes] | None:
    """The fields and the raw sha256 digest of the attempt written in ``data[start:stop]``.

    The digest is :func:`~replaygate.replay.attempt_digest`'s (the line without its ``artifact_path``),
    as bytes. None when the line is not in the layout this reads (see the module docstring).
    """
    m = LINE_PATTERN.fullmatch(data, start, stop)
    if m is None:
        return None
    status = m["status"].decode()
    failed = failed_checks(m["checks"])
    retrieval = None
    if m["retrieval"] is not None:
        retrieval = (float(m["hit"]), float(m["mrr"]), float(m["rec"]), float(m["ndcg"]))
    cost = m["cost"]
    fields = AttemptFields(
        m["sid"].decode("utf-8"),
        int(m["index"]),
        status,
        _text(m["error"]),
        _text(m["answer"]),
        failed,
        (),
        retrieval,
        float(m["latency"]),
        _int(m["tin"]),
        _int(m["tout"]),
        float(cost) if cost is not None else None,
        m["esc"] == b"true",
        m["empty"] == b"true",
        _int(m["calls"]),
    )
    cut, resume = m.span("path")
    digest = hashlib.sha256(data[start:cut])
    digest.update(data[resume:stop])
    return fields, digest.digest()
