"""The scheduled automatic check: a daemon thread per app that runs ``check`` every few seconds.

The check (and its automatic rollback on a breach) never runs on a page view: a GET changes nothing.
Several workers (gunicorn) each run one; the canary's optimistic concurrency makes that safe, and a
rollback is idempotent. A failing check is logged, and the thread keeps going.
"""

from __future__ import annotations

import logging
import threading

from flask import Flask

from replaygate.web._context import controller

__all__ = ["start_scheduled_checks"]

_log = logging.getLogger("replaygate.web.scheduler")


def start_scheduled_checks(app: Flask, interval_s: float) -> threading.Thread:
    """Start the thread (it stops with the process)."""
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(interval_s):
            try:
                with app.app_context():
                    result = controller().check(actor="release page (scheduled check)")
                if result.rollback is not None and result.rollback.changed:
                    _log.warning("replaygate: automatic rollback: %s", result.rollback.reason)
            except Exception:  # noqa: BLE001 - keep checking; the next look may succeed
                _log.exception("replaygate: the scheduled canary check failed")

    thread = threading.Thread(target=run, name="replaygate-canary-check", daemon=True)
    thread.start()
    app.extensions["replaygate.scheduler"] = stop
    return thread
