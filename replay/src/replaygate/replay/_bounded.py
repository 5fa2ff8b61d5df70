"""Bounded readers for every file replaygate loads: YAML, JSON and CSV, in size, depth and time.

Every loader of a versioned or user-written file goes through these, so the rules are the same
everywhere and every error names the file (and the line when there is one):

- a file larger than its limit (``max_bytes``), not UTF-8, missing or unreadable is refused;
- YAML keys given twice are refused, and so are anchors and aliases (``&name``/``*name``: an alias
  of a long scalar gets a small file past the size limit and expands to gigabytes when hashed or
  dumped) and nesting deeper than :data:`MAX_DEPTH`; an impossible value (``2026-02-30``) is an error
  at its line;
- JSON is strict: ``NaN``/``Infinity`` literals are refused, nesting deeper than :data:`MAX_DEPTH` too;
- a CSV cell may hold up to :data:`MAX_CSV_FIELD` characters (1 MiB); a larger one is an error naming
  the row;
- ``format_version`` must be the one this replaygate reads (:func:`check_format_version`).

:func:`load_yaml_bounded` is the one place YAML is parsed. libyaml (C) scans and parses each document
(:mod:`replaygate.replay._yaml_fast`: a scenario in a fraction of a millisecond); a document that path
refuses is read again by the pure-Python loader, so every error message is the one it always was.
:func:`load_yaml_data` is the same for a caller that needs only the values (no nodes for line numbers).
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import yaml
from pydantic import ValidationError
from replaygate.replay._yaml_fast import NotFast, load_fast, load_fast_data

__all__ = [
    "BoundedDictReader",
    "MAX_CSV_FIELD",
    "MAX_DEPTH",
    "MAX_JSON_BYTES",
    "MAX_YAML_BYTES",
    "check_format_version",
    "json_depth_ok",
    "load_json_bounded",
    "load_yaml_bounded",
    "load_yaml_data",
    "parse_json_bounded",
    "read_text_bounded",
    "validation_summary",
]

#: The deepest nesting of mappings and lists accepted in any YAML or JSON file.
MAX_DEPTH = 64
#: The largest YAML file (scenario, policy, users, candidate configuration).
MAX_YAML_BYTES = 1_000_000
#: The largest JSON file (run files, reports, decisions, golden.lock).
MAX_JSON_BYTES = 512_000_000
#: The largest CSV cell, in characters.
MAX_CSV_FIELD = 1 << 20


def _raise(error: type[Exception], message: str) -> NoReturn:
    raise error(message)


def read_text_bounded(
    path: str | os.PathLike[str], *, what: str, error: type[Exception], max_bytes: int
) -> str:
    """Read a UTF-8 text file of at most ``max_bytes``; every failure raises ``error`` naming the file."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            data = fh.read(max_bytes + 1)
    except FileNotFoundError:
        _raise(error, f"{p}: no such {what}")
    except IsADirectoryError:
        _raise(error, f"{p}: is a folder, not a {what}")
    except OSError as exc:
        _raise(error, f"{p}: cannot read the {what} ({exc.strerror or exc})")
    if len(data) > max_bytes:
        _raise(error, f"{p}: the {what} is larger than {max_bytes:,} bytes; refusing to read it")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        _raise(error, f"{p}:{line}: the {what} is not UTF-8 text (byte {exc.start}); save it as UTF-8")


class _BoundedLoader(yaml.SafeLoader):
    """A safe loader that refuses aliases and counts nesting while it composes."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self.current: yaml.Node | None = None

    def _peek(self) -> Any:
        return self.peek_event()  # type: ignore[no-untyped-call]

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        self.current = node  # the node being built when a constructor fails (its line goes in the error)
        return super().construct_object(node, deep)

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self._peek()
            raise _Refused(
                event.start_mark, "YAML anchors and aliases (*name) are not allowed; write the value out"
            )
        if self.check_event(yaml.ScalarEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent):
            event = self._peek()
            if getattr(event, "anchor", None) is not None:
                raise _Refused(
                    event.start_mark, "YAML anchors and aliases (&name) are not allowed; write the value out"
                )
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _Refused(self._peek().start_mark, f"nested deeper than {MAX_DEPTH} levels")
            node: yaml.Node | None = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key, _ in node.value:
                if isinstance(key, yaml.ScalarNode):
                    if key.value in seen:
                        raise _Refused(key.start_mark, f"key {key.value!r} appears twice; keep one")
                    seen.add(key.value)
        return node


class _Refused(Exception):
    def __init__(self, mark: Any, message: str) -> None:
        super().__init__(message)
        self.mark = mark
        self.message = message


def load_yaml_bounded(
    text: str, source: str, error: type[Exception] = ValueError
) -> tuple[Any, yaml.Node | None]:
    """Parse one YAML document safely: no aliases, bounded depth; return ``(data, node)``.

    ``node`` is the composed document (for line numbers), None for an empty document. Every problem
    raises ``error`` with ``source:line: what``.
    """
    try:
        return load_fast(text, MAX_DEPTH)
    except NotFast:  # refused (or not C-readable): the pure-Python loader reads it and says what is wrong
        return load_yaml_python(text, source, error)


def load_yaml_data(text: str, source: str, error: type[Exception] = ValueError) -> Any:
    """:func:`load_yaml_bounded`'s data alone (no nodes are built on the fast path); the same errors."""
    try:
        return load_fast_data(text, MAX_DEPTH)
    except NotFast:
        return load_yaml_python(text, source, error)[0]


def load_yaml_python(
    text: str, source: str, error: type[Exception] = ValueError
) -> tuple[Any, yaml.Node | None]:
    """:func:`load_yaml_bounded` on the pure-Python loader alone (the reference the fast path equals)."""
    node: yaml.Node | None = None
    loader: _BoundedLoader | None = None
    try:
        loader = _BoundedLoader(text)
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except _Refused as exc:
        _raise(error, f"{source}:{exc.mark.line + 1}: {exc.message}")
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        problem = exc.problem or exc.context or "invalid YAML"
        _raise(error, f"{source}:{line}: not valid YAML ({problem}); fix the syntax")
    except yaml.YAMLError as exc:
        _raise(error, f"{source}:1: not valid YAML ({exc}); fix the syntax")
    except (ValueError, TypeError, OverflowError, LookupError) as exc:  # 2026-02-30, !!bool maybe
        current = loader.current if loader is not None else None
        line = int(current.start_mark.line) + 1 if current is not None else 1
        _raise(error, f"{source}:{line}: impossible value ({exc}); fix the value")
    except RecursionError:
        _raise(error, f"{source}:1: YAML nested too deeply; flatten the document")
    finally:
        if loader is not None:
            loader.dispose()
    return data, node


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number")


def json_depth_ok(obj: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``obj`` nests lists and dicts at most ``limit`` deep (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(obj, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            if depth >= limit:
                return False
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            if depth >= limit:
                return False
            stack.extend((v, depth + 1) for v in item)
    return True


def parse_json_bounded(text: str | bytes, source: str, error: type[Exception], what: str = "file") -> Any:
    """Parse strict JSON (no NaN/Infinity) nested at most :data:`MAX_DEPTH` deep; errors name ``source``."""
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        _raise(error, f"{source}:{exc.lineno}: not valid JSON ({exc.msg}); is this a {what}?")
    except RecursionError:
        _raise(error, f"{source}:1: JSON nested too deeply (more than {MAX_DEPTH} levels)")
    except (ValueError, UnicodeDecodeError) as exc:
        _raise(error, f"{source}:1: not valid JSON ({exc}); is this a {what}?")
    if not json_depth_ok(data):
        _raise(error, f"{source}:1: JSON nested deeper than {MAX_DEPTH} levels")
    return data


def load_json_bounded(
    path: str | os.PathLike[str], *, what: str, error: type[Exception], max_bytes: int = MAX_JSON_BYTES
) -> Any:
    """Read and parse a JSON file with :func:`read_text_bounded` and :func:`parse_json_bounded`."""
    text = read_text_bounded(path, what=what, error=error, max_bytes=max_bytes)
    return parse_json_bounded(text, str(Path(path)), error, what)


def check_format_version(
    raw: dict[str, Any], expected: int, path: str | os.PathLike[str], what: str, error: type[Exception]
) -> None:
    """Refuse a document whose ``format_version`` is not ``expected`` (missing counts as wrong)."""
    version = raw.get("format_version")
    if type(version) is not int or version != expected:
        _raise(
            error,
            f"{path}: {what} format_version {version!r} is not supported (this replaygate reads version "
            f"{expected}); write it with this replaygate",
        )


def validation_summary(exc: ValidationError, limit: int = 5) -> str:
    """The first problems of a pydantic error as ``field.path: message; ...`` (no input echoed)."""
    parts = []
    for e in exc.errors(include_url=False, include_input=False)[:limit]:
        loc = ".".join(str(x) for x in e.get("loc", ())) or "(document)"
        parts.append(f"{loc}: {e.get('msg', 'invalid')}")
    more = exc.error_count() - limit
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


if TYPE_CHECKING:
    _DictReader = csv.DictReader[str]
else:
    _DictReader = csv.DictReader  # not subscriptable at run time before Python 3.12


class BoundedDictReader(_DictReader):
    """``csv.DictReader`` over text whose errors (a cell over :data:`MAX_CSV_FIELD`) raise ``error``.

    The csv module's field limit is raised to :data:`MAX_CSV_FIELD` when it is lower (never lowered).
    """

    def __init__(self, text: str, source: str, error: type[Exception]) -> None:
        """Read ``text`` (a CSV with a header); errors name ``source`` and the line."""
        if csv.field_size_limit() < MAX_CSV_FIELD:
            csv.field_size_limit(MAX_CSV_FIELD)
        super().__init__(io.StringIO(text, newline=""))
        self._source = source
        self._error = error

    def _fail(self, exc: csv.Error) -> NoReturn:
        _raise(
            self._error,
            f"{self._source}:{self.line_num}: not readable CSV ({exc}); a cell holds at most "
            f"{MAX_CSV_FIELD:,} characters",
        )

    @property
    def fieldnames(self) -> Any:
        """The header (read on first use)."""
        try:
            return super().fieldnames
        except csv.Error as exc:
            self._fail(exc)

    @fieldnames.setter
    def fieldnames(self, value: Any) -> None:
        self._fieldnames = value

    def __next__(self) -> dict[str | Any, str | Any]:
        """The next row."""
        try:
            return super().__next__()
        except csv.Error as exc:
            self._fail(exc)
