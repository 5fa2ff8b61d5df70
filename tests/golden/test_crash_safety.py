"""Issue 14: golden-set writes are one transaction: a kill at any file-system step, and writers at once.

Each write (promote, retire) is run in a forked child that is killed (``os._exit``, no clean-up) at its
n-th file-system step, for every n. Then the next command repairs the set (here ``GoldenSet.repair``,
which every write and ``scenarios lint`` do first): lint has no error, no temporary file is left, and
retrying the command gives the same set as an uninterrupted run. Before the intent is written a kill
leaves the old set plus temporary files; after it, a half-renamed set that the repair rolls forward.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from replaygate.replay import load_scenario

from replaygate.golden import GoldenSet, read_lock, retire
from replaygate.golden._goldenset import INTENT_NAME, STEP_HOOK
from tests.golden.test_lifecycle import TODAY, errors, make_set, scenario
from tests.golden.test_promote import promote

KILLED = 77


def _steps(op: Callable[[GoldenSet], object], gs: GoldenSet) -> list[str]:
    seen: list[str] = []
    token = STEP_HOOK.set(seen.append)
    try:
        op(gs)
    finally:
        STEP_HOOK.reset(token)
    return seen


def _killed_at(op: Callable[[GoldenSet], object], gs: GoldenSet, step: int) -> int:
    pid = os.fork()
    if pid == 0:  # the child: run the write, die without clean-up at its step-th file-system step
        count = [0]

        def hook(name: str) -> None:
            if count[0] == step:
                os._exit(KILLED)
            count[0] += 1

        STEP_HOOK.set(hook)
        try:
            op(gs)
        except BaseException:
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _snapshot(gs: GoldenSet) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(gs.path.iterdir()) if p.is_file()}


def _promote(gs: GoldenSet) -> object:
    return promote(gs)


def _retire(gs: GoldenSet) -> object:
    return retire(gs, "a-1", "replaced by a-2", author="alice", today=TODAY)


@pytest.mark.parametrize("op", [_promote, _retire], ids=["promote", "retire"])
def test_a_kill_at_every_step_is_repaired_by_the_next_command(
    tmp_path: Path, op: Callable[..., object]
) -> None:
    template = make_set(tmp_path / "template", scenario("a-1"), scenario("b-1"))
    reference = GoldenSet(tmp_path / "reference")
    shutil.copytree(template.path, reference.path)
    steps = _steps(op, reference)
    assert len(steps) >= 5  # temporary files, intent, renames, intent removed
    expected = _snapshot(reference)
    lint_before_repair = []
    for n in range(len(steps)):
        gs = GoldenSet(tmp_path / f"kill-{n}")
        shutil.copytree(template.path, gs.path)
        assert _killed_at(op, gs, n) == KILLED, f"not killed at step {n} ({steps[n]})"
        lint_before_repair.append(errors(gs) == [])
        gs.repair()  # what the next command does first
        assert errors(gs) == [], f"killed after {steps[n]!r}: lint fails after the repair"
        assert not gs.leftovers() and not (gs.path / INTENT_NAME).exists()
        op(gs)  # the retry finishes the job
        assert _snapshot(gs).keys() == expected.keys(), steps[n]
        lock = read_lock(gs.lock_path) or {}
        assert set(lock) == set(read_lock(reference.lock_path) or {}), steps[n]
        for name in expected:
            if name.endswith(".yaml"):
                assert load_scenario(gs.path / name).status == load_scenario(reference.path / name).status
    # Before the intent: the old set plus temporary files (lint flags them); after it, the repair is needed.
    assert not all(lint_before_repair)


ROUNDS = 10
_WRITER = textwrap.dedent(
    """
    import sys, time
    from replaygate.golden import GoldenSet, import_csv
    from tests.golden.test_promote import promote
    from tests.golden.test_lifecycle import TODAY
    role, base, arg = sys.argv[1], sys.argv[2], sys.argv[3]
    print("ready", flush=True)
    start = float(sys.stdin.readline())
    for r in range(int(sys.argv[4])):
        while time.time() < start + 0.3 * r:  # every writer starts round r at the same moment
            time.sleep(0.0005)
        gs = GoldenSet(f"{base}/round-{r}/golden")
        if role == "import":
            import_csv(arg, gs, author="carol", today=TODAY)
        else:
            promote(gs, scenario_id=arg)
    """
)


def test_concurrent_promote_promote_import_lose_no_lock_entry(tmp_path: Path) -> None:
    from tests.golden.test_csv_import import GOOD

    csv = tmp_path / "questions.csv"
    csv.write_text(GOOD, encoding="utf-8")
    root = Path(__file__).resolve().parents[2]
    sets = [make_set(tmp_path / f"round-{r}", scenario("a-1")) for r in range(ROUNDS)]
    jobs = [("promote", "refund-one-001"), ("promote", "refund-two-001"), ("import", str(csv))]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, role, str(tmp_path), arg, str(ROUNDS)],
            cwd=root,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for role, arg in jobs
    ]
    for p in procs:  # every writer has imported replaygate: now they start each round together
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    start = time.time() + 0.2
    outs = [p.communicate(f"{start}\n", timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outs
    assert time.time() > start + 0.3 * (ROUNDS - 1)  # the rounds really ran at the same moments
    for r, gs in enumerate(sets):
        lock = read_lock(gs.lock_path) or {}
        files = {f.stem for f in gs.files()}
        assert set(lock) == files, f"round {r}: lock {sorted(lock)} vs files {sorted(files)}"
        # the same trace promoted twice under two ids: one scenario (the second promote finds the first)
        assert {"a-1", "ship-1", "multi-1"} <= files and len(files) == 4, (r, sorted(files))
        assert errors(gs) == [] and not gs.leftovers()
