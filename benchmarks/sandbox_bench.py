"""Sandbox throughput, side by side in one run: test executions per second through the new sandbox
(``rsi_workbench.sandbox``, bubblewrap plan) and through a frozen copy of the old runner
(``benchmarks/old_sandbox`` of a past commit, unshare plan), for 1 and 2 workers, old and new alternating in rounds; calls per second through one
session against one process per call; each as a ratio to a bare ``python -I -S -c pass`` spawn of
the sandbox interpreter. Prints a table.

    PYTHONPATH=. python benchmarks/sandbox_bench.py [--n 120] [--only loop|decode] [--pairs 2]

``--only decode`` times decoding result frames on the host, old (a frozen copy of the decoder that
built ``set`` / ``dict`` from the frame) and new (``rsi_workbench.sandbox.values``, no hashing) side by
side: an honest frame, and frames of ints ``k * (2**61 - 1)`` (all of one hash) in a set and as dict
keys, the old decoder on small ones only (it is quadratic), the new one at the 4 MiB frame cap.
``--only loop`` runs only the 100-call check row, ``--pairs`` times, each pair beside what bounds it
in the same run: the one-assert test (old and new, alternating: the new design's fixed part) and the
bare three-process relay of ``judge_floor_bench.py`` (100 calls, spread over the CPUs and on one
CPU). The floor of the 100-call test is the new one-assert test plus 99 bare relayed calls on one
CPU (as the judge runs them); floor/old is that over the old runner's 100-call test.

The old runner is no longer in the tree: it is imported from a ``git worktree`` of the last commit
that has ``benchmarks/old_sandbox`` (found from the history; ``--old-commit`` names another),
checked out in a temporary folder and removed at exit. Without git, or without that commit (a
shallow clone, an unpacked archive), the side-by-side rows stop with a message saying so; ``--only
decode`` still runs (its old decoder is a copy in this file).
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from rsi_workbench import sandbox as new
from rsi_workbench.domains.code_repair.sandbox import Sandbox
from rsi_workbench.domains.code_repair.tasks import TestCase
from rsi_workbench.execute import make_executor
from rsi_workbench.sandbox import values
from rsi_workbench.sandbox.supervisor import ONE_SHOT_KINDS, decode_frame

REPO = Path(__file__).resolve().parent.parent
OLD_PATH = "benchmarks/old_sandbox"


class OldSandboxUnavailable(RuntimeError):
    """The old runner cannot be checked out (no git, no history, or no such commit)."""


def _git(*args: str) -> str:
    out = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise OldSandboxUnavailable(f"git {' '.join(args)}: {out.stderr.strip() or out.returncode}")
    return out.stdout.strip()


def last_old_sandbox_commit() -> str:
    """The last commit that has ``benchmarks/old_sandbox``: the parent of the commit that deleted it."""
    gone = _git("log", "-1", "--format=%H", "--diff-filter=D", "--", f"{OLD_PATH}/sandbox.py")
    if not gone:
        raise OldSandboxUnavailable(f"no commit in this clone's history deletes {OLD_PATH}")
    return _git("rev-parse", "--verify", f"{gone}^^{{commit}}")


def load_old_sandbox(commit: str | None = None) -> ModuleType:
    """``old_sandbox.sandbox`` imported from a temporary ``git worktree`` of ``commit`` (default: the
    last commit that has it), removed at exit; :class:`OldSandboxUnavailable` says why it cannot be."""
    if shutil.which("git") is None:
        raise OldSandboxUnavailable("git is not installed: the old runner is checked out from the history")
    commit = _git("rev-parse", "--verify", f"{commit or last_old_sandbox_commit()}^{{commit}}")
    _git("cat-file", "-e", f"{commit}:{OLD_PATH}/sandbox.py")
    tmp = Path(tempfile.mkdtemp(prefix="old-sandbox-")) / "tree"
    _git("worktree", "add", "--detach", str(tmp), commit)
    atexit.register(shutil.rmtree, tmp.parent, ignore_errors=True)  # runs after the worktree's removal
    atexit.register(lambda: _git("worktree", "remove", "--force", str(tmp)))
    sys.path.insert(0, str(tmp / "benchmarks"))
    return importlib.import_module("old_sandbox.sandbox")


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


# ------------------------------------------------------------------------------ decoding frames
P61 = 2**61 - 1  # hash(k * P61) == 0 for every int k


def old_decode(x: Any, depth: int = 0, *, frame: bool = False) -> Any:
    """A frozen copy of ``values.decode`` before it stopped hashing (it builds sets and dicts)."""
    if depth > values.MAX_DEPTH:
        raise values.ValueFormatError("nested too deeply")
    t = type(x)
    if x is None or t in (bool, int, str, float):
        return x
    if t is list:
        return [old_decode(v, depth + 1, frame=frame) for v in x]
    if t is not dict:
        raise values.ValueFormatError(f"value of type {t.__name__}")
    if len(x) != 1 or next(iter(x)) not in values.TAGS or (frame and "$l" in x):
        if frame:
            raise values.ValueFormatError("untagged dict")
        return {k: old_decode(v, depth + 1) for k, v in x.items()}
    ((tag, p),) = x.items()
    try:
        return _old_decode_tag(tag, p, depth, frame)
    except (TypeError, ValueError) as e:
        if isinstance(e, values.ValueFormatError):
            raise
        raise values.ValueFormatError(f"malformed {tag} value ({e})") from None


def _old_items(p: Any, depth: int, frame: bool) -> list[Any]:
    if type(p) is not list:
        raise values.ValueFormatError("tagged payload is not a list")
    return [old_decode(v, depth + 1, frame=frame) for v in p]


def _old_decode_tag(tag: str, p: Any, depth: int, frame: bool) -> Any:
    if tag == "$d":
        if type(p) is not dict:
            raise values.ValueFormatError("malformed $d value")
        return {k: old_decode(v, depth + 1, frame=frame) for k, v in p.items()}
    if tag == "$m":
        pairs = _old_items(p, depth, frame)
        if not all(type(kv) is list and len(kv) == 2 for kv in pairs):
            raise values.ValueFormatError("malformed $m value")
        return {k: v for k, v in pairs}
    if tag in ("$t", "$l"):
        items = _old_items(p, depth, frame)
        return tuple(items) if tag == "$t" else items
    if tag in ("$s", "$z"):
        items = _old_items(p, depth, frame)
        return set(items) if tag == "$s" else frozenset(items)
    if tag == "$b":
        if type(p) is not str:
            raise values.ValueFormatError("malformed $b value")
        return bytes.fromhex(p)
    if tag == "$c":
        parts = _old_items(p, depth, frame)
        if len(parts) != 2 or not all(type(v) in (int, float) for v in parts):
            raise values.ValueFormatError("malformed $c value")
        return complex(parts[0], parts[1])
    if p not in ("nan", "inf", "-inf"):
        raise values.ValueFormatError("malformed $f value")
    return float(p)


def frame(value: object) -> bytes:
    return json.dumps({"value": value}, separators=(",", ":")).encode()


def colliding_frame(kind: str, cap: int) -> bytes:
    """The largest frame of colliding ints within ``cap`` bytes, in a set or as dict keys."""

    def make(n: int) -> bytes:
        ints = [k * P61 for k in range(1, n + 1)]
        return frame({"$s": ints} if kind == "set" else {"$m": [[k, 0] for k in ints]})

    lo, hi = 1, 2
    while len(make(hi)) <= cap:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if len(make(mid)) <= cap else (lo, mid)
    return make(lo)


def honest_frame(cap: int) -> bytes:
    """Typical results, repeated up to ``cap`` bytes: records with str keys, lists, tuples, small sets."""
    rec = {
        "$d": {
            "id": 12345,
            "name": "alpha beta",
            "scores": [0.5, 1.25, 3.0, 7.75],
            "pair": {"$t": [3, "x"]},
            "tags": {"$s": ["a", "b", "c"]},
            "ids": {"$z": list(range(20))},
            "by_pos": {"$m": [[{"$t": [i, i + 1]}, i] for i in range(4)]},
        }
    }
    one = len(frame([rec]))
    return frame([rec] * max(1, cap // one))


def time_decode(body: bytes, new: bool, reps: int = 1) -> float:
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        if new:
            v = decode_frame(body, ONE_SHOT_KINDS)[1]
            w = decode_frame(body, ONE_SHOT_KINDS)[1]
            assert new_compare(v, w)
        else:
            v = old_decode(json.loads(body.decode("ascii"))["value"], frame=True)
            w = old_decode(json.loads(body.decode("ascii"))["value"], frame=True)
            assert v == w
        best = min(best, time.perf_counter() - t0)
    return best


def new_compare(a: object, b: object) -> bool:
    return new.compare(a, b)


def decode_rows() -> list[tuple[str, int, float | None, float | None]]:
    """(frame, bytes, old s, new s): each time is two decodes and one comparison of the results."""
    rows: list[tuple[str, int, float | None, float | None]] = []
    for cap in (1 << 20, 4 << 20):
        b = honest_frame(cap)
        rows.append(
            (f"honest frame, {cap >> 20} MiB", len(b), time_decode(b, False, 3), time_decode(b, True, 3))
        )
    for kind in ("set", "dict"):
        for cap in (16 << 10, 64 << 10):  # the old decoder is quadratic: small frames only
            b = colliding_frame(kind, cap)
            rows.append(
                (
                    f"colliding ints in a {kind}, {cap >> 10} KiB",
                    len(b),
                    time_decode(b, False),
                    time_decode(b, True),
                )
            )
        b = colliding_frame(kind, 4 << 20)
        rows.append(
            (f"colliding ints in a {kind}, 4 MiB (the frame cap)", len(b), None, time_decode(b, True))
        )
    return rows


def print_decode() -> None:
    print("decoding result frames on the host (two decodes and a comparison, seconds):")
    print(f"| {'frame':<42} | {'bytes':>9} | {'old s':>8} | {'new s':>7} |")
    print(f"|{'-' * 44}|{'-' * 11}|{'-' * 10}|{'-' * 9}|")
    for name, size, o, nw in decode_rows():
        os_ = f"{o:.3f}" if o is not None else "(minutes)"
        print(f"| {name:<42} | {size:>9} | {os_:>8} | {nw:>7.3f} |")
    print()


def print_header(n: int, old: ModuleType | None) -> None:
    iso = new.probe_isolation()
    print(
        f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print(f"date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; n={n} per row")
    print(f"new: plan {iso.plan}, complete={iso.complete}, interpreter {iso.interpreter}")
    print(old_line(old))


def old_line(old: ModuleType | None) -> str:
    if old is None:
        return "old: runner not checked out (the decode rows do not need it)"
    o = old.probe_isolation()
    return (
        f"old: {' '.join(o.unshare[1:]) or 'no unshare'}, complete={o.complete}, interpreter {o.interpreter}"
    )


def print_loop(old: object, sb: object, n: int, pairs: int) -> None:
    """The 100-call check, old and new, beside the one-assert test and the bare relay (ms per test)."""
    import importlib.util

    # this checkout's copy, by path (the old runner's worktree also has a benchmarks/ on sys.path)
    spec = importlib.util.spec_from_file_location(
        "judge_floor_bench", Path(__file__).with_name("judge_floor_bench.py")
    )
    assert spec is not None and spec.loader is not None
    floor_bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(floor_bench)
    relayed = floor_bench.relayed
    print(
        "ms per test; floor = new one-assert test + 99 bare relayed calls on one CPU; "
        "relay = 100 bare calls through three processes"
    )
    head = (
        "| pair | old 100-call | new 100-call | old 1-assert | new 1-assert | relay spread | "
        "relay one CPU | floor | new/old | floor/old | load |"
    )
    print(head)
    print("|" + "|".join("---:" for _ in range(head.count("|") - 1)) + "|")
    for i in range(pairs):
        o, nw = paired_rates(old, sb, n, 1, "loop")
        o1, n1 = paired_rates(old, sb, n, 1, "assert")
        spread, one = relayed(n, 100) / n, relayed(n, 100, one_cpu=True) / n
        t_old, t_new, t_n1 = 1 / o, 1 / nw, 1 / n1
        floor = t_n1 + 0.99 * one
        cells = [t_old, t_new, 1 / o1, t_n1, spread, one, floor]
        print(
            f"| {i + 1} | "
            + " | ".join(f"{c * 1e3:.1f}" for c in cells)
            + f" | {t_new / t_old:.2f}x | {floor / t_old:.2f}x | {os.getloadavg()[0]:.1f} |"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=120, help="executions per measurement")
    ap.add_argument("--only", choices=["loop", "decode"], help="one part only")
    ap.add_argument("--pairs", type=int, default=2, help="old/new pairs of the 100-call row (--only loop)")
    ap.add_argument(
        "--old-commit", help=f"the commit to take {OLD_PATH} from (default: the last that has it)"
    )
    args = ap.parse_args()
    try:
        old_mod: ModuleType | None = load_old_sandbox(args.old_commit)
    except OldSandboxUnavailable as e:
        if args.only != "decode":
            sys.exit(f"sandbox_bench: the old runner is unavailable ({e}); --only decode runs without it")
        old_mod = None
    if args.only == "decode":
        print_header(0, old_mod)
        print_decode()
        return
    assert old_mod is not None
    if args.only == "loop":
        print_header(args.n, old_mod)
        print_loop(old_mod.Sandbox(), Sandbox(), args.n, args.pairs)
        return
    iso = new.probe_isolation()
    sb, old = Sandbox(), old_mod.Sandbox()
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
    print(old_line(old_mod))
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
    print()
    print_decode()


if __name__ == "__main__":
    main()
