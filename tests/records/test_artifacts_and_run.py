"""Artifacts are content-addressed and verified; runs re-open, lock and refuse mixed configs."""

from __future__ import annotations

from pathlib import Path

import pytest

from rsi_workbench.records import ArtifactCorrupted, ArtifactMissing, ArtifactStore, Run, RunError, RunLocked
from rsi_workbench.records.events import EventPayload


def test_flipped_byte_is_caught_on_load(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    sha = store.put(b"checkpoint bytes " * 100, name="ckpt.pt")
    assert store.get(sha).startswith(b"checkpoint")
    p = store.path(sha)
    data = bytearray(p.read_bytes())
    data[17] ^= 0x01
    p.write_bytes(bytes(data))
    with pytest.raises(ArtifactCorrupted, match=sha):
        store.get(sha)
    assert store.verify_all() == {sha: False}


def test_artifacts_dedupe_and_missing(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    a = store.put_json({"x": [1, 2]}, name="a")
    assert store.put_json({"x": [1, 2]}, name="b") == a
    assert store.get_json(a) == {"x": [1, 2]}
    assert store.meta(a)["media_type"] == "application/json"
    with pytest.raises(ArtifactMissing):
        store.get("0" * 64)


class Ping(EventPayload):
    kind = "ping"
    n: int
    note: str = ""


def test_typed_events_and_resume(tmp_path: Path) -> None:
    run = Run.create(tmp_path / "r", {"seed": 1})
    run.append(Ping(n=3), cycle=0)
    run.close()
    with pytest.raises(RunError, match="already exists"):
        Run.create(tmp_path / "r", {"seed": 1})
    with pytest.raises(RunError, match="different config"):
        Run.create(tmp_path / "r", {"seed": 2}, exist_ok=True)
    run = Run.create(tmp_path / "r", {"seed": 1}, exist_ok=True)
    ev = run.append(Ping(n=4), cycle=1)
    assert ev.seq == 1
    assert [Ping.from_event(e).n for e in run.events("ping")] == [3, 4]
    run.close()


def test_single_writer_lock(tmp_path: Path) -> None:
    run = Run.create(tmp_path / "r", {}, exclusive=True)
    with pytest.raises(RunLocked):
        Run.open(tmp_path / "r", mode="a", exclusive=True)
    run.close()
    Run.open(tmp_path / "r", mode="a", exclusive=True).close()


def test_not_a_run(tmp_path: Path) -> None:
    with pytest.raises(RunError, match="not a run directory"):
        Run.open(tmp_path)
