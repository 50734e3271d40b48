"""Which sandbox verdicts flip between two sandbox versions (issue 31: judge process, faithful types,
fixed hash seed, host-side robustness), printed as Markdown.

Two inputs of the same kind, made by the old and the new code with the same command:

* **code-repair experiments** (``rsi-workbench run CONFIG --out DIR``): every execution in the two
  ``exec_cache.jsonl`` files is matched by (task, suite, traced, program digest) — the cache key's
  version, test-content and plan digests change with the sandbox semantics, the program does not —
  and each test's status is compared by test id. Executions that only one side made (a trajectory that
  diverged after an earlier flip, or a converted test whose id set changed) are counted, not compared.
* **oracle runs** (``rsi-workbench tasks oracle --out DIR``): per (seed, task), the final kept
  program's success and its hidden statuses.

    python benchmarks/verdict_flips.py OLD NEW [--all]
    python benchmarks/verdict_flips.py DIR OUT.json.gz --summarize

OLD and NEW are run directories or their compact summaries (``--summarize``: every verdict as
(execution, test id, status, message) or every oracle task's outcome, gzipped JSON; the ones behind
``benchmarks/RESULTS.md`` are committed in ``benchmarks/data/verdict_flips/``). ``--all`` lists
unchanged oracle tasks too.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

Verdicts = dict[tuple[str, str, str, str], dict[str, tuple[str, str]]]


def _load(src: Path) -> tuple[str, Any]:
    """("cache", verdicts) or ("oracle", tasks) from a run directory or a ``--summarize`` file."""
    if src.is_file():
        with gzip.open(src, "rt") as f:
            d = json.load(f)
        if d["kind"] == "cache":
            return "cache", {tuple(r[0]): {t: tuple(v) for t, v in r[1].items()} for r in d["rows"]}
        return "oracle", {(int(r[0]), str(r[1])): r[2] for r in d["rows"]}
    if (src / "exec_cache.jsonl").exists():
        return "cache", _cache(src / "exec_cache.jsonl")
    if (src / "events.jsonl").exists():
        return "oracle", _oracle(src / "events.jsonl")
    raise SystemExit(f"error: {src}: neither an experiment (exec_cache.jsonl), an oracle run nor a summary")


def summarize(src: Path, out: Path) -> None:
    """Write the compact summary of a run directory (what the comparison reads, nothing else)."""
    kind, data = _load(src)
    if kind == "cache":
        rows: list[Any] = [[list(k), {t: list(v) for t, v in data[k].items()}] for k in sorted(data)]
    else:
        keep = ("success", "hidden_statuses", "public_pass_final", "history")
        rows = [[k[0], k[1], {f: data[k][f] for f in keep}] for k in sorted(data)]
    out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.GzipFile(out, "wb", mtime=0) as f:
        f.write(json.dumps({"kind": kind, "rows": rows}, sort_keys=True).encode())


def _cache(path: Path) -> Verdicts:
    """(task, suite, traced, program digest) -> {test id: (status, message)}; the last line wins."""
    out: Verdicts = {}
    with path.open() as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            parts = str(row["key"]).split("|")
            ident = (parts[1], parts[2], parts[3], parts[4])
            out[ident] = {o["test_id"]: (o["status"], o.get("message", "")) for o in row["outcomes"]}
    return out


def cache_flips(old: Verdicts, new: Verdicts) -> tuple[list[str], dict[str, int]]:
    """Markdown rows of every (execution, test) whose status differs, and counts."""
    rows, n = [], Counter()
    n["executions only in old"] = len(old.keys() - new.keys())
    n["executions only in new"] = len(new.keys() - old.keys())
    transitions: Counter[tuple[str, str]] = Counter()
    for ident in sorted(old.keys() & new.keys()):
        a, b = old[ident], new[ident]
        n["executions compared"] += 1
        for tid in sorted(a.keys() & b.keys()):
            n["test verdicts compared"] += 1
            if a[tid][0] != b[tid][0]:
                transitions[(a[tid][0], b[tid][0])] += 1
                task, suite, traced, prog = ident
                msg = b[tid][1].replace("|", "\\|")[:90]
                rows.append(f"| {task} | {suite} | {prog[:8]} | {tid} | {a[tid][0]} | {b[tid][0]} | {msg} |")
        n["test ids only on one side"] += len(a.keys() ^ b.keys())
    n["verdicts flipped"] = len(rows)
    for (x, y), c in sorted(transitions.items()):
        n[f"flips {x} -> {y}"] = c
    return rows, dict(n)


def _oracle(path: Path) -> dict[tuple[int, str], dict[str, Any]]:
    out = {}
    with path.open() as f:
        for line in f:
            e = json.loads(line)
            if e.get("kind") == "oracle_task":
                p = e["payload"]
                out[(int(p["seed"]), str(p["task_id"]))] = p
    return out


def oracle_flips(
    old: dict[tuple[int, str], dict[str, Any]],
    new: dict[tuple[int, str], dict[str, Any]],
    show_all: bool = False,
) -> tuple[list[str], dict[str, int]]:
    rows, n = [], Counter()
    for k in sorted(old.keys() & new.keys()):
        a, b = old[k], new[k]
        n["tasks compared"] += 1
        n["solved (old)"] += bool(a["success"])
        n["solved (new)"] += bool(b["success"])
        changed = a["success"] != b["success"] or a["hidden_statuses"] != b["hidden_statuses"]
        n["tasks whose hidden statuses changed"] += changed
        n["tasks whose success flipped"] += a["success"] != b["success"]
        if changed or show_all:
            rows.append(
                f"| {k[0]} | {k[1]} | {'yes' if a['success'] else 'no'} | {'yes' if b['success'] else 'no'} | "
                f"{' '.join(a['hidden_statuses'])} | {' '.join(b['hidden_statuses'])} |"
            )
    return rows, dict(n)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--summarize", action="store_true", help="write NEW as the compact summary of run OLD")
    args = ap.parse_args(argv)
    if args.summarize:
        summarize(args.old, args.new)
        return 0
    (kind_a, old), (kind_b, new) = _load(args.old), _load(args.new)
    if kind_a != kind_b:
        print(f"error: {args.old} is a {kind_a} input, {args.new} a {kind_b} one", file=sys.stderr)
        return 2
    if kind_a == "cache":
        rows, counts = cache_flips(old, new)
        print("| task | suite | program | test | old | new | new message |\n|---|---|---|---|---|---|---|")
    else:
        rows, counts = oracle_flips(old, new, args.all)
        print("| seed | task | solved (old) | solved (new) | hidden (old) | hidden (new) |")
        print("|---|---|---|---|---|---|")
    print("\n".join(rows) if rows else "| (no flips) |")
    print()
    for k, v in counts.items():
        print(f"- {k}: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
