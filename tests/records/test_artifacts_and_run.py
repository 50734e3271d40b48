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


def test_runs_made_before_a_config_field_existed_resume_with_the_value_they_used(tmp_path: Path) -> None:
    """A config.json written before ``metrics_version`` existed means version 1: resuming pins it, and
    Run.create sees the pinned config as the stored one (never as a different config)."""
    from pydantic import BaseModel

    from rsi_workbench.records import Run, RunError, pin_config_additions, same_config

    class Inner(BaseModel):
        metrics_version: int = 2
        k: int = 0

    class Outer(BaseModel):
        protocol: Inner = Inner()
        metrics_version: int = 2
        name: str = "x"

    old = {"protocol": {"k": 3}, "name": "x"}  # as recorded before the field existed
    pinned = pin_config_additions(old, Outer)
    assert pinned == {"protocol": {"k": 3, "metrics_version": 1}, "name": "x", "metrics_version": 1}
    cfg = Outer.model_validate(pinned)
    assert cfg.metrics_version == 1 and cfg.protocol.metrics_version == 1
    assert same_config(old, cfg.model_dump(mode="json"))
    assert not same_config(old, Outer.model_validate(old).model_dump(mode="json"))  # v2 is another config
    Run.create(tmp_path / "r", old)
    Run.create(tmp_path / "r", cfg, exist_ok=True)  # the same run
    with pytest.raises(RunError, match="different config"):
        Run.create(tmp_path / "r", Outer.model_validate(old), exist_ok=True)
