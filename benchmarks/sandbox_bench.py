"""Sandbox throughput, side by side in one run: test executions per second through the new sandbox
(``rsi_workbench.sandbox``, bubblewrap plan) and through a frozen copy of the old runner
(``benchmarks/old_sandbox``, unshare plan), for 1 and 2 workers, old and new alternating in rounds; calls per second through one
session against one process per call; each as a ratio to a bare ``python -I -S -c pass`` spawn of
the sandbox interpreter. Prints a table.

    PYTHONPATH=. python benchmarks/sandbox_bench.py [--n 120]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from old_sandbox.sandbox import Sandbox as OldSandbox  # noqa: E402
from old_sandbox.sandbox import probe_isolation as old_probe  # noqa: E402

from rsi_workbench import sandbox as new  # noqa: E402
from rsi_workbench.domains.code_repair.sandbox import Sandbox  # noqa: E402
from rsi_workbench.domains.code_repair.tasks import TestCase  # noqa: E402
from rsi_workbench.execute import make_executor  # noqa: E402

PROGRAM = "def add(a, b):\n    return a + b\n"


def bare_spawn(exe: str, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        subprocess.run([exe, "-I", "-S", "-c", "pass"], check=True, env={"PATH": "/usr/bin:/bin"})
    return n / (time.perf_counter() - t0)


LOOP_CHECK = "def check(candidate):\n    for j in range({i}, {i} + 100):\n        assert candidate(j, 1) == j + 1\n\ncheck(add)\n"


def tests(n: int, kind: str) -> list[TestCase]:
    if kind == "io":
        return [TestCase(id=f"t{i}", kind="io", args=[i, 1], expected=i + 1) for i in range(n)]
    if kind == "loop":  # a HumanEval-style check: 100 calls of the entry point in one assert test
        return [TestCase(id=f"t{i}", kind="assert", code=LOOP_CHECK.format(i=i)) for i in range(n)]
    return [TestCase(id=f"t{i}", kind="assert", code=f"assert add({i}, 1) == {i + 1}") for i in range(n)]


def paired_rates(
    old: object, new_sb: object, n: int, workers: int, kind: str, rounds: int = 6
) -> tuple[float, float]:
    """Old and new measured in alternating rounds (the load of a shared machine drifts): exec/s each."""
    ts = tests(n, kind)
    chunks = [ts[i::rounds] for i in range(rounds)]
    spent = {"old": 0.0, "new": 0.0}
    with make_executor("process", workers) as ex:
        for sb in (old, new_sb):
            sb.run_suite(PROGRAM, ts[:workers], "add", executor=ex)  # type: ignore[attr-defined]  # warm
        for chunk in chunks:
            for name, sb in (("old", old), ("new", new_sb)):
                t0 = time.perf_counter()
                outs = sb.run_suite(PROGRAM, chunk, "add", executor=ex)  # type: ignore[attr-defined]
                spent[name] += time.perf_counter() - t0
                assert all(o.status.value == "AC" for o in outs), [o for o in outs if o.status.value != "AC"][
                    :1
                ]
    return n / spent["old"], n / spent["new"]


def session_rate(n: int) -> float:
    iso = new.probe_isolation()
    with new.Session(PROGRAM, "add", isolation=iso) as s:
        t0 = time.perf_counter()
        for i in range(n):
            r = s.call([i, 1])
            assert r.kind == "value" and r.value == i + 1, r
        return n / (time.perf_counter() - t0)


def call_rate(n: int) -> float:
    iso = new.probe_isolation()
    t0 = time.perf_counter()
    for i in range(n):
        r = new.call(PROGRAM, "add", [i, 1], isolation=iso)
        assert r.kind == "value" and r.value == i + 1, r
    return n / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=120, help="executions per measurement")
    args = ap.parse_args()
    iso, old_iso = new.probe_isolation(), old_probe()
    sb, old = Sandbox(), OldSandbox()
    n = args.n
    io1, io2, as1 = (
        paired_rates(old, sb, n, 1, "io"),
        paired_rates(old, sb, n, 2, "io"),
        paired_rates(old, sb, n, 1, "assert"),
    )
    loop1, as2 = paired_rates(old, sb, n, 1, "loop"), paired_rates(old, sb, n, 2, "assert")
    rows = [
        (f"bare `python -I -S -c pass` ({iso.interpreter})", bare_spawn(iso.interpreter, n)),
        ("old runner, io test, 1 worker", io1[0]),
        ("new sandbox, io test, 1 worker", io1[1]),
        ("old runner, io test, 2 workers", io2[0]),
        ("new sandbox, io test, 2 workers", io2[1]),
        ("old runner, assert test, 1 worker", as1[0]),
        ("new sandbox, assert test, 1 worker", as1[1]),
        ("old runner, assert test, 2 workers", as2[0]),
        ("new sandbox, assert test, 2 workers", as2[1]),
        ("old runner, 100-call check assert test, 1 worker", loop1[0]),
        ("new sandbox, 100-call check assert test, 1 worker", loop1[1]),
        ("new sandbox, one process per call (`call`)", call_rate(n)),
        ("new sandbox, calls through one `Session`", session_rate(10 * n)),
    ]
    base = rows[0][1]
    rate = dict(rows)
    print(
        f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; n={n} per row (session: {10 * n} calls)"
    )
    print(f"new: plan {iso.plan}, complete={iso.complete}, interpreter {iso.interpreter}")
    print(
        f"old: {' '.join(old_iso.unshare[1:]) or 'no unshare'}, complete={old_iso.complete}, interpreter {old_iso.interpreter}"
    )
    print()
    print(f"| {'setting':<58} | {'exec/s':>8} | {'ratio to bare spawn':>20} |")
    print(f"|{'-' * 60}|{'-' * 10}|{'-' * 22}|")
    for name, r in rows:
        print(f"| {name:<58} | {r:>8.1f} | {r / base:>20.2f} |")
    print()
    for w in ("1 worker", "2 workers"):
        o, nw = rate[f"old runner, io test, {w}"], rate[f"new sandbox, io test, {w}"]
        print(f"io test, {w}: new/old time per test = {o / nw:.2f}x")
    for w in ("assert test, 1 worker", "assert test, 2 workers", "100-call check assert test, 1 worker"):
        o, nw = rate[f"old runner, {w}"], rate[f"new sandbox, {w}"]
        print(f"{w}: new/old time per test = {o / nw:.2f}x")
    s, c = (
        rate["new sandbox, calls through one `Session`"],
        rate["new sandbox, one process per call (`call`)"],
    )
    print(f"session calls vs one process per call: {s / c:.0f}x faster")


if __name__ == "__main__":
    main()
