"""Acceptance check: SIGKILL an ``rsiagent`` experiment mid-wave, resume it, compare the final memory.

``python studies/rsiagent_kill_resume/kill_resume.py CONFIG OUT [--arm full-seed0] [--after 1]``
runs ``rsi-workbench run CONFIG`` in its own process group, waits until the arm's log has ``--after``
committed waves and a later wave started (branches running, not committed), SIGKILLs the group,
runs ``rsi-workbench resume``, then an uninterrupted reference run of the same config, and prints
both arms' frozen memory hashes and the resume event. Exit status 0 only when the hashes match.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from rsi_workbench.records import Run


def _count(events: Path, kind: str) -> int:
    if not events.is_file():
        return 0
    return sum(f'"kind": "{kind}"' in line or f'"kind":"{kind}"' in line for line in events.open())


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "rsi_workbench", *args]


def kill_mid_wave(config: str, out: Path, arm: str, after: int) -> str:
    """Run ``config`` into ``out`` and SIGKILL it once wave ``after + 1`` of ``arm`` is under way."""
    proc = subprocess.Popen(
        _cli("run", config, "--out", str(out)), stdout=subprocess.DEVNULL, start_new_session=True
    )
    events = out / "arms" / arm / "events.jsonl"
    while proc.poll() is None:
        started, committed = _count(events, "memory_wave_started"), _count(events, "memory_wave_committed")
        if committed >= after and started > committed:
            time.sleep(1.0)  # into the wave's branches
            state = f"{_count(events, 'memory_wave_committed')} committed, {_count(events, 'memory_wave_started')} started"
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return f"SIGKILL with {state} waves of {arm}"
        time.sleep(0.2)
    return f"the run finished (status {proc.returncode}) before the kill point"


def frozen_hash(out: Path, arm: str) -> str:
    res = Run.open(out / "arms" / arm).events("memory_result")
    return str(res[-1].payload["frozen_hash"]) if res else "(no result)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config")
    ap.add_argument("out", type=Path)
    ap.add_argument("--arm", default="full-seed0")
    ap.add_argument("--after", type=int, default=1, help="committed waves before the kill")
    a = ap.parse_args(argv)
    killed, ref = a.out / "killed", a.out / "reference"
    for p in (killed, ref):
        shutil.rmtree(p, ignore_errors=True)
    print(kill_mid_wave(a.config, killed, a.arm, a.after), flush=True)
    rc = subprocess.run(_cli("resume", str(killed)), stdout=subprocess.DEVNULL).returncode
    print(f"resume exit status {rc}", flush=True)
    subprocess.run(_cli("run", a.config, "--out", str(ref)), stdout=subprocess.DEVNULL, check=True)
    resumed = [e.payload for e in Run.open(killed / "arms" / a.arm).events("memory_resumed")]
    h1, h2 = frozen_hash(killed, a.arm), frozen_hash(ref, a.arm)
    print(f"resumed from: {resumed}\nkilled+resumed frozen memory {h1}\nuninterrupted frozen memory  {h2}")
    print("SAME final memory hash" if h1 == h2 else "DIFFERENT final memory hash")
    return 0 if h1 == h2 and rc == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
