"""Issue 14: the classes of bad input through the ``replaygate`` command: exit 3, file named, no traceback.

Each case runs through ``replaygate.cli.main`` (what the console script calls) and must exit 3, print
``error: ...`` naming the file (or store) at fault, and print no ``Traceback``. A handful also run as
real ``replaygate`` processes (a full disk needs one: a file-size limit makes writes fail with EFBIG).
``--debug`` shows the traceback.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from replaygate.replay import save_run

from replaygate.cli import main
from tests.gate.conftest import make_run

ROOT = Path(__file__).resolve().parents[1]
REPLAYGATE = str(Path(sys.executable).parent / "replaygate")

SCENARIO = """id: {id}
title: t
owner: qa
origin: original-eval
added: {added}
turns: [hello]
repeats: 1
checks:
  - {{type: tool_args, tool: refund, arg: amount, max: {max}}}
"""


def target(turns: list[str], context: dict[str, Any], config: dict[str, Any], **_: Any) -> str:
    """A target for the ``run`` cases."""
    return "hello " * 2000


def _golden(tmp: Path, name: str, text: str) -> Path:
    d = tmp / name
    d.mkdir()
    (d / (text.split("\n", 1)[0].removeprefix("id: ") + ".yaml")).write_text(text, encoding="utf-8")
    return d


def _limit_file_size() -> None:  # a "full disk": writes past 64 KiB fail with EFBIG
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64_000, 64_000))


def _cases(tmp_path: Path) -> dict[str, tuple[list[str], str, Any]]:
    policy = tmp_path / "policy.yaml"
    policy.write_text("format_version: 1\nalpha: 0.05\n", encoding="utf-8")
    base, head = tmp_path / "base.json", tmp_path / "head.json"
    save_run(make_run([5, 5, 5], run_id="b"), base)
    save_run(make_run([5, 5, 5], run_id="h"), head)
    bad: dict[str, Path] = {}

    def file(name: str, data: bytes | str) -> str:
        p = tmp_path / name
        p.write_bytes(data.encode() if isinstance(data, str) else data)
        bad[name] = p
        return str(p)

    good = SCENARIO.format(id="s-1", added="2026-11-29", max=200)
    golden_ok = _golden(tmp_path, "golden-ok", good)
    config = file("config.yaml", "name: test\n")
    run = ["run", "--target", "tests.test_cli_bad_input:target", "--config", config, "--quiet"]
    gate = ["gate", "--policy", str(policy), "--baseline", str(base), "--candidate", str(head)]
    existing = file("existing.json", base.read_bytes())
    garbage_decision = tmp_path / "rep-garbage"
    garbage_decision.mkdir()
    (garbage_decision / "decision.json").write_bytes(b"\x00\xffnot json")
    journal_dir = tmp_path / "resume"
    journal_dir.mkdir()
    (journal_dir / "r.json.journal").write_bytes(
        b'{"kind":"header","run_id":"r"}\n' + b"[" * 100_000 + b"\n\n"
    )
    cases: dict[str, tuple[list[str], str, Any]] = {
        "impossible date": (
            [
                *run,
                "--golden",
                str(_golden(tmp_path, "g-date", SCENARIO.format(id="d-1", added="2026-02-30", max=1))),
            ],
            "d-1.yaml:5",
            None,
        ),
        "tool_args max .nan": (
            [
                *run,
                "--golden",
                str(_golden(tmp_path, "g-nan", SCENARIO.format(id="n-1", added="2026-11-29", max=".nan"))),
            ],
            "n-1.yaml",
            None,
        ),
        "yaml alias bomb": (
            [
                *run,
                "--golden",
                str(_golden(tmp_path, "g-alias", good + "context: {a: &a [x, x], b: [*a, *a]}\n")),
            ],
            "s-1.yaml",
            None,
        ),
        "non-utf8 policy": (
            ["gate", "--policy", file("p1.yaml", b"alpha: \xff\n"), *gate[3:]],
            "p1.yaml",
            None,
        ),
        "deep policy": (
            ["gate", "--policy", file("p2.yaml", "a: " + "[" * 3000 + "]" * 3000), *gate[3:]],
            "p2.yaml",
            None,
        ),
        "policy format_version 99": (
            ["gate", "--policy", file("p3.yaml", "format_version: 99\n"), *gate[3:]],
            "p3.yaml",
            None,
        ),
        "policy nan tolerance": (
            ["gate", "--policy", file("p4.yaml", "tolerance: {metrics: {judge:g: .nan}}\n"), *gate[3:]],
            "p4.yaml",
            None,
        ),
        "deep run file": (
            [*gate[:5], "--candidate", file("deep.json", '{"a":' * 5000 + "1" + "}" * 5000)],
            "deep.json",
            None,
        ),
        "missing run file": ([*gate[:5], "--candidate", str(tmp_path / "nope.json")], "nope.json", None),
        "deep journal": (
            [*run, "--golden", str(golden_ok), "--out", str(journal_dir / "r.json"), "--resume"],
            "r.json.journal",
            None,
        ),
        "oversized csv cell": (
            [
                "import-csv",
                file("q.csv", "id,title,owner,question\nq-1,t,qa," + "x" * 1_100_000 + "\n"),
                "--golden",
                str(tmp_path / "g-csv"),
            ],
            "q.csv",
            None,
        ),
        "garbage decision.json": ([*gate, "--out", str(garbage_decision)], "decision.json", None),
        "store not sqlite": (
            ["canary", "decisions", "--store", file("store.db", b"not a database" * 100)],
            "store.db",
            None,
        ),
        "postgres without driver": (
            ["canary", "decisions", "--store", "postgresql://u@127.0.0.1:1/db"],
            "postgresql://u@127.0.0.1:1/db",
            None,
        ),
        "run --out over a run file": (
            [*run, "--golden", str(golden_ok), "--out", existing],
            "existing.json",
            None,
        ),
        "merge over its input": (["merge", existing, existing], "existing.json", None),
        "garbage report": (
            ["sign", file("report.json", "{]"), "--by", "a", "--outcome", "block", "--reason", "r"],
            "report.json",
            None,
        ),
        "full disk during run": (
            [
                *run,
                "--golden",
                str(golden_ok),
                "--repeats",
                "50",
                "--out",
                str(tmp_path / "full" / "run.json"),
            ],
            "run.json",
            _limit_file_size,
        ),
    }
    return cases


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, tuple[list[str], str, Any]]]:
    tmp = tmp_path_factory.mktemp("bad")
    return tmp, _cases(tmp)


CASES = [
    "impossible date",
    "tool_args max .nan",
    "yaml alias bomb",
    "non-utf8 policy",
    "deep policy",
    "policy format_version 99",
    "policy nan tolerance",
    "deep run file",
    "missing run file",
    "deep journal",
    "oversized csv cell",
    "garbage decision.json",
    "store not sqlite",
    "postgres without driver",
    "run --out over a run file",
    "merge over its input",
    "garbage report",
]
IN_PROCESS_ONLY: set[str] = set()


@pytest.mark.parametrize("name", CASES)
def test_bad_input_exits_3_naming_the_file(
    cases: tuple[Path, dict[str, tuple[list[str], str, Any]]],
    name: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tmp, table = cases
    argv, named, _ = table[name]
    monkeypatch.chdir(tmp)
    monkeypatch.setenv("REPLAYGATE_STORE", str(tmp / "rg.db"))
    monkeypatch.delenv("REPLAYGATE_DEBUG", raising=False)
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    out, err = capsys.readouterr()
    assert exit_.value.code == 3, err
    assert "Traceback" not in out + err and err.startswith("error: ") and named in err, err


@pytest.mark.timeout(300)
def test_the_real_command_exits_3_naming_the_file(
    cases: tuple[Path, dict[str, tuple[list[str], str, Any]]],
) -> None:
    tmp, table = cases
    env = {**os.environ, "PYTHONPATH": str(ROOT), "REPLAYGATE_STORE": str(tmp / "rg.db")}
    env.pop("REPLAYGATE_DEBUG", None)
    wrong = []
    for name in ("full disk during run", "deep policy", "postgres without driver", "merge over its input"):
        argv, named, pre = table[name]
        proc = subprocess.run(
            [REPLAYGATE, *argv],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
            preexec_fn=pre,
            timeout=240,
            check=False,
        )
        out, err = proc.stdout, proc.stderr
        if proc.returncode != 3 or "Traceback" in out + err or named not in err or "error: " not in err:
            wrong.append(f"{name}: exit {proc.returncode}, expected {named!r} named:\n{err[-800:]}")
    assert not wrong, "\n\n".join(wrong)
    assert json.loads((tmp / "existing.json").read_text(encoding="utf-8"))["run_id"] == "b"  # not overwritten


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    done = subprocess.run(
        [REPLAYGATE, "--debug", "canary", "decisions", "--store", "postgresql://u@127.0.0.1:1/db"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 3 and "Traceback" in done.stderr and "error: " in done.stderr


def test_debug_shows_the_traceback_of_a_data_error_too(tmp_path: Path) -> None:
    """A data error the gate turns into its one-line message (exit 3) keeps its traceback for --debug."""
    truncated = tmp_path / "candidate.json"
    truncated.write_text('{\n  "format_version": 1,\n  "run_id": "r', encoding="utf-8")
    args = ["gate", "--policy", "examples/gate-policy.yaml", "--baseline", str(truncated), "--candidate",
            str(truncated), "--out", str(tmp_path / "report")]  # fmt: skip
    root = Path(__file__).resolve().parents[1]
    for debug in (False, True):
        done = subprocess.run(
            [REPLAYGATE, *(["--debug"] if debug else []), *args],
            capture_output=True, text=True, timeout=120, check=False, cwd=root,
        )  # fmt: skip
        assert done.returncode == 3 and f"error: {truncated}:3: not valid JSON" in done.stderr, done.stderr
        assert ("Traceback" in done.stderr) is debug, done.stderr
        assert ("RunFileError" in done.stderr) is debug
