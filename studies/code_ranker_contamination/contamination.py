"""Contamination test of the code ranker (issue 45 item 5): rescore Δ log p on the 220 diagnostic
pools with the entry point and the function's locals renamed, and compare top-1 before and after
on canonical-fix pools and the others (pre-registration: this folder's README).

Run from the repository root (``RSI_WORKBENCH_DATA`` pointing at the dataset mirror):

    nice -n 10 python studies/code_ranker_contamination/contamination.py score [--tasks N]
    python studies/code_ranker_contamination/contamination.py analyse

``score`` renames each pooled task (:func:`rsi_workbench.domains.code_repair.rename.rename_task`,
seed 0) and scores its kept program and pooled candidates after the renamed prompt with the
diagnostic's model block, task by task: every task's scores are appended to
``lm_scores_renamed.jsonl`` as it finishes (the scorer's cache: a killed run resumes where it
stopped, losing at most the task in flight), then ``deltas.jsonl`` (Δ log p of every pooled
candidate before and after) and ``renamings.json`` are rewritten. ``analyse`` reads only the
committed files (no model) and writes ``summary.json``.
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
POOLS = ROOT / "benchmarks" / "data" / "code_ranker" / "humanevalfix"
OUT = ROOT / "benchmarks" / "data" / "code_ranker" / "contamination"
MODEL = {"backend": "transformers", "name": "default", "cpu_threads": 1}  # rank_pools.yaml's block
SEED = 0  # the renaming seed
N_TASKS_ALL = 164  # HumanEvalFix (Python)


def _load() -> tuple[dict[str, Any], dict[str, Any], dict[str, list[int]], dict[str, Any]]:
    from rsi_workbench.domains.code_repair import load_humanevalfix
    from rsi_workbench.domains.code_repair.pools import load_pools, pooled_candidates

    data, rows = load_pools(POOLS)
    tasks = {t.task_id: t for t in load_humanevalfix()}
    return data, rows, pooled_candidates(data), tasks


def canonical_fix(fix_program: str, reference: str) -> bool:
    """The split: a pool is canonical-fix when its fix is AST-identical to HumanEval's canonical
    solution (``declaration + canonical_solution``; ``ast.dump`` equality, so layout and comments
    do not count)."""
    return ast.dump(ast.parse(fix_program)) == ast.dump(ast.parse(reference))


def score(limit: int | None) -> None:
    from rsi_workbench.domains.code_repair.lm_ranker import LMScorer, lm_prompt
    from rsi_workbench.domains.code_repair.rename import rename_task
    from rsi_workbench.models import identity_of
    from rsi_workbench.models.config import ModelConfig

    data, rows, pooled, tasks = _load()
    OUT.mkdir(parents=True, exist_ok=True)
    cfg = ModelConfig(**MODEL)
    before = LMScorer(None, identity_of(cfg), None, load=_no_model)
    before.seed_from(POOLS / "lm_scores.jsonl")
    after = LMScorer.from_config(cfg, OUT / "lm_scores_renamed.jsonl")
    deltas, plans = [], {}
    t_start = time.perf_counter()
    for n, (tid, idx) in enumerate(sorted(pooled.items(), key=lambda kv: int(kv[0].split("/")[1]))):
        if limit is not None and n >= limit:
            break
        task = tasks[tid]
        cands = [rows[tid]["candidates"][i]["program"] for i in idx]
        new, new_cands, plan = rename_task(task, cands, seed=SEED)
        plans[tid] = plan.record()
        t0 = time.perf_counter()
        b = before.score(lm_prompt(task), [task.program, *cands])
        a = after.score(lm_prompt(new), [new.program, *new_cands])
        for i, sb, sa in zip(idx, b[1:], a[1:], strict=True):
            deltas.append(
                {"task_id": tid, "candidate": i, "fix": bool(rows[tid]["candidates"][i]["fix"]),
                 "before": round(sb[0] - b[0][0], 4), "after": round(sa[0] - a[0][0], 4)}
            )  # fmt: skip
        print(f"{tid}: {len(idx) + 1} programs in {time.perf_counter() - t0:.1f} s", flush=True)
    (OUT / "deltas.jsonl").write_text("".join(json.dumps(d) + "\n" for d in deltas))
    (OUT / "renamings.json").write_text(json.dumps(plans, indent=1, sort_keys=True) + "\n")
    print(
        f"{len(plans)} tasks, {len(deltas)} candidates, {time.perf_counter() - t_start:.0f} s; {after.throughput()}"
    )


def _no_model() -> Any:
    raise RuntimeError("an original score is missing from the committed lm_scores.jsonl")


def _top1(scores: Sequence[float], fix_pos: int) -> float:
    from rsi_workbench.domains.code_repair.rank_pools import top1

    return top1(scores, fix_pos)


def _did(per_task: Mapping[str, Mapping[str, list[float]]], *, seed: int = 0, n: int = 2000) -> list[float]:
    """Mean change on canonical-fix pools minus mean change on the others, with its interval
    resampling whole tasks (a task's pools of both kinds travel together)."""
    import numpy as np

    keys = sorted(per_task)
    sums = np.array(
        [[sum(per_task[k].get(s, [])), len(per_task[k].get(s, []))] for k in keys for s in ("c", "o")]
    )
    sums = sums.reshape(len(keys), 2, 2)

    def stat(ix: Any) -> float:
        t = sums[ix].sum(axis=0)
        return float(t[0, 0] / t[0, 1] - t[1, 0] / t[1, 1])

    rng = np.random.default_rng(seed)
    dist = [stat(rng.integers(0, len(keys), len(keys))) for _ in range(n)]
    return [stat(np.arange(len(keys))), float(np.percentile(dist, 2.5)), float(np.percentile(dist, 97.5))]


def analyse() -> dict[str, Any]:
    from rsi_workbench.metrics.bootstrap import cluster_interval

    data, rows, _, tasks = _load()
    deltas = [json.loads(x) for x in (OUT / "deltas.jsonl").read_text().splitlines() if x.strip()]
    d = {(r["task_id"], r["candidate"]): r for r in deltas}
    per: dict[str, dict[str, dict[str, list[float]]]] = {k: {} for k in ("before", "after", "change")}
    split_pools = {"c": 0, "o": 0}
    for p in data["pools"]:
        tid = p["task_id"]
        if any((tid, i) not in d for i in p["candidates"]):
            continue  # not scored (a subset run)
        s = "c" if canonical_fix(rows[tid]["candidates"][p["fix"]]["program"], tasks[tid].reference) else "o"
        split_pools[s] += 1
        pos = p["candidates"].index(p["fix"])
        b = _top1([d[tid, i]["before"] for i in p["candidates"]], pos)
        a = _top1([d[tid, i]["after"] for i in p["candidates"]], pos)
        for k, v in (("before", b), ("after", a), ("change", a - b)):
            per[k].setdefault(tid, {}).setdefault(s, []).append(v)
            per[k][tid].setdefault("all", []).append(v)

    def ci(k: str, s: str) -> list[float]:
        clusters = {t: v[s] for t, v in per[k].items() if s in v}
        return [round(x, 6) for x in cluster_interval(clusters, seed=0)]

    res: dict[str, Any] = {"pools": split_pools, "tasks": {}}
    for s, name in (("c", "canonical_fix"), ("o", "other"), ("all", "all")):
        res["tasks"][name] = sum(1 for v in per["change"].values() if s in v)
        res[name] = {k: ci(k, s) for k in ("before", "after", "change")}
    res["did_canonical_minus_other"] = [round(x, 6) for x in _did(per["change"])]
    n_tasks = res["tasks"]["all"]
    pools_all = split_pools["c"] + split_pools["o"]
    # implied effect over all 164 tasks: every pooled task holds the same number of pools, so the
    # pooled mean change times (pooled tasks / 164); tasks without a pool contribute 0
    res["implied_all_164"] = [round(x * n_tasks / N_TASKS_ALL, 6) for x in res["all"]["change"]]
    res["implied_formula"] = (
        f"(n_c*d_c + n_o*d_o) / (pools per task * {N_TASKS_ALL}) = mean pool change x "
        f"{n_tasks}/{N_TASKS_ALL} (n_c = {split_pools['c']}, n_o = {split_pools['o']} pools, "
        f"{pools_all // max(n_tasks, 1)} pools per pooled task)"
    )
    c_lo, c_hi = res["canonical_fix"]["change"][1:]
    o_lo, o_hi = res["other"]["change"][1:]
    if c_hi < 0 and o_lo <= 0 <= o_hi:
        verdict = "memorisation supported"
    elif c_lo <= 0 <= c_hi:
        verdict = "not supported"
    else:
        verdict = "neither"
    res["verdict"] = verdict
    (OUT / "summary.json").write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")
    return res


def table(res: Mapping[str, Any]) -> str:
    f = "{:.3f} [{:.3f}, {:.3f}]".format
    g = "{:+.3f} [{:+.3f}, {:+.3f}]".format
    lines = [
        "| pools | n pools | tasks | top-1 before | top-1 after (renamed) | change |",
        "|---|---:|---:|---|---|---|",
    ]
    for name, key in (("canonical-fix", "canonical_fix"), ("other", "other"), ("all", "all")):
        n = (
            res["pools"]["c"]
            if key == "canonical_fix"
            else res["pools"]["o"]
            if key == "other"
            else sum(res["pools"].values())
        )
        r = res[key]
        lines.append(
            f"| {name} | {n} | {res['tasks'][key]} | {f(*r['before'])} | {f(*r['after'])} | {g(*r['change'])} |"
        )
    lines.append(f"\ndifference in differences (canonical − other): {g(*res['did_canonical_minus_other'])}")
    lines.append(
        f"implied effect over all {N_TASKS_ALL} tasks: {g(*res['implied_all_164'])} ({res['implied_formula']})"
    )
    lines.append(f"verdict (pre-registered rule): {res['verdict']}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sc = sub.add_parser("score", help="rescore the renamed pools (resumable)")
    sc.add_argument("--tasks", type=int, default=None, help="only the first N pooled tasks (timing)")
    sub.add_parser("analyse", help="top-1 before and after, by split, from the committed files")
    args = ap.parse_args(argv)
    random.seed(0)
    if args.cmd == "score":
        score(args.tasks)
    else:
        print(table(analyse()))


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
