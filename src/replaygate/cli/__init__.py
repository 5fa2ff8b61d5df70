"""The ``replaygate`` command line.

Each area registers its commands from its own private module, so the parts can grow independently::

    replaygate traces | failures | promote | scenarios ...      (_traces.py, _scenarios.py)
    replaygate run | merge | fingerprint                      (_run.py)
    replaygate judge calibrate                                 (_judge.py)
    replaygate compare | gate | review | sign | drift           (_gate.py)
    replaygate canary ... | serve                               (_canary.py)

Exit codes: 0 success (gate: pass), 1 gate block or failing check, 2 needs sign-off or review,
3 usage or data error.
"""

from replaygate.cli._main import main

__all__ = ["main"]
