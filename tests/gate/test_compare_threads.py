"""The categories' statistics run on two threads: the same comparison, the same errors, no thread left.

``compare_runs`` tests the categories (and the guardrails and graded scores) on a second thread while it
tests the overall group, then on both (numpy releases the GIL, so two cores do them). Here ``_Shared`` is
swapped for one that computes each task in order on the caller's thread, the order the comparison was
made in before: everything must come out the same, and an error must be the one that order raises first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from replaygate.gate import Policy, _compare, compare_runs


class _OneThread:
    """``_Shared`` without a thread: the tasks run in order when their values are asked for, on the caller's
    thread, after the overall group (the order of the comparison made one step after the other)."""

    def __init__(self, tasks: Sequence[Callable[[], Any]], first: Sequence[int] = ()) -> None:
        self._tasks = tasks

    def stop(self) -> None:
        pass

    def values(self) -> list[Any]:
        return [task() for task in self._tasks]


_POLICY = Policy(n_resamples=500)


def _runs(f: Any) -> tuple[Any, Any, Any]:
    rng = np.random.default_rng(5)
    k = 6
    tags = lambda i: {"dimension": ("refunds", "booking", "login")[i % 3], "risk": "high" if i % 4 else "low"}  # noqa: E731
    base = f.run(rng.binomial(k, 0.9, 60).tolist(), run_id="b", k=k, tags=tags)
    head = f.run(rng.binomial(k, 0.8, 60).tolist(), run_id="h", k=k, tags=tags)
    noise = f.run(rng.binomial(k, 0.9, 60).tolist(), run_id="b2", k=k, tags=tags)
    return base, head, noise


def _gate_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "replaygate-gate"]


def test_the_comparison_is_the_one_made_on_one_thread(f, monkeypatch: pytest.MonkeyPatch) -> None:
    base, head, noise = _runs(f)
    ran_on: list[str] = []
    on_second = threading.Event()
    real = _compare._rate_group

    def recorded(name: str, *args: Any, **kwargs: Any) -> Any:
        ran_on.append(threading.current_thread().name)
        if threading.current_thread().name == "replaygate-gate":
            on_second.set()
        elif name == "overall":  # the second thread has taken a category before the overall group ends
            assert on_second.wait(10)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(_compare, "_rate_group", recorded)
    threaded = compare_runs(base, head, noise, _POLICY)
    assert "replaygate-gate" in ran_on and len(ran_on) == 6  # the overall group and five categories
    assert not _gate_threads()
    monkeypatch.setattr(_compare, "_Shared", _OneThread)
    one_thread = compare_runs(base, head, noise, _POLICY)
    assert threaded.model_dump() == one_thread.model_dump()
    names = [g.name for g in threaded.categories]
    assert len(names) == 5 and all(g.detectable_drop is not None for g in threaded.categories[:3])
    adjusted = [g.p_adjusted for g in threaded.categories]
    assert all(a is not None for a in adjusted) and adjusted != [g.p_value for g in threaded.categories]


def test_a_category_that_fails_fails_the_comparison(f, monkeypatch: pytest.MonkeyPatch) -> None:
    base, head, noise = _runs(f)
    real = _compare.minimum_detectable_drop  # the categories' (the overall group simulates its own)

    def failing(counts: Any, *args: Any, **kwargs: Any) -> Any:
        if len(counts) == 20:  # each dimension=... category (not the overall group, nor risk=...)
            raise ValueError("category simulation failed")
        return real(counts, *args, **kwargs)

    monkeypatch.setattr(_compare, "minimum_detectable_drop", failing)
    with pytest.raises(ValueError, match="category simulation failed"):
        compare_runs(base, head, noise, _POLICY)
    assert not _gate_threads()


def test_the_categories_error_comes_before_the_guardrails(f, monkeypatch: pytest.MonkeyPatch) -> None:
    base, head, noise = _runs(f)

    def failing_category(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("category first")

    def failing_guardrails(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("guardrails second")

    monkeypatch.setattr(_compare, "minimum_detectable_drop", failing_category)
    monkeypatch.setattr(_compare, "_guardrails", failing_guardrails)
    with pytest.raises(ValueError, match="category first"):
        compare_runs(base, head, noise, _POLICY)
    monkeypatch.setattr(_compare, "minimum_detectable_drop", lambda *a, **k: 0.05)
    with pytest.raises(RuntimeError, match="guardrails second"):
        compare_runs(base, head, noise, _POLICY)
    assert not _gate_threads()


def test_the_overall_groups_error_is_raised_once_the_thread_is_done(
    f, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, head, noise = _runs(f)
    started = threading.Event()
    real = _compare._rate_group

    def slow_category(name: str, *args: Any, **kwargs: Any) -> Any:
        started.set()
        return real(name, *args, **kwargs)

    def failing_overall(*args: Any, **kwargs: Any) -> Any:
        assert started.wait(10)
        raise ValueError("overall failed")

    monkeypatch.setattr(_compare, "_rate_group", slow_category)
    monkeypatch.setattr(_compare, "minimum_detectable_drops", failing_overall)
    with pytest.raises(ValueError, match="overall failed"):
        compare_runs(base, head, noise, _POLICY)
    assert not _gate_threads()


def test_ctrl_c_in_a_category_stops_the_work_at_once(f, monkeypatch: pytest.MonkeyPatch) -> None:
    base, head, noise = _runs(f)
    real_rate, real_graded = _compare._rate_group, _compare._graded
    main_took = threading.Event()
    after: list[str] = []  # what the caller's thread did after its Ctrl-C

    def interrupted(name: str, *args: Any, **kwargs: Any) -> Any:
        if threading.current_thread().name == "replaygate-gate":
            assert main_took.wait(10)  # holds the second thread's first category: the caller takes one
        elif name != "overall":
            if main_took.is_set():
                after.append(name)
            main_took.set()
            raise KeyboardInterrupt
        return real_rate(name, *args, **kwargs)

    def graded(*args: Any, **kwargs: Any) -> Any:
        if threading.current_thread() is threading.main_thread():
            after.append("graded")
        return real_graded(*args, **kwargs)

    monkeypatch.setattr(_compare, "_rate_group", interrupted)
    monkeypatch.setattr(_compare, "_graded", graded)
    with pytest.raises(KeyboardInterrupt):
        compare_runs(base, head, noise, _POLICY)
    assert main_took.is_set() and after == []
    assert not _gate_threads()
