"""The forms a scenario's checks may be written in, and did-you-mean help for what else people write.

A check is written in full, or as a one-key shorthand (the check type as the key, its main field as the
value), as many teams and tools write them::

    checks:
      - {type: forbidden_output_regex, pattern: "(?i)refund issued"}   # full form
      - forbidden_output_regex: "(?i)refund issued"                    # shorthand: pattern
      - expected_tools: [web_search]                                   # shorthand: tools (a name or a list)
      - max_chars: 80                                                  # shorthand: limit
      - contains: {values: [ORD-1], case_sensitive: true}              # shorthand with several fields

:data:`SHORTHAND_FIELDS` says which field the value of each shorthand fills. A scenario is written back in
the form its file used (each check remembers it). Everything else gets an error that says what was
expected, with a did-you-mean: a misspelt key (``value`` → ``values``), a misspelt type (``not-contains``
→ ``not_contains``), or another tool's vocabulary (promptfoo's ``assert:`` → ``checks:``).

:func:`scenario_json_schema` is the JSON Schema of a scenario file, both forms included, for editors
(``# yaml-language-server: $schema=...``) and other tools.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel
from replaygate.replay._scenario_checks import CHECK_MODELS
from replaygate.replay._scenario_model import ChangelogEntry, RetrievalLabels, Scenario

__all__ = [
    "CHECK_MODELS",
    "SHORTHAND_FIELDS",
    "Problem",
    "check_entry",
    "error_hint",
    "mark_forms",
    "normalise_checks",
    "scenario_json_schema",
]

#: check type -> the field a shorthand's value fills (``tool_args`` takes a mapping of its fields).
SHORTHAND_FIELDS: dict[str, str | None] = {
    "output_regex": "pattern",
    "forbidden_output_regex": "pattern",
    "contains": "values",
    "not_contains": "values",
    "max_chars": "limit",
    "expected_tools": "tools",
    "forbidden_tools": "tools",
    "tool_args": None,
    "max_steps": "limit",
    "expected_label": "label",
    "json_schema": "schema",
    "values_from_tools": "pattern",
}
_LIST_FIELDS = frozenset({"values", "tools"})

_PROMPTFOO = (
    "replaygate calls these `checks:`; `type: contains, value: x` is `{type: contains, values: [x]}` "
    "(or the shorthand `- contains: x`)"
)
#: Scenario keys other tools use, and what replaygate calls them.
_FOREIGN_KEYS: dict[str, str] = {
    "assert": _PROMPTFOO,
    "asserts": _PROMPTFOO,
    "assertions": _PROMPTFOO,
    "tests": "a replaygate scenario is one test case per file; write its checks under `checks:`",
    "vars": "replaygate calls these `context:` (a mapping the target receives with the turns)",
    "prompt": "replaygate calls the user's messages `turns:` (a list, replayed in one session)",
    "input": "replaygate calls the user's messages `turns:` (a list, replayed in one session)",
    "question": "replaygate calls the user's messages `turns:` (a list, replayed in one session)",
    "description": "replaygate calls this `title:` (and `expected_behavior:` for what should happen)",
    "name": "replaygate calls this `title:` (the file stem is the `id:`)",
}
#: Check types other tools use (promptfoo, DeepEval-style names), and the replaygate type.
_FOREIGN_TYPES: dict[str, str] = {
    "icontains": "contains",
    "contains-all": "contains",
    "icontains-all": "contains",
    "not-icontains": "not_contains",
    "not-contains-all": "not_contains",
    "regex": "output_regex",
    "not-regex": "forbidden_output_regex",
    "is-json": "json_schema",
    "equals": "output_regex",
}
#: Check fields other tools use, and the replaygate field (``value`` depends on the check type).
_FOREIGN_FIELDS: dict[str, str] = {"max": "limit", "max_length": "limit", "regex": "pattern", "tool": "tools"}

Path = tuple[str | int, ...]
#: (where in the document, message): a problem the normaliser found before validation.
Problem = tuple[Path, str]


def _close(word: str, candidates: Iterable[str]) -> str | None:
    options = list(candidates)
    key = word.strip().lower().replace("-", "_").replace(" ", "_")
    if key in options:
        return key
    found = difflib.get_close_matches(key, options, n=1, cutoff=0.6)
    return found[0] if found else None


@functools.cache
def _field_names(model: type[BaseModel]) -> tuple[str, ...]:
    return tuple(f.alias or name for name, f in model.model_fields.items())


def _fields(model: type[BaseModel]) -> list[str]:
    return list(_field_names(model))


def _main_field(check_type: str, value: Any) -> dict[str, Any]:
    main = SHORTHAND_FIELDS[check_type]
    if main is None or (isinstance(value, Mapping) and check_type != "json_schema"):
        return dict(value)
    if main in _LIST_FIELDS and isinstance(value, str):
        value = [value]
    return {main: value}


def _field_problems(check_type: str, entry: Mapping[str, Any], where: Path) -> list[Problem]:
    """Unknown keys of a check of a known type, each with a did-you-mean."""
    model = CHECK_MODELS[check_type]
    names = [n for n in _field_names(model) if n != "type"]
    out: list[Problem] = []
    for key in entry:
        if key == "type" or key in names:
            continue
        guess = _FOREIGN_FIELDS.get(str(key)) if _FOREIGN_FIELDS.get(str(key)) in names else None
        if str(key) == "value":
            guess = SHORTHAND_FIELDS[check_type]
        guess = guess or _close(str(key), names)
        shape = ""
        if guess in _LIST_FIELDS:
            shape = f" (a list: `{guess}: [{_flow(entry[key])}]`)"
        hint = f"; did you mean `{guess}`{shape}?" if guess else ""
        out.append(
            (
                (*where, str(key)),
                f"`{key}` is not a field of a {check_type} check{hint} "
                f"({check_type} takes {', '.join(n for n in names if n != 'turn')})",
            )
        )
    return out


def _flow(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def _type_problem(name: Any, where: Path) -> Problem:
    text = str(name)
    guess = _FOREIGN_TYPES.get(text.lower()) or _close(text, CHECK_MODELS)
    hint = f"did you mean `{guess}`? " if guess else ""
    return where, f"unknown check type `{text}`; {hint}(check types: {', '.join(CHECK_MODELS)})"


def _normalise_check(entry: Any, where: Path) -> tuple[Any, bool, list[Problem]]:
    """One check entry in full form, whether it was a shorthand, and the problems found."""
    if not isinstance(entry, Mapping):
        return entry, False, []
    if "type" in entry:
        check_type = entry["type"]
        if not isinstance(check_type, str) or check_type not in CHECK_MODELS:
            return entry, False, [_type_problem(check_type, (*where, "type"))]
        return entry, False, _field_problems(check_type, entry, where)
    keys = [str(k) for k in entry]
    types = [k for k in keys if k in CHECK_MODELS]
    if len(keys) == 1 and types:
        check_type = types[0]
        value = entry[check_type]
        if SHORTHAND_FIELDS[check_type] is None and not isinstance(value, Mapping):
            names = ", ".join(n for n in _fields(CHECK_MODELS[check_type]) if n not in ("type", "turn"))
            return (
                entry,
                False,
                [((*where, check_type), f"`{check_type}:` takes a mapping of its fields ({names})")],
            )
        full = {"type": check_type, **_main_field(check_type, value)}
        return full, True, _field_problems(check_type, full, (*where, check_type))
    if len(keys) == 1:
        problem = _type_problem(keys[0], (*where, keys[0]))
        return entry, False, [(problem[0], problem[1] + "; a shorthand check is `- TYPE: VALUE`")]
    named = f" (`{types[0]}` is a check type: add `type: {types[0]}`)" if len(types) == 1 else ""
    return (
        entry,
        False,
        [
            (
                where,
                "a check names its type: write `{type: TYPE, field: ...}`, or the one-key shorthand "
                f"`- TYPE: VALUE`{named}",
            )
        ],
    )


def _top_level_problems(data: Mapping[str, Any]) -> list[Problem]:
    names = _field_names(Scenario)
    out: list[Problem] = []
    for key in data:
        text = str(key)
        if text in names:
            continue
        if text.lower() in _FOREIGN_KEYS:
            out.append(((text,), f"`{text}` is not a scenario field: {_FOREIGN_KEYS[text.lower()]}"))
    return out


def normalise_checks(data: Mapping[str, Any]) -> tuple[dict[str, Any], list[bool], list[Problem]]:
    """Bring a scenario mapping's checks to the full form before validation.

    Returns:
        the mapping with every shorthand check expanded, which checks were shorthand (by index), and the
        problems found (another tool's keys, unknown check types and fields, each with a did-you-mean);
        the checks with a problem are left as written for the validator to report around them.
    """
    out = dict(data)
    problems = _top_level_problems(data)
    checks = data.get("checks")
    if not isinstance(checks, list):
        return out, [], problems
    expanded: list[Any] = []
    forms: list[bool] = []
    for index, entry in enumerate(checks):
        full, short, found = _normalise_check(entry, ("checks", index))
        expanded.append(full)
        forms.append(short)
        problems.extend(found)
    out["checks"] = expanded
    return out, forms, problems


def mark_forms(scenario: Scenario, forms: Sequence[bool]) -> Scenario:
    """Remember on each check of ``scenario`` whether its file wrote it as a shorthand."""
    for check, short in zip(scenario.checks, forms, strict=False):
        check._shorthand = short
    return scenario


def check_entry(check: BaseModel) -> dict[str, Any]:
    """One check as a mapping to write: in the form its file used (full form for a new check)."""
    data = check.model_dump(mode="python", by_alias=True, exclude_defaults=True, exclude_none=True)
    check_type = str(getattr(check, "type", ""))
    data.pop("type", None)
    if not getattr(check, "_shorthand", False):
        return {"type": check_type, **data}
    main = SHORTHAND_FIELDS.get(check_type)
    if main is not None and list(data) == [main]:
        return {check_type: data[main]}
    return {check_type: data}


_EXTRA_FIELDS: dict[str, list[str]] = {
    "status": ["state", "owner", "until", "reason", "date"],
    "retrieval": _fields(RetrievalLabels),
    "changelog": _fields(ChangelogEntry),
    "judges": ["type", "mode", "min_score"],
}


def error_hint(error: Mapping[str, Any]) -> str:
    """A did-you-mean for one pydantic error of a scenario (an unknown key, an unknown tag), or ``""``."""
    kind = error.get("type", "")
    loc = tuple(error.get("loc", ()))
    if kind == "extra_forbidden" and loc:
        key = str(loc[-1])
        if len(loc) == 1:
            candidates = _fields(Scenario)
        elif str(loc[0]) in _EXTRA_FIELDS:
            candidates = _EXTRA_FIELDS[str(loc[0])]
        else:
            return ""
        guess = _close(key, candidates)
        return f"did you mean `{guess}`?" if guess and guess != key else ""
    if kind == "union_tag_invalid":
        ctx = error.get("ctx") or {}
        tag = str(ctx.get("tag", ""))
        expected = [t.strip(" '") for t in str(ctx.get("expected_tags", "")).split(",")]
        guess = _close(tag, expected)
        return f"did you mean `{guess}`?" if guess else ""
    return ""


def _without_type(schema: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(schema)
    out["properties"] = {k: v for k, v in schema.get("properties", {}).items() if k != "type"}
    out["required"] = [r for r in schema.get("required", []) if r != "type"]
    if not out["required"]:
        del out["required"]
    out.pop("title", None)
    return out


def scenario_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a scenario file: every field, both forms of every check."""
    schema = Scenario.model_json_schema(by_alias=True, mode="validation")
    defs: dict[str, Any] = schema.setdefault("$defs", {})
    shorthands: list[dict[str, Any]] = []
    for check_type, model in CHECK_MODELS.items():
        fields = _without_type(defs[model.__name__])
        main = SHORTHAND_FIELDS[check_type]
        value: dict[str, Any] = fields
        if main is not None:
            main_schema = dict(fields["properties"][main])
            options = [main_schema]
            if main in _LIST_FIELDS:
                options.append({"type": "string", "minLength": 1})
            if check_type != "json_schema":
                options.append(fields)
            value = {"anyOf": options} if len(options) > 1 else main_schema
        shorthands.append(
            {
                "type": "object",
                "title": f"{check_type} (shorthand)",
                "properties": {check_type: value},
                "required": [check_type],
                "additionalProperties": False,
            }
        )
    items = schema["properties"]["checks"]["items"]
    schema["properties"]["checks"]["items"] = {"anyOf": [items, *shorthands]}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **schema,
    }
