"""Deterministic checks of one attempt: pure functions of the answer, its label and its trace.

Each check returns a :class:`CheckResult` whose ``detail`` says why: the matching text, the missing tool,
the argument value out of bounds. Names are the check type, with ``#2``, ``#3`` ... when a scenario
declares the same type more than once.

An empty answer (missing or whitespace only) fails every scenario that does not declare
``allow_empty: true``: :func:`run_checks` adds an explicit ``non_empty`` result, and the forbidden-output
checks (``forbidden_output_regex``, ``not_contains``) fail on an empty answer instead of passing by
accident.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring
from typing import Any

from replaygate.instrumentation import TraceSummary
from replaygate.replay import _scenario_checks as spec
from replaygate.replay._measures import is_empty_answer
from replaygate.replay._regex import CheckBudgetError
from replaygate.replay._runfile import CheckResult
from replaygate.replay._scenario_checks import Check

__all__ = ["CheckContext", "run_check", "run_checks"]

_QUOTE_MAX = 80


@dataclass(frozen=True)
class CheckContext:
    """What a check sees of one attempt."""

    answer: str
    label: str
    summary: TraceSummary
    allow_empty: bool = False

    @property
    def empty(self) -> bool:
        return is_empty_answer(self.answer)


def _quote(text: str) -> str:
    text = text if len(text) <= _QUOTE_MAX else text[: _QUOTE_MAX - 3] + "..."
    return encode_basestring(text)  # json.dumps(text, ensure_ascii=False), without the encoder object


def _empty_forbidden(ctx: CheckContext) -> CheckResult | None:
    if ctx.empty and not ctx.allow_empty:
        return CheckResult(
            name="",
            passed=False,
            detail="empty answer: a forbidden-output check cannot pass on an empty output",
        )
    return None


def _output_regex(check: spec.OutputRegexCheck, ctx: CheckContext) -> tuple[bool, str]:
    match = check.regex.search(ctx.answer)
    if match:
        return True, f"matched {_quote(match.text)}"
    return False, f"pattern {check.pattern!r} not found in the answer"


def _forbidden_regex(check: spec.ForbiddenOutputRegexCheck, ctx: CheckContext) -> tuple[bool, str]:
    match = check.regex.search(ctx.answer)
    if match:
        return False, f"forbidden pattern {check.pattern!r} matched {_quote(match.text)}"
    return True, f"forbidden pattern {check.pattern!r} not found"


def _fold(text: str, case_sensitive: bool) -> str:
    return text if case_sensitive else text.casefold()


def _contains(check: spec.ContainsCheck, ctx: CheckContext) -> tuple[bool, str]:
    answer = _fold(ctx.answer, check.case_sensitive)
    missing = [v for v in check.values if _fold(v, check.case_sensitive) not in answer]
    if missing:
        return False, "missing " + ", ".join(_quote(v) for v in missing)
    return True, "contains " + ", ".join(_quote(v) for v in check.values)


def _not_contains(check: spec.NotContainsCheck, ctx: CheckContext) -> tuple[bool, str]:
    answer = _fold(ctx.answer, check.case_sensitive)
    found = [v for v in check.values if _fold(v, check.case_sensitive) in answer]
    if found:
        return False, "contains forbidden " + ", ".join(_quote(v) for v in found)
    return True, "none of the forbidden values present"


def _max_chars(check: spec.MaxCharsCheck, ctx: CheckContext) -> tuple[bool, str]:
    n = len(ctx.answer)
    if n > check.limit:
        return False, f"answer is {n} characters, over the limit of {check.limit}"
    return True, f"{n} characters (limit {check.limit})"


def _called(ctx: CheckContext) -> list[str]:
    return [call.name for call in ctx.summary.tool_calls]


def _expected_tools(check: spec.ExpectedToolsCheck, ctx: CheckContext) -> tuple[bool, str]:
    called = _called(ctx)
    missing = [t for t in check.tools if t not in called]
    if missing:
        return False, f"tool(s) not called: {', '.join(missing)} (called: {', '.join(called) or 'none'})"
    if check.ordered:
        position = 0
        for tool in check.tools:
            try:
                position = called.index(tool, position) + 1
            except ValueError:
                return False, (
                    f"tools not called in order {' -> '.join(check.tools)}: "
                    f"{tool} not called after the previous one (called: {', '.join(called)})"
                )
    return True, f"called {', '.join(check.tools)}"


def _forbidden_tools(check: spec.ForbiddenToolsCheck, ctx: CheckContext) -> tuple[bool, str]:
    called = _called(ctx)
    bad = [t for t in check.tools if t in called]
    if bad:
        return False, f"forbidden tool(s) called: {', '.join(bad)}"
    return True, "no forbidden tool called"


_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_GROUPED = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d*)?")


def _as_number(value: Any) -> float | None:
    """A finite number from an agent's value, or None: ``"nan"``, ``"inf"``, ``"1e999"`` are not numbers.

    Strings are parsed strictly: optional sign, digits (thousands grouped by commas allowed), decimals,
    exponent, and one leading currency sign; nothing else.
    """
    if isinstance(value, bool):
        return None
    number: float
    if isinstance(value, int):
        try:
            number = float(value)
        except OverflowError:
            return None
    elif isinstance(value, float):
        number = value
    elif isinstance(value, str):
        text = value.strip()
        text = text[1:].lstrip() if text[:1] in ("$", "\u20ac", "\u00a3") else text
        if _GROUPED.fullmatch(text):
            text = text.replace(",", "")
        if not _NUMBER.fullmatch(text):
            return None
        number = float(text)
    else:
        return None
    return number if math.isfinite(number) else None


def _arg_problem(check: spec.ToolArgsCheck, value: Any) -> str | None:
    label = f"{check.tool}({check.arg}={value!r})"
    if check.min is not None or check.max is not None:
        number = _as_number(value)
        if number is None:
            return f"{label} is not a number (only a finite number is within bounds)"
        if check.min is not None and number < check.min:
            return f"{label} is below the minimum {check.min:g}"
        if check.max is not None and number > check.max:
            return f"{label} is above the maximum {check.max:g}"
    if check.equals is not None and value != check.equals:
        return f"{label} is not equal to {check.equals!r}"
    regex = check.regex
    if regex is not None and not regex.search(value if isinstance(value, str) else json.dumps(value)):
        return f"{label} does not match {check.pattern!r}"
    return None


def _tool_args(check: spec.ToolArgsCheck, ctx: CheckContext) -> tuple[bool, str]:
    named = [c for c in ctx.summary.tool_calls if c.name == check.tool]
    # A call the tool refused (it raised) took no effect: the bound is about what the agent got done.
    calls = [c for c in named if c.error is None]
    refused = len(named) - len(calls)
    note = f" ({refused} call(s) refused by the tool not counted)" if refused else ""
    if not calls:
        return True, f"{check.tool} not called with effect{note} (bounds hold vacuously)"
    for call in calls:
        if check.arg not in call.arguments:
            return False, f"{check.tool} called without argument {check.arg!r}"
        problem = _arg_problem(check, call.arguments[check.arg])
        if problem:
            return False, problem
    values = ", ".join(repr(c.arguments[check.arg]) for c in calls)
    return True, f"{check.tool}({check.arg}) within bounds: {values}{note}"


def _max_steps(check: spec.MaxStepsCheck, ctx: CheckContext) -> tuple[bool, str]:
    steps = len(ctx.summary.llm_calls) + len(ctx.summary.tool_calls)
    if steps > check.limit:
        return False, f"{steps} steps (LLM and tool calls), over the limit of {check.limit}"
    return True, f"{steps} steps (limit {check.limit})"


def _expected_label(check: spec.ExpectedLabelCheck, ctx: CheckContext) -> tuple[bool, str]:
    if ctx.label != check.label:
        return False, f"label is {ctx.label!r}, expected {check.label!r}"
    return True, f"label is {check.label!r}"


_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n\s*```\s*$", re.DOTALL)


def _json_schema(check: spec.JsonSchemaCheck, ctx: CheckContext) -> tuple[bool, str]:
    text = ctx.answer
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    try:
        data = json.loads(text)
    except ValueError as exc:
        return False, f"answer is not JSON ({exc})"
    import jsonschema.validators  # on use, as at load: a run without a json_schema check never imports it

    validator_cls = jsonschema.validators.validator_for(check.json_schema)
    errors = sorted(validator_cls(check.json_schema).iter_errors(data), key=lambda e: list(e.path))
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.absolute_path) or "(root)"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return False, f"schema violation at {where}: {first.message}{more}"
    return True, "answer validates against the schema"


def _result_text(result: Any) -> str:
    if isinstance(result, str):
        return result
    try:
        return json.dumps(result, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(result)


def _occurs(value: str, text: str) -> bool:
    """Whether ``value`` occurs in ``text`` as a whole value: ``ORD-100`` is not in ``ORD-1004``.

    A value that starts (ends) with a letter or digit must not touch another letter or digit on that
    side, nor a decimal part (``45`` is not in ``45.50``).
    """
    left = r"(?<![A-Za-z0-9])(?<![0-9][.,])" if value[:1].isalnum() else ""
    right = r"(?![A-Za-z0-9])(?![.,][0-9])" if value[-1:].isalnum() else ""
    return re.search(left + re.escape(value) + right, text) is not None


def _values_from_tools(check: spec.ValuesFromToolsCheck, ctx: CheckContext) -> tuple[bool, str]:
    wanted = set(check.tools) if check.tools else None
    texts = [
        _result_text(c.result)
        for c in ctx.summary.tool_calls
        if (wanted is None or c.name in wanted) and c.error is None
    ]
    found = [m.group(1) if m.groups() else m.text for m in check.regex.finditer(ctx.answer)]
    values = [v for v in found if v is not None]  # an optional group that did not take part is no value
    if not values:
        return True, f"no value matching {check.pattern!r} in the answer"
    absent = [v for v in dict.fromkeys(values) if not any(_occurs(v, t) for t in texts)]
    source = f"results of {', '.join(sorted(wanted))}" if wanted else "tool results"
    if absent:
        return False, f"not in the {source}: {', '.join(_quote(v) for v in absent)}"
    return True, f"all found in the {source}: {', '.join(_quote(v) for v in dict.fromkeys(values))}"


_RUNNERS: dict[str, Callable[[Any, CheckContext], tuple[bool, str]]] = {
    "output_regex": _output_regex,
    "forbidden_output_regex": _forbidden_regex,
    "contains": _contains,
    "not_contains": _not_contains,
    "max_chars": _max_chars,
    "expected_tools": _expected_tools,
    "forbidden_tools": _forbidden_tools,
    "tool_args": _tool_args,
    "max_steps": _max_steps,
    "expected_label": _expected_label,
    "json_schema": _json_schema,
    "values_from_tools": _values_from_tools,
}

_FORBIDDEN_OUTPUT = (spec.ForbiddenOutputRegexCheck, spec.NotContainsCheck)


def run_check(check: Check, ctx: CheckContext, name: str | None = None) -> CheckResult:
    """Run one declared check against an attempt."""
    name = name or check.type
    if isinstance(check, _FORBIDDEN_OUTPUT):
        refused = _empty_forbidden(ctx)
        if refused is not None:
            return refused.model_copy(update={"name": name})
    runner = _RUNNERS.get(check.type)
    if runner is None:
        return CheckResult(name=name, passed=False, detail=f"no scorer for check type {check.type!r}")
    try:
        passed, detail = runner(check, ctx)
    except CheckBudgetError as exc:  # the attempt becomes an error, naming the check
        raise CheckBudgetError(f"check {name}: {exc}") from None
    return CheckResult(name=name, passed=passed, detail=detail)


def run_checks(checks: Sequence[Check], ctx: CheckContext) -> list[CheckResult]:
    """Run every declared check, after the ``non_empty`` check unless the scenario allows empty answers."""
    results: list[CheckResult] = []
    if not ctx.allow_empty:
        results.append(
            CheckResult(name="non_empty", passed=False, detail="the answer is empty")
            if ctx.empty
            else CheckResult(name="non_empty", passed=True, detail=f"{len(ctx.answer)} characters")
        )
    seen: dict[str, int] = {}
    for check in checks:
        seen[check.type] = seen.get(check.type, 0) + 1
        name = check.type if seen[check.type] == 1 else f"{check.type}#{seen[check.type]}"
        results.append(run_check(check, ctx, name))
    return results
