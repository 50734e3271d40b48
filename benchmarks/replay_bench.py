"""Replay throughput: policy evaluations per second on a 600-node tree, vs one real online attempt.

Prints, side by side in one run: seconds per replay of each built-in policy over a 600-node chain
tree (20 branches × 30 attempts, W=4), seconds per real circle-packing n=26 attempt (the built-in
SciPy agent from a warm parent), and the ratio attempt / replay.
Usage: python benchmarks/replay_bench.py [--attempts 10] [--repeats 5]
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from rsi_workbench.domains.math import CirclePacking, run_attempt
from rsi_workbench.replay import ROOT, DiscoveryTree, Node, PortfolioPolicy, replay
from rsi_workbench.replay.policies import BreadthFirst, GreedyDeepestBest, IndependentRoots


def big_tree(branches: int = 20, depth: int = 30, seed: int = 0) -> DiscoveryTree:
    """A 600-node chain tree with random-walk scores, ~8% invalid and ~4% failed attempts."""
    rng = np.random.default_rng(seed)
    nodes, seq = [], 0
    parents = [ROOT] * branches
    level = rng.normal(2.55, 0.03, branches)
    for d in range(depth):  # created round-robin, as W parallel workers would
        for b in range(branches):
            level[b] += abs(rng.normal(0, 0.004)) if rng.random() < 0.5 else -abs(rng.normal(0, 0.002))
            u = rng.random()
            valid, err = u > 0.12, ("SLSQP exit 6" if u < 0.04 else "")
            nid = f"b{b}d{d}"
            nodes.append(
                Node(
                    nid,
                    parents[b],
                    seq,
                    d + 1,
                    float(level[b]),
                    valid,
                    None if valid else ("optimizer_failure" if err else "invalid"),
                    err,
                )
            )
            parents[b], seq = nid, seq + 1
    return DiscoveryTree.from_nodes(nodes, name="bench600")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--attempts", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    tree = big_tree()
    policies = [IndependentRoots(), GreedyDeepestBest(), BreadthFirst(), PortfolioPolicy()]
    task = CirclePacking(26, maxiter=150)
    parent = run_attempt(task, None, seed=0).state  # a warm parent, as in online rounds after the first
    run_attempt(task, parent, seed=1)
    t0 = time.perf_counter()
    for s in range(args.attempts):
        run_attempt(task, parent, seed=100 + s)
    attempt_s = (time.perf_counter() - t0) / args.attempts
    print(
        f"machine: {platform.machine()} {platform.processor() or ''} python {platform.python_version()}; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    print(f"tree: {len(tree)} nodes, {len(tree.children[ROOT])} branches, depth {tree.max_depth()}; W=4")
    print(
        f"online attempt (circle packing n=26, SLSQP from a warm parent): {attempt_s * 1e3:.1f} ms "
        f"(mean of {args.attempts})\n"
    )
    print(
        f"{'policy':<22} {'revealed':>8} {'rounds':>6} {'ms/replay':>10} {'replays/s':>10} {'attempt/replay':>15} {'attempt/node':>13}"
    )
    for pol in policies:
        replay(tree, pol, 4)  # warm-up
        t0 = time.perf_counter()
        for _ in range(args.repeats):
            tr = replay(tree, pol, 4)
        dt = (time.perf_counter() - t0) / args.repeats
        print(
            f"{pol.name:<22} {tr.n:>8} {tr.k:>6} {dt * 1e3:>10.2f} {1 / dt:>10.1f} {attempt_s / dt:>15.1f} {attempt_s / (dt / tr.n):>13.0f}"
        )
    print(
        "\nattempt/replay: how many replays (policy evaluations over the whole 600-node tree) cost as "
        "much as one real attempt (one node)."
    )


if __name__ == "__main__":
    main()
