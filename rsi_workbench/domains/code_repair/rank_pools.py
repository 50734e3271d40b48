"""The ranking diagnostic on pools that contain a fix: ``rsi-workbench tasks
rank-pools TASKS_OR_POOLS --ranker ...``.

Each ranker gives every candidate of a pool a score; a pool's top-1 is 1 when the fix has the
highest score (1/m when it ties with m - 1 others at the top, so ties score their expectation, never
a lucky order). ``top1_recall`` is the mean over pools with a task-clustered 95% bootstrap interval
(:func:`rsi_workbench.metrics.bootstrap.cluster_interval`: pools of one task resampled together);
``auroc_within_task`` is, per pooled task, the AUROC of the scores of its pooled candidates (fixes
against non-fixes; ties count one half), averaged over tasks, with the same clustered interval.

Rankers: ``random`` (seeded uniform scores), ``lm`` (Δ log p), ``lm_readout`` and
``features_readout`` (cross-fitted by task: each task's candidates are scored by a readout fitted
on the other folds' tasks only), ``minilm_verifier`` and ``minilm_world`` (the experiment's MiniLM
static verifier and world model, trained and cross-fitted as the experiment trains them:
:mod:`~rsi_workbench.domains.code_repair.pool_minilm`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rsi_workbench.domains.code_repair.lm_ranker import LMScorer, ReadoutPredictor, candidate_features
from rsi_workbench.domains.code_repair.pools import ArmUnavailable, pooled_candidates

RANKERS = ("lm", "lm_readout", "features_readout", "minilm_verifier", "minilm_world", "random")
MINILM = {"minilm_verifier", "minilm_world"}  # the experiment's predictors, trained here (pool_minilm)
FOLDS = 5


def _meta(c: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "operator": c["operator"],
        "operators": c["operator"].split("+"),
        "suspiciousness": c["suspiciousness"],
    }


def lm_features(
    rows: Mapping[str, Mapping[str, Any]],
    pooled: Mapping[str, list[int]],
    tasks: Mapping[str, Any],
    scorer: LMScorer | None,
) -> dict[str, dict[int, dict[str, float]]]:
    """Feature rows of every pooled candidate (with Δ log p when ``scorer``), per task and index."""
    from rsi_workbench.domains.code_repair.lm_ranker import lm_prompt

    out: dict[str, dict[int, dict[str, float]]] = {}
    for tid, idx in pooled.items():
        cands = rows[tid]["candidates"]
        if scorer is None:
            out[tid] = {i: candidate_features(_meta(cands[i]), None, None) for i in idx}
            continue
        kept = tasks[tid].program
        scored = scorer.score(lm_prompt(tasks[tid]), [kept, *(cands[i]["program"] for i in idx)])
        out[tid] = {
            i: candidate_features(_meta(cands[i]), s, scored[0]) for i, s in zip(idx, scored[1:], strict=True)
        }
    return out


def crossfit_scores(
    feats: Mapping[str, Mapping[int, Mapping[str, float]]],
    rows: Mapping[str, Mapping[str, Any]],
    tasks: Mapping[str, Any],
    *,
    use_lm: bool,
    seed: int,
    folds: int = FOLDS,
) -> dict[str, dict[int, float]]:
    """P(pass) of every pooled candidate from a readout fitted on the other folds' tasks."""
    tids = sorted(feats)
    if len(tids) < 2:
        raise ValueError(f"a cross-fitted readout needs at least 2 pooled tasks, got {len(tids)}")
    rng = random.Random(f"folds|{seed}")
    order = tids[:]
    rng.shuffle(order)
    k = min(folds, len(order))
    fold = {t: i % k for i, t in enumerate(order)}
    out: dict[str, dict[int, float]] = {}
    for f in range(k):
        train = [
            (feats[t][i], float(rows[t]["candidates"][i]["fix"]))
            for t in tids
            if fold[t] != f
            for i in feats[t]
        ]
        pred = ReadoutPredictor.fit(tasks, None, train, use_lm=use_lm)
        for t in (t for t in tids if fold[t] == f):
            idx = list(feats[t])
            from rsi_workbench.domains.code_repair.lm_ranker import apply_readout

            out[t] = dict(zip(idx, apply_readout(pred.weights, [feats[t][i] for i in idx]), strict=True))
    return out


def top1(scores: Sequence[float], fix_pos: int) -> float:
    """1/m when the fix is among the m candidates with the top score, else 0."""
    best = max(scores)
    at_top = [i for i, s in enumerate(scores) if s == best]
    return 1.0 / len(at_top) if fix_pos in at_top else 0.0


def auroc(scores: Sequence[float], labels: Sequence[bool]) -> float | None:
    """P(score of a positive > score of a negative) + 0.5 P(tie); None without both classes."""
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    if not pos or not neg:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def evaluate(
    data: Mapping[str, Any],
    rows: Mapping[str, Mapping[str, Any]],
    scores: Mapping[str, Mapping[int, float]],
    *,
    seed: int = 0,
) -> dict[str, Any]:
    """top-1 recall and within-task AUROC of per-candidate ``scores`` on the pools, with intervals."""
    from rsi_workbench.metrics.bootstrap import cluster_interval

    per_task: dict[str, list[float]] = {}
    for p in data["pools"]:
        s = [scores[p["task_id"]][i] for i in p["candidates"]]
        per_task.setdefault(p["task_id"], []).append(top1(s, p["candidates"].index(p["fix"])))
    m, lo, hi = cluster_interval(per_task, seed=seed)
    aucs: dict[str, list[float]] = {}
    for t, sc in scores.items():
        idx = sorted(sc)
        a = auroc([sc[i] for i in idx], [bool(rows[t]["candidates"][i]["fix"]) for i in idx])
        if a is not None:
            aucs[t] = [a]
    am, alo, ahi = cluster_interval(aucs, seed=seed)
    return {
        "top1_recall": [m, lo, hi],
        "auroc_within_task": [am, alo, ahi],
        "pools": len(data["pools"]),
        "tasks": len(per_task),
        "auroc_tasks": len(aucs),
    }


def rank_scores(
    ranker: str,
    data: Mapping[str, Any],
    rows: Mapping[str, Mapping[str, Any]],
    tasks: Mapping[str, Any],
    *,
    scorer: LMScorer | None,
    seed: int = 0,
    world: Mapping[str, Any] | None = None,
    train_dir: str | Path | None = None,
) -> dict[str, dict[int, float]]:
    """Per pooled task and candidate index, the ranker's score (higher = more likely the fix);
    the MiniLM rankers train (in ``train_dir``, default under ``runs/code_ranker/minilm/``) with
    the experiment's ``world`` block."""
    if ranker in MINILM:
        from rsi_workbench.domains.code_repair.pool_minilm import minilm_scores

        return minilm_scores(ranker, data, rows, world=world, seed=seed, train_dir=train_dir)
    if ranker not in RANKERS:
        raise ValueError(f"--ranker {ranker!r}: allowed {list(RANKERS)}")
    pooled = pooled_candidates(data)
    if ranker == "random":
        rng = random.Random(f"random-ranker|{seed}")
        return {t: {i: rng.random() for i in idx} for t, idx in sorted(pooled.items())}
    if ranker in ("lm", "lm_readout") and scorer is None:
        raise ValueError(f"--ranker {ranker} needs a model that scores continuations (--model)")
    feats = lm_features(rows, pooled, tasks, scorer if ranker != "features_readout" else None)
    if ranker == "lm":
        return {t: {i: f["delta_logp"] for i, f in fs.items()} for t, fs in feats.items()}
    return crossfit_scores(feats, rows, tasks, use_lm=ranker == "lm_readout", seed=seed)


def format_result(ranker: str, res: Mapping[str, Any]) -> str:
    """The printed lines: ``top1_recall: <value> [<lo>, <hi>]`` first, then AUROC and counts."""
    m, lo, hi = res["top1_recall"]
    am, alo, ahi = res["auroc_within_task"]
    return "\n".join(
        [
            f"top1_recall: {m:.3f} [{lo:.3f}, {hi:.3f}]",
            f"auroc_within_task: {am:.3f} [{alo:.3f}, {ahi:.3f}] ({res['auroc_tasks']} tasks)",
            f"ranker: {ranker}  pools: {res['pools']}  tasks: {res['tasks']}  chance top1: 0.250  "
            "(task-clustered 95% bootstrap intervals)",
        ]
    )


def run_rank_pools(
    source: str,
    ranker: str,
    *,
    pools_dir: str | Path | None = None,
    model: Any = None,
    seed: int = 0,
    n: int = 16,
    pools_per_task: int = 4,
    pools_seed: int = 0,
    limit: int | None = None,
    workers: int = 1,
    world: Mapping[str, Any] | None = None,
) -> tuple[str, dict[str, Any]]:
    """Rank the pools of ``source`` (a pools directory, a task file or ``humanevalfix``; the last two
    build their pools in ``pools_dir`` first, resumably) and return (printed text, summary)."""
    from rsi_workbench.domains.code_repair.pools import (
        PoolsError,
        build_pools,
        load_pools,
        load_source,
        pools_line,
    )

    src = Path(source)
    if src.is_dir():
        d = src
    else:
        _, _, sha = load_source(source)
        d = (
            Path(pools_dir)
            if pools_dir
            else Path("runs") / "code_ranker" / f"pools-{sha[:12]}-n{n}-p{pools_per_task}-s{pools_seed}"
        )
        build_pools(
            source, d, n=n, pools_per_task=pools_per_task, seed=pools_seed, limit=limit, workers=workers
        )
    data, rows = load_pools(d)
    tasks_by_id: dict[str, Any] = {}
    if ranker in ("lm", "lm_readout"):  # the prompts and kept programs, from the very task file
        loaded, _, sha = load_source(str(data["manifest"]["tasks"]) if src.is_dir() else source)
        if sha != data["manifest"]["tasks_sha256"]:
            raise PoolsError(
                f"{data['manifest']['tasks']}: its sha256 is not the one {d / 'manifest.json'} records "
                "(the task file changed since the pools were built); rank it from the task file itself"
            )
        tasks_by_id = {t.task_id: t for t in loaded}
    scorer = None
    if ranker in ("lm", "lm_readout"):
        if model is None:
            raise ValueError(f"--ranker {ranker} needs --model (a model block that scores)")
        scorer = model if isinstance(model, LMScorer) else LMScorer.from_config(model, d / "lm_scores.jsonl")
    scores = rank_scores(ranker, data, rows, tasks_by_id, scorer=scorer, seed=seed, world=world)
    res = evaluate(data, rows, scores, seed=seed)
    text = f"pools: {d}\n{pools_line(data)}\n" + format_result(ranker, res)
    if scorer is not None:
        text += "\n" + scorer.throughput()
        res["scoring"] = {
            "tokens_read": scorer.tokens_read,
            "seconds": round(scorer.seconds, 2),
            "calls": scorer.calls,
            "model": scorer.identity,
        }
    res.update({"ranker": ranker, "pools_dir": str(d), "seed": seed, "manifest": data["manifest"]})
    return text, res


def save_summary(path: str | Path, res: Mapping[str, Any]) -> None:
    """Write a summary (``--save``) as JSON."""
    Path(path).write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")


__all__ = [
    "ArmUnavailable",
    "RANKERS",
    "auroc",
    "crossfit_scores",
    "evaluate",
    "format_result",
    "rank_scores",
    "run_rank_pools",
    "top1",
]
