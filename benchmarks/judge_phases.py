"""Where a judged test's wall time goes, phase by phase, with and without a candidate process started
one test ahead (``rsi_workbench.sandbox.spares``). Prints medians in ms.

    PYTHONPATH=. python benchmarks/judge_phases.py [--n 60]

Each row runs ``--n`` tests back to back in this process, as ``run_judged`` does (a pooled judge, a
candidate session, the broker, the close), timing each phase: taking the judge and sending it the
test; starting the candidate's session until its program is loaded; brokering the test; closing the
session. Rows: a one-assert test and a 100-call ``check``, each with ``ahead`` off and on. A last
row times a candidate process's start itself: constructing it (bubblewrap started, the memory cgroup
written) and, once the job is sent, the time until the program is loaded, for a process started on
demand and for one that had started 50 ms earlier.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from dataclasses import replace

from rsi_workbench import sandbox
from rsi_workbench.sandbox import judge as J
from rsi_workbench.sandbox.plan import Limits
from rsi_workbench.sandbox.session import Session
from rsi_workbench.sandbox.supervisor import _Child

PROGRAM = "def add(a, b):\n    return a + b\n"
ONE = "assert add({i}, 1) == {i} + 1"
LOOP = "def check(candidate):\n    for j in range({i}, {i} + 100):\n        assert candidate(j, 1) == j + 1\n\ncheck(add)\n"
PHASES = ("judge", "session start", "broker", "close", "total")


def phases(code: str, ahead: bool, n: int, iso: sandbox.Isolation, lim: Limits) -> dict[str, float]:
    """Median ms of each phase over ``n`` tests (after one warm-up test)."""
    J.run_judged(PROGRAM, "add", code.format(i=0), limits=lim, isolation=iso)
    got: dict[str, list[float]] = {p: [] for p in PHASES}
    for i in range(n):
        t0 = time.perf_counter()
        judge = J.POOL.take(iso, lim)
        judge.send({"code": code.format(i=i), "entry": "add"})
        judge.tests += 1
        t1 = time.perf_counter()
        s = Session(
            PROGRAM,
            "add",
            isolation=iso,
            limits=replace(lim, session_wall_s=lim.wall_s),
            exact_types=True,
            coverage=True,
            ahead=ahead,
        )
        t2 = time.perf_counter()
        res = J._broker(judge, s, time.monotonic() + lim.wall_s)
        s._child.drain()
        t3 = time.perf_counter()
        s.close()
        J.POOL.give(iso, judge)
        t4 = time.perf_counter()
        assert res.kind == "passed", res
        for p, v in zip(PHASES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0), strict=True):
            got[p].append(v * 1e3)
    return {p: statistics.median(v) for p, v in got.items()}


def start_costs(n: int, iso: sandbox.Isolation, lim: Limits) -> tuple[float, float, float]:
    """Median ms: constructing a waiting process; job to loaded on demand; job to loaded 50 ms later."""
    job = {"program": PROGRAM, "entry": "add", "session": True, "coverage": True}
    build: list[float] = []
    cold: list[float] = []
    warm: list[float] = []
    for _ in range(n):
        for wait, out in ((0.0, cold), (0.05, warm)):
            t0 = time.perf_counter()
            c = _Child(iso, lim, None)
            if not wait:
                build.append((time.perf_counter() - t0) * 1e3)
            time.sleep(wait)
            t1 = time.perf_counter()
            c.start(job)
            c.pump(time.monotonic() + 10, frame_from=0)
            out.append((time.perf_counter() - t1) * 1e3)
            c.finish()
    return statistics.median(build), statistics.median(cold), statistics.median(warm)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=60, help="tests per row")
    n = ap.parse_args().n
    iso, lim = sandbox.probe_isolation(), Limits()
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, plan {iso.plan}, load {os.getloadavg()[0]:.1f}"
    )
    print("| test | ahead | " + " | ".join(PHASES) + " |")
    print("|---|---|" + "---:|" * len(PHASES))
    for name, code in (("one-assert", ONE), ("100-call", LOOP)):
        for ahead in (False, True):
            m = phases(code, ahead, n, iso, lim)
            print(
                f"| {name} | {'on' if ahead else 'off'} | " + " | ".join(f"{m[p]:.2f}" for p in PHASES) + " |"
            )
    b, c, w = start_costs(max(n // 2, 1), iso, lim)
    print(
        f"candidate process: constructed in {b:.2f} ms; job to loaded {c:.2f} ms on demand, {w:.2f} ms when started 50 ms before"
    )


if __name__ == "__main__":
    main()
