"""``load_versioned``: the one reader of replaygate's versioned JSON files (run file, report, journal header).

A versioned file is a JSON object whose ``format_version`` names its layout. ``load_versioned`` reads it
bounded (size, UTF-8: :mod:`._bounded`), refuses another version with the same message everywhere, and
turns an older version this replaygate still knows into the current one through the model's ``upgrades``
(one function per version, each returning the document of the next), as inspect_ai does for its logs.

Fast path: a file as replaygate writes it (``format_version`` first, no ``NaN``/``Infinity`` literal) is
validated in one pass by pydantic's JSON parser (``model_validate_json``), with no Python object tree in
between; only its free-form parts (``free_form``: the mappings a model keeps as ``dict[str, Any]``) are
walked for the nesting limit. Anything else (an error, an old version, a hand-edited layout) takes the
strict path (``json.loads`` without NaN, the depth limit, the version check, ``model_validate``), so every
error message is the one the strict reader gives.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from replaygate.replay._bounded import (
    MAX_DEPTH,
    MAX_JSON_BYTES,
    check_format_version,
    json_depth_ok,
    parse_json_bounded,
    read_text_bounded,
    validation_summary,
)

__all__ = ["FreeForm", "Upgrade", "load_versioned", "parse_versioned", "upgrade_document", "version_first"]

M = TypeVar("M", bound=BaseModel)

#: Turns a document of one version into the document of the next (``format_version`` included).
Upgrade = Callable[[dict[str, Any]], dict[str, Any]]
#: The free-form values of a validated document, each with its depth in the document (root 0).
FreeForm = Callable[[Any], Iterable[tuple[Any, int]]]

_VERSION_FIRST = re.compile(r'\s*\{\s*"format_version"\s*:\s*(\d+)\s*[,}]')


def version_first(text: str) -> int | None:
    """The ``format_version`` of a document that opens with it (as replaygate writes), else None."""
    head = _VERSION_FIRST.match(text)
    return int(head.group(1)) if head is not None else None


def upgrade_document(
    raw: dict[str, Any],
    *,
    version: int,
    upgrades: Mapping[int | None, Upgrade] | None,
    path: str | os.PathLike[str],
    what: str,
    error: type[Exception],
) -> dict[str, Any]:
    """Upgrade ``raw`` step by step to ``version``, then refuse it unless it is that version.

    ``upgrades`` maps an old version (``None``: a document without ``format_version``) to the function
    making the document of the next version.
    """
    done: set[int | None] = set()
    while upgrades:
        found = raw.get("format_version")
        if "format_version" in raw and (type(found) is not int or found == version):
            break
        key: int | None = found
        step = upgrades.get(key)
        if step is None or key in done:
            break
        done.add(key)
        raw = step(dict(raw))
    check_format_version(raw, version, path, what, error)
    return raw


def load_versioned(
    path: str | os.PathLike[str],
    model: type[M],
    *,
    version: int,
    what: str,
    error: type[Exception],
    kind: str | None = None,
    upgrades: Mapping[int | None, Upgrade] | None = None,
    free_form: FreeForm | None = None,
    max_bytes: int = MAX_JSON_BYTES,
) -> M:
    """Read a versioned JSON file into ``model`` (see the module docstring).

    Args:
        path: the file.
        model: its pydantic model (``format_version`` a ``Literal`` of the current version).
        version: the version this replaygate writes.
        what: what the file is, in messages (``run file``, ``gate report``).
        error: the exception every failure raises, with the file (and line) in its message.
        kind: the shorter name of the version and validation messages (default ``what``).
        upgrades: how to turn each older version into the next (``None``: a file without a version).
        free_form: the document's ``dict[str, Any]`` parts with their depths (enables the fast path).
        max_bytes: the largest file read.

    Raises:
        error: the file is missing, too large, not UTF-8, not JSON, not an object, another version, or
            not valid for the model.
    """
    text = read_text_bounded(path, what=what, error=error, max_bytes=max_bytes)
    return parse_versioned(
        text,
        path,
        model,
        version=version,
        what=what,
        error=error,
        kind=kind,
        upgrades=upgrades,
        free_form=free_form,
    )


def parse_versioned(
    text: str,
    path: str | os.PathLike[str],
    model: type[M],
    *,
    version: int,
    what: str,
    error: type[Exception],
    kind: str | None = None,
    upgrades: Mapping[int | None, Upgrade] | None = None,
    free_form: FreeForm | None = None,
) -> M:
    """:func:`load_versioned` of a file's text already read (``path`` names it in messages)."""
    p = Path(path)
    label = kind or what
    if free_form is not None and "NaN" not in text and "Infinity" not in text:
        if version_first(text) == version:
            try:
                doc = model.model_validate_json(text)
            except ValidationError:
                pass  # the strict path says what is wrong
            else:
                if all(json_depth_ok(value, MAX_DEPTH - depth) for value, depth in free_form(doc)):
                    return doc
    raw = parse_json_bounded(text, str(p), error, what)
    if not isinstance(raw, dict):
        raise error(f"{p}: a {what} is a JSON object")
    raw = upgrade_document(raw, version=version, upgrades=upgrades, path=p, what=label, error=error)
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise error(f"{p}: invalid {label}: {validation_summary(exc)}") from None
