"""Code-ranker scoring throughput (issue 33 item 6): candidates/s and tokens/s of Δ log p scoring,
with and without prefix reuse.

Run: ``nice -n 19 python benchmarks/code_ranker_bench.py [--tasks 4] [--model default]``. It reads
the committed pilot pools (``benchmarks/data/code_ranker/humanevalfix``), loads the model block's
backend and scores each pooled task's kept program and pooled candidates after the task prompt:

- **prefix reuse**: one ``score_continuations`` call per task (the prompt encoded once, its KV cache
  rewound after each continuation), as the ranker does;
- **no reuse**: one call per program (the prompt encoded again for every candidate).

Tokens read = prompt tokens (once, or once per program) + program tokens. Tests never assert
timings; the figures go to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

POOLS = Path(__file__).resolve().parent / "data" / "code_ranker" / "humanevalfix"


def main() -> None:
    """Measure and print one table row per mode."""
    from rsi_workbench.domains.code_repair import load_humanevalfix
    from rsi_workbench.domains.code_repair.lm_ranker import lm_prompt
    from rsi_workbench.domains.code_repair.pools import load_pools
    from rsi_workbench.domains.code_repair.rank_pools import pooled_candidates
    from rsi_workbench.models import load_backend
    from rsi_workbench.models.config import ModelConfig

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tasks", type=int, default=4, help="pooled tasks to score")
    ap.add_argument("--model", default="default")
    ap.add_argument("--cpu-threads", type=int, default=1)
    args = ap.parse_args()
    data, rows = load_pools(POOLS)
    tasks = {t.task_id: t for t in load_humanevalfix()}
    pooled = list(pooled_candidates(data).items())[: args.tasks]
    lm = load_backend(ModelConfig(name=args.model, cpu_threads=args.cpu_threads))
    work = [(lm_prompt(tasks[t]), [tasks[t].program, *(rows[t]["candidates"][i]["program"] for i in idx)])
            for t, idx in pooled]  # fmt: skip
    n_progs = sum(len(p) for _, p in work)
    lm.score_with_tokens(work[0][0], work[0][1][:1])  # warm-up (first-call allocations)
    t0 = time.perf_counter()
    with_reuse = sum(lm.score_with_tokens(prompt, progs)[1] for prompt, progs in work)
    t1 = time.perf_counter()
    without = sum(lm.score_with_tokens(prompt, [p])[1] for prompt, progs in work for p in progs)
    t2 = time.perf_counter()
    print(f"{platform.node()} cpus={os.cpu_count()} load={os.getloadavg()[0]:.1f} model={args.model} "
          f"threads={args.cpu_threads} tasks={len(work)} programs={n_progs}")  # fmt: skip
    print("| mode | programs | tokens read | s | programs/s | tokens/s |")
    print("|---|---|---|---|---|---|")
    for name, tok, s in (("prefix reuse", with_reuse, t1 - t0), ("no reuse", without, t2 - t1)):
        print(f"| {name} | {n_progs} | {tok} | {s:.1f} | {n_progs / s:.2f} | {tok / s:.1f} |")


if __name__ == "__main__":
    main()
