"""Per-attempt artifacts (final response, messages, spans as JSON), written best-effort.

:class:`ArtifactWriter` writes them from background threads so file creation never holds up the
runner; a failed write is logged and reported by :meth:`ArtifactWriter.close` (the runner then clears
that attempt's ``artifact_path``), and never fails the attempt.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from replaygate.instrumentation._records import SpanRecord

__all__ = ["ArtifactWriter", "artifact_file", "write_artifact"]

log = logging.getLogger("replaygate.replay")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def artifact_file(root: Path, scenario_id: str, index: int) -> Path:
    """Return where one attempt's artifact goes: ``<root>/<scenario id>/<index>.json``."""
    return root / _UNSAFE.sub("_", scenario_id) / f"{index}.json"


def _write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temporary file in the same directory, then rename)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_artifact(
    root: Path,
    scenario_id: str,
    index: int,
    *,
    answer: str | None,
    label: str | None,
    messages: Sequence[Any],
    spans: Sequence[SpanRecord],
    error: str | None,
    trace_id: str | None,
    made_dirs: set[Path] | None = None,
) -> str | None:
    """Write one attempt's artifact atomically; return its path, or None (logged) when the write failed."""
    path = artifact_file(root, scenario_id, index)
    doc = {
        "scenario_id": scenario_id,
        "index": index,
        "trace_id": trace_id,
        "answer": answer,
        "label": label,
        "error": error,
        "messages": list(messages),
        "spans": [dict(vars(s)) for s in spans],  # shallow: json encodes nested values
    }
    try:
        if made_dirs is None or path.parent not in made_dirs:
            path.parent.mkdir(parents=True, exist_ok=True)
            if made_dirs is not None:
                made_dirs.add(path.parent)
        _write_bytes(path, json.dumps(doc, ensure_ascii=False, default=str).encode("utf-8"))
    except Exception as exc:  # best-effort: never fail the attempt
        log.warning("could not write the artifact of %s#%d to %s: %s", scenario_id, index, path, exc)
        return None
    return str(path)


_STOP = object()


class ArtifactWriter:
    """Write artifacts from background threads; ``submit`` returns the path the artifact will have."""

    def __init__(self, root: Path, threads: int = 4) -> None:
        self.root = root
        self.failed: set[tuple[str, int]] = set()
        self._made_dirs: set[Path] = set()
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        # A few threads: creating a file is mostly waiting on the file system, so writes overlap.
        self._threads = [
            threading.Thread(target=self._run, name=f"replaygate-artifacts-{i}", daemon=True)
            for i in range(max(1, threads))
        ]
        for t in self._threads:
            t.start()

    def submit(
        self,
        scenario_id: str,
        index: int,
        *,
        answer: str | None,
        label: str | None,
        messages: Sequence[Any],
        spans: Sequence[SpanRecord],
        error: str | None,
        trace_id: str | None,
    ) -> str:
        kwargs = {
            "answer": answer,
            "label": label,
            "messages": messages,
            "spans": spans,
            "error": error,
            "trace_id": trace_id,
        }
        self._queue.put((scenario_id, index, kwargs))
        return str(artifact_file(self.root, scenario_id, index))

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            scenario_id, index, kwargs = item
            try:
                path = write_artifact(self.root, scenario_id, index, made_dirs=self._made_dirs, **kwargs)
            except Exception as exc:  # write_artifact logs its own failures; this is a bug guard
                log.warning("could not write the artifact of %s#%d: %s", scenario_id, index, exc)
                path = None
            if path is None:
                self.failed.add((scenario_id, index))

    def close(self) -> set[tuple[str, int]]:
        """Finish every queued write; return the (scenario id, index) pairs whose write failed."""
        for _ in self._threads:
            self._queue.put(_STOP)
        for t in self._threads:
            t.join()
        return set(self.failed)
