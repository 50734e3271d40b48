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

    python benchmarks/verdict_flips.py OLD_DIR NEW_DIR [--all]

``--all`` lists unchanged oracle tasks too.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any


def _cache(path: Path) -> dict[tuple[str, str, str, str], dict[str, tuple[str, str]]]:
    """(task, suite, traced, program digest) -> {test id: (status, message)}; the last line wins."""
    out: dict[tuple[str, str, str, str], dict[str, tuple[str, str]]] = {}
    with path.open() as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            parts = str(row["key"]).split("|")
            ident = (parts[1], parts[2], parts[3], parts[4])
            out[ident] = {o["test_id"]: (o["status"], o.get("message", "")) for o in row["outcomes"]}
    return out


def cache_flips(old_dir: Path, new_dir: Path) -> tuple[list[str], dict[str, int]]:
    """Markdown rows of every (execution, test) whose status differs, and counts."""
    old, new = _cache(old_dir / "exec_cache.jsonl"), _cache(new_dir / "exec_cache.jsonl")
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


def oracle_flips(old_dir: Path, new_dir: Path, show_all: bool = False) -> tuple[list[str], dict[str, int]]:
    old, new = _oracle(old_dir / "events.jsonl"), _oracle(new_dir / "events.jsonl")
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
    args = ap.parse_args(argv)
    if (args.old / "exec_cache.jsonl").exists():
        rows, counts = cache_flips(args.old, args.new)
        print("| task | suite | program | test | old | new | new message |\n|---|---|---|---|---|---|---|")
    elif (args.old / "events.jsonl").exists():
        rows, counts = oracle_flips(args.old, args.new, args.all)
        print(
            "| seed | task | solved (old) | solved (new) | hidden (old) | hidden (new) |\n|---|---|---|---|---|---|"
        )
    else:
        print(
            f"error: {args.old}: neither an experiment (exec_cache.jsonl) nor an oracle run", file=sys.stderr
        )
        return 2
    print("\n".join(rows) if rows else "| (no flips) |")
    print()
    for k, v in counts.items():
        print(f"- {k}: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
