"""The append-only event log: seq continuity, torn lines, SIGKILL survival, multi-process appends."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import time
from pathlib import Path

import pytest

from rsi_workbench.records import EventLog, EventLogError, Run, TornLineWarning, iter_events, read_log


def test_append_and_read_back(tmp_path: Path) -> None:
    with EventLog(tmp_path / "events.jsonl") as log:
        for i in range(5):
            ev = log.append("tick", {"i": i, "x": float("nan")}, cycle=i // 2)
            assert ev.seq == i
        log.commit()
    evs = list(iter_events(tmp_path / "events.jsonl"))
    assert [e.seq for e in evs] == [0, 1, 2, 3, 4]
    assert evs[3].cycle == 1 and evs[3].payload["i"] == 3
    assert evs[0].payload["x"] is None  # non-finite floats become null: every line is strict JSON
    line = json.loads((tmp_path / "events.jsonl").read_text().splitlines()[0])
    assert set(line) == {"schema", "seq", "time", "kind", "cycle", "payload"}


def test_reopen_continues_seq(tmp_path: Path) -> None:
    p = tmp_path / "events.jsonl"
    with EventLog(p) as log:
        log.append("a")
    with EventLog(p) as log:
        assert log.append("b").seq == 1


def test_gap_and_duplicate_seq_name_the_line(tmp_path: Path) -> None:
    p = tmp_path / "events.jsonl"
    rows = [{"schema": 1, "seq": s, "time": 0, "kind": "k", "cycle": None, "payload": {}} for s in (0, 1, 3)]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(EventLogError, match="line 3: gap"):
        read_log(p, expect_seq=0)
    rows[2]["seq"] = 1
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(EventLogError, match="line 3: duplicate"):
        read_log(p, expect_seq=0)


def test_malformed_line_mid_file_is_an_error(tmp_path: Path) -> None:
    p = tmp_path / "events.jsonl"
    p.write_text('{"schema":1,"seq":0,"time":0,"kind":"k","cycle":null,"payload":{}}\n{not json\n')
    with pytest.raises(EventLogError, match="line 2"):
        read_log(p)


def test_torn_line_reported_then_truncated(tmp_path: Path) -> None:
    p = tmp_path / "events.jsonl"
    with EventLog(p) as log:
        log.append("a")
        log.append("b")
    with open(p, "ab") as f:
        f.write(b'{"schema":1,"seq":2,"time":0,"ki')
    with pytest.warns(TornLineWarning):
        assert [e.seq for e in iter_events(p)] == [0, 1]
    with pytest.warns(TornLineWarning, match="truncated"):
        log = EventLog(p)
    assert log.repaired is not None and log.repaired.startswith(b'{"schema"')
    assert log.append("c").seq == 2
    log.close()
    assert [e.kind for e in iter_events(p)] == ["a", "b", "c"]


# -- SIGKILL during a burst of appends ---------------------------------------------------------
def _burst_writer(path: str, conn) -> None:  # type: ignore[no-untyped-def]
    log = EventLog(path, fsync="commit")
    i = 0
    while True:
        ev = log.append("burst", {"i": i, "pad": "x" * (i % 200)})
        conn.send(ev.seq)  # acknowledged: the whole line has been handed to the OS
        i += 1
        if i % 50 == 0:
            log.commit()


def test_sigkill_mid_burst_keeps_every_acknowledged_event(tmp_path: Path) -> None:
    p = tmp_path / "events.jsonl"
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_burst_writer, args=(str(p), child))
    proc.start()
    acked: list[int] = []
    deadline = time.time() + 30
    while len(acked) < 2000 and time.time() < deadline:
        if parent.poll(0.1):
            acked.append(parent.recv())
    os.kill(proc.pid, signal.SIGKILL)
    proc.join()
    while parent.poll(0):
        acked.append(parent.recv())
    assert len(acked) >= 2000
    # simulate the worst case on top of the kill: a torn last line left by a crash mid-write
    with open(p, "ab") as f:
        f.write(b'{"schema":1,"seq":')
    with pytest.warns(TornLineWarning):
        log = EventLog(p)
    seqs_on_disk = [e.seq for e in read_log(p, expect_seq=0).events]
    assert set(acked) <= set(seqs_on_disk)
    assert seqs_on_disk == list(range(len(seqs_on_disk)))
    nxt = log.append("after_crash")
    assert nxt.seq == seqs_on_disk[-1] + 1
    log.close()
    assert [e.seq for e in iter_events(p)] == list(range(nxt.seq + 1))


# -- several processes appending through the lock ----------------------------------------------
def _concurrent_writer(path: str, wid: int, n: int) -> None:
    log = EventLog(path)
    for i in range(n):
        log.append("w", {"writer": wid, "i": i, "blob": "y" * (500 + 37 * wid)})
    log.close()


def test_concurrent_appends_interleave_whole_lines(tmp_path: Path) -> None:
    p = tmp_path / "events.jsonl"
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_concurrent_writer, args=(str(p), w, 300)) for w in range(4)]
    for pr in procs:
        pr.start()
    for pr in procs:
        pr.join()
        assert pr.exitcode == 0
    evs = list(iter_events(p))  # raises on any torn/merged line or seq gap
    assert len(evs) == 1200
    assert [e.seq for e in evs] == list(range(1200))
    for w in range(4):
        assert [e.payload["i"] for e in evs if e.payload["writer"] == w] == list(range(300))


def test_run_directory_layout_and_read_only(tmp_path: Path) -> None:
    run = Run.create(tmp_path / "r1", {"a": 1}, kind="test")
    run.append("x", {"v": 1}, cycle=0)
    run.commit()
    run.close()
    names = {p.name for p in (tmp_path / "r1").iterdir()}
    assert {"artifacts", "config.json", "events.jsonl", "manifest.json"} <= names
    ro = Run.open(tmp_path / "r1")
    assert ro.events("x")[0].payload == {"v": 1}
    with pytest.raises(Exception, match="read-only"):
        ro.append("y")
