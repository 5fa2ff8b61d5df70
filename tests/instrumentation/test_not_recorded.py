"""A traced call with nothing to record it says so once (fresh processes: the state is per process)."""

import subprocess
import sys
import textwrap

from replaygate.instrumentation._state import NOT_RECORDED

UNCONFIGURED = textwrap.dedent(
    """
    import replaygate.instrumentation as ri

    @ri.trace_agent(name="agent")
    def agent(message: str) -> str:
        with ri.tool_call("lookup"):
            return "ok " + message

    print(agent("one"), agent("two"), agent("three"))
    """
)

CONFIGURED = textwrap.dedent(
    """
    import sys
    import replaygate.instrumentation as ri

    ri.configure(store=sys.argv[1])

    @ri.trace_agent(name="agent")
    def agent(message: str) -> str:
        return "ok " + message

    print(agent("one"), agent("two"))
    ri.shutdown()
    """
)


def _run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=60, check=False
    )


def test_unconfigured_agent_warns_once_and_still_answers() -> None:
    proc = _run(UNCONFIGURED)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["ok", "one", "ok", "two", "ok", "three"]
    assert proc.stderr.count(NOT_RECORDED) == 1, proc.stderr
    assert "Traceback" not in proc.stderr


def test_configured_agent_gives_no_such_warning(tmp_path) -> None:
    proc = _run(CONFIGURED, str(tmp_path / "traces.db"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["ok", "one", "ok", "two"]
    assert "nothing records it" not in proc.stderr
    assert (tmp_path / "traces.db").exists()
