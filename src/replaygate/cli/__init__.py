"""The ``replaygate`` command line.

Each area registers its commands from its own private module, so the parts can grow independently::

    replaygate traces | failures | promote | scenarios ...      (_traces.py, _scenarios.py)
    replaygate run | merge | fingerprint                      (_run.py)
    replaygate judge calibrate                                 (_judge.py)
    replaygate compare | gate | review | sign | drift           (_gate.py)
    replaygate canary ... | serve                               (_canary.py)

Exit codes: 0 success (gate: pass), 1 gate block or failing check, 2 needs sign-off or review,
3 usage or data error.

From Python: ``main(argv)`` runs the command line, ``cli`` is its click group (``click.testing.CliRunner``
invokes it), ``COMMANDS`` maps each command to the module that registers it,
``versions()`` gives the three distributions' versions (``replaygate --version`` prints them), and
``refuse_other_report(folder, report_id)`` refuses a folder whose ``decision.json`` was signed for
another report.
"""

from typing import TYPE_CHECKING, Any

from replaygate.cli._main import COMMANDS, cli, main, versions

if TYPE_CHECKING:
    from replaygate.cli._outputs import refuse_other_report


def __getattr__(name: str) -> Any:
    if name == "refuse_other_report":  # loaded on use, so that ``replaygate --help`` stays light
        from replaygate.cli._outputs import refuse_other_report

        return refuse_other_report
    raise AttributeError(f"module 'replaygate.cli' has no attribute {name!r}")


__all__ = [
    "COMMANDS",
    "cli",
    "main",
    "refuse_other_report",
    "versions",
]
