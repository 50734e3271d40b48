"""Compacted runs (events.jsonl.gz, encoded artifacts): every reader reads them as before, a writer
expands them before appending, and a kill at any step of a compaction loses nothing."""

from __future__ import annotations

import gzip
import os
import random
import shutil
import struct
from pathlib import Path

import pytest

from rsi_workbench import cli
from rsi_workbench.records import (
    ArtifactCorrupted,
    EventLog,
    Run,
    compact_run,
    has_events,
    iter_events,
    list_runs,
    load_events,
    log_size,
    open_log,
    query,
    read_log,
)
from rsi_workbench.records.artifacts import decode_blob, encode_blob
from rsi_workbench.records.compact import Twins, compact_log


def _floats(seed: int, n: int = 4000) -> bytes:
    rng = random.Random(seed)
    return struct.pack(f"<{n}d", *(rng.uniform(-1, 1) for _ in range(n)))


def _make_run(path: Path, n: int = 30, seed: int = 0) -> tuple[list[str], dict[str, bytes]]:
    """A finished run: n events with candidate lists, one large float blob, one small JSON blob."""
    arts: dict[str, bytes] = {}
    with Run.create(path, {"seed": seed}, kind="test") as run:
        for i in range(n):
            run.append(
                "proposal", {"i": i, "candidates": [{"index": j, "score": j / 7} for j in range(5)]}, cycle=i
            )
        for data, name in ((_floats(seed), "predictor-v0"), (b'{"a":1}', "policy-v0")):
            arts[run.put_artifact(data, name=name, kind="checkpoint")] = data
        run.commit()
    return [e.to_json() for e in Run.open(path).events()], arts


def test_compacted_run_reads_the_same_everywhere(tmp_path: Path) -> None:
    events, arts = _make_run(tmp_path / "runs" / "a")
    _make_run(tmp_path / "runs" / "b", seed=1)  # stays plain: old runs read as before
    before = load_events(tmp_path / "runs" / "a")
    metas = {sha: Run.open(tmp_path / "runs" / "a").artifacts.meta(sha) for sha in arts}
    sql = "SELECT run, count(*) AS n FROM events GROUP BY run ORDER BY run"
    q_before = query(sql, tmp_path / "runs")

    res = compact_run(tmp_path / "runs" / "a")
    a = tmp_path / "runs" / "a"
    assert res.skipped is None and res.log_after < res.log_before and res.artifacts == 2
    assert not (a / "events.jsonl").exists() and (a / "events.jsonl.gz").exists()
    assert sorted(p.name for p in (a / "artifacts").iterdir() if not p.name.endswith(".z")) == ["index.json"]

    run = Run.open(a)
    assert [e.to_json() for e in run.events()] == events
    assert load_events(a).equals(before)
    assert query(sql, tmp_path / "runs").equals(q_before)
    assert list_runs(tmp_path / "runs") == [a, tmp_path / "runs" / "b"] and has_events(a)
    assert sorted(run.artifacts.list()) == sorted(arts)
    for sha, data in arts.items():
        assert run.get_artifact(sha) == data and run.artifacts.meta(sha) == metas[sha]
    assert log_size(a / "events.jsonl") == read_log(a / "events.jsonl").valid_bytes
    with open_log(a / "events.jsonl") as f:
        assert f.readline().decode().rstrip("\n") == events[0]
    again = compact_run(a)  # idempotent
    assert again.artifacts == 0 and [e.to_json() for e in Run.open(a).events()] == events


def test_blob_encoding_is_lossless_and_shrinks_float64_tensors() -> None:
    for data in (b"", b"x", b"0123456789abcdefg", _floats(3, 1001), os.urandom(333)):
        assert decode_blob(encode_blob(data)) == data
    assert len(encode_blob(_floats(3))) < 0.9 * len(_floats(3))


def test_resume_appends_to_a_compacted_run(tmp_path: Path) -> None:
    events, arts = _make_run(tmp_path / "r")
    compact_run(tmp_path / "r")
    with Run.open(tmp_path / "r", mode="a") as run:  # resume / --extend: expanded first
        ev = run.append("cycle_finished", {"k": 99})
        new = run.put_artifact(b"new blob", name="later")
        run.put_artifact(next(iter(arts.values())))  # already stored (compacted): not written again
    assert ev.seq == len(events)
    assert (tmp_path / "r" / "events.jsonl").exists() and not (tmp_path / "r" / "events.jsonl.gz").exists()
    compact_run(tmp_path / "r")
    run = Run.open(tmp_path / "r")
    assert [e.to_json() for e in run.events()][:-1] == events and run.events()[-1].payload == {"k": 99}
    assert run.get_artifact(new) == b"new blob" and set(run.artifacts.list()) == {*arts, new}


def test_a_writer_open_during_compaction_loses_nothing(tmp_path: Path) -> None:
    events, _ = _make_run(tmp_path / "r")
    log = EventLog(tmp_path / "r" / "events.jsonl")  # a writer that opened the log before compaction
    compact_run(tmp_path / "r")
    ev = log.append("late", {"x": 1})
    log.close()
    assert ev.seq == len(events)
    assert [e.kind for e in iter_events(tmp_path / "r" / "events.jsonl")][-1] == "late"
    assert not (tmp_path / "r" / "events.jsonl.gz").exists()


def test_a_kill_at_any_step_of_compaction_loses_nothing(tmp_path: Path) -> None:
    """The states a kill can leave: a half-written temp file; both copies (compaction killed before its
    unlink, or expansion killed before its unlink); a compressed copy that cannot be read."""
    events, arts = _make_run(tmp_path / "r")
    d = tmp_path / "r"
    log = d / "events.jsonl"
    plain = log.read_bytes()
    # 1. killed while writing the compressed temp file
    (d / f".events.jsonl.gz.{os.getpid() + 1}.tmp").write_bytes(gzip.compress(plain)[:50])
    assert [e.to_json() for e in Run.open(d).events()] == events
    # 2. killed after the rename, before the plain file was removed: both complete
    (d / "events.jsonl.gz").write_bytes(gzip.compress(plain))
    assert [e.to_json() for e in Run.open(d).events()] == events
    # 3. a compressed copy that cannot be read: the plain one is read
    (d / "events.jsonl.gz").write_bytes(gzip.compress(plain)[:-20])
    assert [e.to_json() for e in Run.open(d).events()] == events
    # 4. a plain file that lost its tail beside a complete compressed copy: the complete one wins
    (d / "events.jsonl.gz").write_bytes(gzip.compress(plain))
    log.write_bytes(plain[: len(plain) // 2])
    assert [e.to_json() for e in Run.open(d).events()] == events
    log.write_bytes(plain)
    # artifacts: encoded copies written, index not yet, loose files still there
    store = Run.open(d).artifacts
    for sha, data in arts.items():
        store.packed_path(sha).write_bytes(encode_blob(data))
    assert all(store.get(sha) == data for sha, data in arts.items())
    compact_run(d)  # the next compaction finishes the job and cleans the leftovers
    assert sorted(p.name for p in d.iterdir() if p.is_file()) == [
        "config.json",
        "events.jsonl.gz",
        "events.jsonl.lock",
        "manifest.json",
    ]
    run = Run.open(d)
    assert [e.to_json() for e in run.events()] == events
    assert all(run.get_artifact(sha) == data for sha, data in arts.items())
    # an expansion killed before removing the compressed copy: a writer resolves it and appends once
    (d / "events.jsonl").write_bytes(plain)
    with Run.open(d, mode="a") as w:
        assert w.append("after", {}).seq == len(events)
    assert not (d / "events.jsonl.gz").exists() and len(Run.open(d).events()) == len(events) + 1


def test_corrupted_compacted_artifact_fails_loudly(tmp_path: Path) -> None:
    _, arts = _make_run(tmp_path / "r")
    compact_run(tmp_path / "r")
    store = Run.open(tmp_path / "r").artifacts
    big = max(arts, key=lambda s: len(arts[s]))
    p = store.packed_path(big)
    blob = bytearray(p.read_bytes())
    blob[-10] ^= 0xFF
    p.unlink()  # break the hard-link-free file only
    p.write_bytes(bytes(blob))
    with pytest.raises(ArtifactCorrupted):
        store.get(big)


def test_runs_compact_command_on_an_experiment_tree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Recursively: the experiment run and its sub-runs; identical blobs in two runs become one file."""
    exp = tmp_path / "exp"
    _make_run(exp)
    ev_a, arts = _make_run(exp / "runs" / "g" / "m1-seed1", seed=1)
    _make_run(exp / "runs" / "g" / "m2-seed1", seed=1)  # the same prior checkpoint as m1-seed1
    assert cli.main(["runs", "compact", str(exp)]) == 0
    assert "compacted 3 run(s)" in capsys.readouterr().out
    big = max(arts, key=lambda s: len(arts[s]))
    p1 = exp / "runs" / "g" / "m1-seed1" / "artifacts" / f"{big}.z"
    p2 = exp / "runs" / "g" / "m2-seed1" / "artifacts" / f"{big}.z"
    assert os.path.samefile(p1, p2)
    assert [e.to_json() for e in Run.open(exp / "runs" / "g" / "m1-seed1").events()] == ev_a
    assert cli.main(["runs", "list", "--root", str(exp)]) == 0
    assert f"{len(ev_a):>8}" in capsys.readouterr().out
    # a copy of a compacted run (links become plain files) still reads
    shutil.copytree(exp / "runs" / "g" / "m2-seed1", tmp_path / "copy")
    assert Run.open(tmp_path / "copy").get_artifact(big) == arts[big]
    assert Twins().scan(exp).paths[big] in (p1, p2)
    assert Twins.near(exp / "runs" / "h" / "m1-seed9", depth=2).paths[big] in (p1, p2)  # other grids too


def test_compact_log_refuses_a_malformed_log(tmp_path: Path) -> None:
    _make_run(tmp_path / "r")
    log = tmp_path / "r" / "events.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:3] + lines[4:]))  # a gap in seq
    res = compact_run(tmp_path / "r")
    assert res.skipped is not None and "seq" in res.skipped
    assert log.exists() and not (tmp_path / "r" / "events.jsonl.gz").exists()
    with pytest.raises(Exception, match="seq"):
        compact_log(log)


def test_a_sidecar_written_after_its_blob_was_compacted_is_kept(tmp_path: Path) -> None:
    """put() writes the blob, then its sidecar: a compaction in between must not lose the metadata."""
    _make_run(tmp_path / "r")
    store = Run.open(tmp_path / "r").artifacts
    sha = store.put(b"late blob" * 500, name="late", kind="checkpoint")
    side = (store.root / f"{sha}.json").read_text()
    (store.root / f"{sha}.json").unlink()  # as if the sidecar were not written yet
    compact_run(tmp_path / "r")
    assert store.meta(sha) == {"sha256": sha}
    (store.root / f"{sha}.json").write_text(side)  # the writer finishes its put()
    compact_run(tmp_path / "r")
    assert not (store.root / f"{sha}.json").exists() and store.meta(sha)["name"] == "late"
