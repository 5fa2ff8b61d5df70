"""Issue 19: the stat-keyed cache of scenario files' hashes (``.replaygate/cache/``, never the lock).

A file whose stat is the one remembered is not read again; any stat change, a fresh ("racy") file and a
damaged cache all fall back to hashing the bytes, so the index is never trusted for a changed file.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path

import pytest
from replaygate.replay import Scenario

import replaygate.golden._index as index_module
from replaygate.golden import GoldenSet
from replaygate.golden._hash_cache import HASH_CACHE_ENV, FileHashCache

_OLD_NS = 1_700_000_000 * 10**9  # a modification time long past (the file is not "racy")


def _scenario(i: int) -> Scenario:
    return Scenario.model_validate(
        {
            "id": f"s-{i:03d}",
            "title": f"scenario {i}",
            "owner": "qa",
            "origin": "production-incident",
            "source_trace": f"{i:032x}",
            "added": dt.date(2026, 11, 29),
            "turns": [f"question {i}"],
            "checks": [{"type": "contains", "values": ["refund"]}],
        }
    )


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(HASH_CACHE_ENV, str(folder))
    return folder


@pytest.fixture
def golden(tmp_path: Path, cache_dir: Path) -> GoldenSet:
    gs = GoldenSet(tmp_path / "golden")
    gs.write([_scenario(i) for i in range(6)])
    for f in gs.files():
        os.utime(f, ns=(_OLD_NS, _OLD_NS))
    time.sleep(0.01)
    return gs


def _count_hashes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = index_module.file_hash

    def counting(data: bytes) -> str:
        calls.append(len(data))
        return real(data)

    monkeypatch.setattr(index_module, "file_hash", counting)
    return calls


def _cache_file(golden: GoldenSet) -> Path:
    path = FileHashCache.for_set(golden.path).path
    assert path is not None
    return path


def test_a_warm_cache_hashes_nothing_and_lives_outside_the_lock(
    golden: GoldenSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    lock_before = golden.lock_path.read_bytes()
    monkeypatch.setattr(time, "time_ns", lambda: os.stat(golden.lock_path).st_ctime_ns + 3 * 10**9)
    hashes = _count_hashes(monkeypatch)
    first = golden.index()
    assert len(first) == 6 and len(hashes) == 6  # cold: every file read and hashed
    assert _cache_file(golden).is_file() and golden.lock_path.read_bytes() == lock_before
    assert ".replaygate" not in golden.lock_path.read_text() and "cache" not in golden.lock_path.read_text()
    hashes.clear()
    assert golden.index() == first
    assert hashes == []  # warm: the stat decided, no file read


def test_any_stat_change_hashes_the_file_again(golden: GoldenSet, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time_ns", lambda: os.stat(golden.lock_path).st_ctime_ns + 3 * 10**9)
    golden.index()
    target = golden.path / "s-002.yaml"
    text = target.read_text(encoding="utf-8")
    edited = text.replace("question 2", "question 9")  # the same size, another content
    assert len(edited) == len(text)
    target.write_text(edited, encoding="utf-8")
    os.utime(target, ns=(_OLD_NS, _OLD_NS))  # even with the old mtime back: ctime differs
    hashes = _count_hashes(monkeypatch)
    index = golden.index()
    assert target not in index and len(index) == 5  # the edited file is no longer the one indexed
    assert hashes == [len(edited.encode())]


def test_a_fresh_file_is_not_remembered(golden: GoldenSet, monkeypatch: pytest.MonkeyPatch) -> None:
    hashes = _count_hashes(monkeypatch)
    golden.index()  # the files' ctime is now: within the racy window
    assert len(hashes) == 6
    hashes.clear()
    golden.index()
    assert len(hashes) == 6  # hashed again: a same-tick write could have kept the stat


@pytest.mark.parametrize("damage", [b"", b"{not json", b'{"format": "other", "files": {}}', b"[1, 2]"])
def test_a_damaged_cache_is_ignored_and_rewritten(
    golden: GoldenSet, monkeypatch: pytest.MonkeyPatch, damage: bytes
) -> None:
    monkeypatch.setattr(time, "time_ns", lambda: os.stat(golden.lock_path).st_ctime_ns + 3 * 10**9)
    want = golden.index()
    cache = _cache_file(golden)
    cache.write_bytes(damage)
    hashes = _count_hashes(monkeypatch)
    assert golden.index() == want and len(hashes) == 6
    assert cache.read_bytes() != damage
    hashes.clear()
    assert golden.index() == want and hashes == []


def test_a_wrong_hash_in_the_cache_is_believed_only_with_the_same_stat(
    golden: GoldenSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache is keyed by the stat: forging an entry with another stat changes nothing."""
    monkeypatch.setattr(time, "time_ns", lambda: os.stat(golden.lock_path).st_ctime_ns + 3 * 10**9)
    golden.index()
    cache = _cache_file(golden)
    text = cache.read_text(encoding="utf-8").replace('"s-001.yaml":[', '"s-001.yaml":[1,')
    cache.write_text(text, encoding="utf-8")  # a fifth, shifted field: an entry of another shape
    assert len(golden.index()) == 6


def test_off_writes_no_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(HASH_CACHE_ENV, "off")
    gs = GoldenSet(tmp_path / "golden")
    gs.write([_scenario(0)])
    assert FileHashCache.for_set(gs.path).path is None
    assert len(gs.index()) == 1
    assert not (tmp_path / ".replaygate").exists()


def test_the_default_cache_is_below_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(HASH_CACHE_ENV)
    gs = GoldenSet(tmp_path / "golden")
    gs.write([_scenario(0)])
    for f in gs.files():
        os.utime(f, ns=(_OLD_NS, _OLD_NS))
    monkeypatch.setattr(time, "time_ns", lambda: os.stat(gs.lock_path).st_ctime_ns + 3 * 10**9)
    assert len(gs.index()) == 1
    (made,) = (tmp_path / ".replaygate" / "cache").glob("golden-hashes-v1-*.json")
    assert '"s-000.yaml"' in made.read_text(encoding="utf-8")
