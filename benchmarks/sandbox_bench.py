"""Sandbox throughput: test executions per second through the sandbox (1 and 2 workers), side by side
with a bare ``python -I -c pass`` spawn loop, measured in one run; prints a table of ratios.

    python benchmarks/sandbox_bench.py [--n 120]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time

from rsi_workbench.domains.code_repair.sandbox import Sandbox, probe_isolation
from rsi_workbench.domains.code_repair.tasks import TestCase
from rsi_workbench.execute import make_executor

PROGRAM = "def add(a, b):\n    return a + b\n"


def bare_spawn(n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        subprocess.run([sys.executable, "-I", "-c", "pass"], check=True, env={"PATH": "/usr/bin:/bin"})
    return n / (time.perf_counter() - t0)


def bare_spawn_sandbox_interpreter(n: int) -> float:
    exe = probe_isolation().interpreter
    t0 = time.perf_counter()
    for _ in range(n):
        subprocess.run([exe, "-I", "-S", "-c", "pass"], check=True, env={"PATH": "/usr/bin:/bin"})
    return n / (time.perf_counter() - t0)


def sandboxed(n: int, workers: int) -> float:
    sb = Sandbox()
    tests = [TestCase(id=f"t{i}", kind="assert", code=f"assert add({i}, 1) == {i + 1}") for i in range(n)]
    with make_executor("process", workers) as ex:
        sb.run_suite(PROGRAM, tests[:workers], "add", executor=ex)  # warm the pool
        t0 = time.perf_counter()
        outs = sb.run_suite(PROGRAM, tests, "add", executor=ex)
        rate = n / (time.perf_counter() - t0)
    assert all(o.passed for o in outs), [o for o in outs if not o.passed][:1]
    return rate


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=120, help="executions per measurement")
    args = ap.parse_args()
    iso = probe_isolation()
    rows = [
        ("bare `python -I -c pass` (serial)", bare_spawn(args.n)),
        ("bare `python -I -S -c pass`, sandbox interpreter", bare_spawn_sandbox_interpreter(args.n)),
        ("sandbox, 1 worker", sandboxed(args.n, 1)),
        ("sandbox, 2 workers", sandboxed(args.n, 2)),
    ]
    base = rows[0][1]
    print(
        f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}"
    )
    print(f"date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; n={args.n} per row")
    print(f"isolation: {iso.record()}  ({' '.join(iso.unshare[1:])}; interpreter {iso.interpreter})")
    print()
    print(f"| {'setting':<50} | {'exec/s':>8} | {'ratio to bare spawn':>20} |")
    print(f"|{'-' * 52}|{'-' * 10}|{'-' * 22}|")
    for name, rate in rows:
        print(f"| {name:<50} | {rate:>8.1f} | {rate / base:>20.2f} |")


if __name__ == "__main__":
    main()
