"""The random ranker's null distribution on the committed code-ranker pools (issue 33).

The diagnostic's `random` row is one seeded draw (seed 0: top-1 0.200, within-task AUROC 0.414,
whose task-clustered interval [0.336, 0.496] excludes 0.5). That interval resamples tasks with the
scores fixed, so it says nothing about other draws. This script redraws the random ranker with
seeds 0..N-1 on the same pools and prints where seed 0 falls:

    python studies/code_ranker/code_ranker_random_null.py [--pools benchmarks/data/code_ranker/humanevalfix] [--seeds 300]

Nothing is trained or executed: it reads the committed pools and rows only (a few seconds).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from rsi_workbench.domains.code_repair.pools import load_pools
from rsi_workbench.domains.code_repair.rank_pools import auroc, rank_scores, top1

ROOT = Path(__file__).resolve().parents[2]


def draw(data: dict, rows: dict, seed: int) -> tuple[float, float]:
    """(top-1 recall over pools, mean within-task AUROC) of the random ranker with ``seed``."""
    sc = rank_scores("random", data, rows, {}, scorer=None, seed=seed)
    per = []
    for t, s in sc.items():
        idx = sorted(s)
        a = auroc([s[i] for i in idx], [bool(rows[t]["candidates"][i]["fix"]) for i in idx])
        if a is not None:
            per.append(a)
    tops = [
        top1([sc[p["task_id"]][i] for i in p["candidates"]], p["candidates"].index(p["fix"]))
        for p in data["pools"]
    ]
    return statistics.mean(tops), statistics.mean(per)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pools", default=str(ROOT / "benchmarks" / "data" / "code_ranker" / "humanevalfix"))
    ap.add_argument("--seeds", type=int, default=300)
    args = ap.parse_args()
    data, rows = load_pools(args.pools)
    draws = [draw(data, rows, s) for s in range(args.seeds)]
    tops, aucs = [d[0] for d in draws], [d[1] for d in draws]
    t0, a0 = draws[0]
    n = len(draws)
    print(f"pools: {len(data['pools'])}, seeds 0..{n - 1}")
    for name, xs, x0 in (("top1_recall", tops, t0), ("auroc_within_task", aucs, a0)):
        print(
            f"{name}: seed 0 {x0:.3f}; over {n} seeds mean {statistics.mean(xs):.3f}, sd {statistics.stdev(xs):.3f}, "
            f"share of seeds at or below seed 0: {sum(x <= x0 for x in xs) / n:.3f}"
        )


if __name__ == "__main__":
    main()
