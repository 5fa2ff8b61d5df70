"""The export thread's fast paths give the same answers as the plain code they replace."""

import dataclasses
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from replaygate.instrumentation._frozen import fast_init
from replaygate.instrumentation._records import LlmCall, SpanRecord, TraceSummary
from replaygate.instrumentation._redaction import DEFAULT_PATTERNS, Redactor, may_hold_trigger

_TRIGGERS = [t for _, _, triggers in DEFAULT_PATTERNS for t in triggers]
_ANY = re.compile("|".join(re.escape(t) for t in _TRIGGERS))


@pytest.mark.parametrize("trigger", _TRIGGERS)
def test_every_default_trigger_passes_the_prefilter(trigger: str) -> None:
    assert may_hold_trigger(f"some text {trigger} more text")
    assert Redactor().may_change(["plain", f"a {trigger}b"])


_PIECES = st.sampled_from([*_TRIGGERS, "a", "b", "k", "-", "_", "g", "h", "A", "x", "o", " ", "é", "\n", "@"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=30).map("".join))
def test_prefilter_never_misses_what_the_trigger_search_finds(text: str) -> None:
    if _ANY.search(text) is not None:
        assert may_hold_trigger(text)


def test_prefilter_says_no_to_plain_text() -> None:
    assert not may_hold_trigger("Orders ship in 2 days. It ships tomorrow, thank you!")
    assert not Redactor().may_change(["lookup_order", '{"order_id":1}', "gpt-4o-mini"])


@fast_init
@dataclasses.dataclass(frozen=True)
class _Sample:
    a: int
    b: str = "x"
    c: list[int] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class _Plain:
    a: int
    b: str = "x"
    c: list[int] = dataclasses.field(default_factory=list)


def test_fast_init_builds_what_the_dataclass_init_builds() -> None:
    for args, kwargs in [((1,), {}), ((1, "y"), {}), ((), {"a": 2, "c": [3]}), ((4,), {"c": [1], "b": "z"})]:
        fast, plain = _Sample(*args, **kwargs), _Plain(*args, **kwargs)
        assert dataclasses.astuple(fast) == dataclasses.astuple(plain)
        assert repr(fast).removeprefix("_Sample") == repr(plain).removeprefix("_Plain")
    assert _Sample(1) == _Sample(1) and _Sample(1) != _Sample(2)
    call = LlmCall("gpt-4o-mini", "openai", 1, 2, 0.5)
    assert hash(call) == hash(LlmCall("gpt-4o-mini", "openai", 1, 2, 0.5)) and call.cost_usd is None
    assert _Sample(1).c is not _Sample(1).c  # a fresh default per instance
    with pytest.raises(dataclasses.FrozenInstanceError):
        _Sample(1).a = 2  # type: ignore[misc]
    assert dataclasses.replace(_Sample(1), b="q") == _Sample(1, "q")


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((), {}, "missing 1 required"),
        ((1, "b", [], 4), {}, "positional arguments"),
        ((1,), {"a": 2}, "multiple"),
    ],
)
def test_fast_init_refuses_what_the_dataclass_init_refuses(args: tuple, kwargs: dict, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        _Sample(*args, **kwargs)
    with pytest.raises(TypeError, match=message):
        _Plain(*args, **kwargs)
    with pytest.raises(TypeError, match="unexpected keyword"):
        _Sample(1, d=2)  # type: ignore[call-arg]


def test_fast_init_refuses_a_class_it_cannot_speed_up() -> None:
    @dataclasses.dataclass(frozen=True)
    class WithPost:
        a: int

        def __post_init__(self) -> None:
            pass

    with pytest.raises(TypeError, match="plain frozen dataclass"):
        fast_init(WithPost)


def test_records_keep_their_fields_and_immutability() -> None:
    record = SpanRecord("t" * 32, "s" * 16, None, "n", "llm", 1, 2, "ok", None, {"k": 1})
    assert record.events == () and record.attributes == {"k": 1}
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.name = "m"  # type: ignore[misc]
    names = [f.name for f in dataclasses.fields(TraceSummary)]
    assert names[:3] == ["trace_id", "session_id", "user_id"] and names[-1] == "retrieval_filtered"
