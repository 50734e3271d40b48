"""The floor of a judged call: what three processes cost per entry-point call when the test code, the
candidate and the broker live apart, with nothing but a minimal pipe relay between them.

Each call of the entry point from the test code is one request frame judge -> host -> candidate and
one reply candidate -> host -> judge: four pipe hops and three process wake-ups. This benchmark times
exactly that relay in bare Python (raw ``os.read``/``os.write`` of a few bytes, no JSON, no sandbox,
no limits), beside the same 100 calls made in one process (the old runner's way: the test code called
the candidate directly). The difference per call is the floor the judged design cannot go below on
this machine, whatever the sandbox does. It is timed twice: with the three processes wherever the
scheduler puts them, and with all three on one CPU, as the judge runs a test's calls
(``rsi_workbench.sandbox.judge._OneCPU``): on a VM, waking a process on another, idle CPU costs far
more than switching on one.

    PYTHONPATH=. python benchmarks/judge_floor_bench.py [--tests 200] [--calls 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

RELAY = r"""
import os, sys
r, w = int(sys.argv[1]), int(sys.argv[2])
while True:
    b = os.read(r, 64)
    if not b:
        break
    os.write(w, b)  # the candidate "computes" by echoing
"""


def in_process(tests: int, calls: int) -> float:
    def add(a: int, b: int) -> int:
        return a + b

    t0 = time.perf_counter()
    for i in range(tests):
        for j in range(i, i + calls):
            assert add(j, 1) == j + 1
    return time.perf_counter() - t0


def this_cpu() -> int:
    """The CPU this thread runs on now (field 39 of /proc/thread-self/stat)."""
    with open("/proc/thread-self/stat", "rb") as f:
        stat = f.read()
    return int(stat[stat.rindex(b")") + 2 :].split()[36])


def relayed(tests: int, calls: int, one_cpu: bool = False) -> float:
    """judge (this process's child) <-> host (this process) <-> candidate (another child); with
    ``one_cpu``, all three on the CPU this thread is on."""
    mask = os.sched_getaffinity(0)
    if one_cpu:
        os.sched_setaffinity(0, {this_cpu()})  # the children inherit it
    try:
        return _relayed(tests, calls)
    finally:
        os.sched_setaffinity(0, mask)


def _relayed(tests: int, calls: int) -> float:
    import subprocess

    def child(code: str) -> tuple[subprocess.Popen[bytes], int, int]:
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        p = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", code, str(to_r), str(from_w)], pass_fds=(to_r, from_w)
        )
        os.close(to_r)
        os.close(from_w)
        return p, to_w, from_r

    judge_code = r"""
import os, sys
r, w = int(sys.argv[1]), int(sys.argv[2])
while True:
    n = os.read(r, 64)
    if not n:
        break
    calls = int(n)
    for j in range(calls):
        os.write(w, b"c")          # a call of the entry point: to the host
        assert os.read(r, 64) == b"c"  # its result, relayed back
    os.write(w, b"d")              # the test is done
"""
    judge, j_w, j_r = child(judge_code)
    cand, c_w, c_r = child(RELAY)
    t0 = time.perf_counter()
    for _ in range(tests):
        os.write(j_w, str(calls).encode())
        while True:
            b = os.read(j_r, 64)
            if b == b"d":
                break
            os.write(c_w, b)  # host -> candidate
            os.write(j_w, os.read(c_r, 64))  # candidate -> host -> judge
    spent = time.perf_counter() - t0
    for w in (j_w, c_w):
        os.close(w)
    judge.wait()
    cand.wait()
    return spent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tests", type=int, default=200)
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}; {a.tests} tests x {a.calls} calls, {a.rounds} rounds")
    for r in range(a.rounds):
        inp = in_process(a.tests, a.calls)
        for one_cpu in (False, True):
            rel = relayed(a.tests, a.calls, one_cpu)
            per_call_us = (rel - inp) / (a.tests * a.calls) * 1e6
            where = "on one CPU" if one_cpu else "spread"
            print(
                f"round {r + 1}: in one process {inp / a.tests * 1e3:.2f} ms/test; relayed through three "
                f"processes ({where}) {rel / a.tests * 1e3:.2f} ms/test; floor {per_call_us:.0f} us per call"
            )


if __name__ == "__main__":
    main()
