"""The code-repair experiment's MiniLM predictors as rank-pools rankers:
``minilm_verifier`` (the static verifier) and ``minilm_world`` (the world model).

They are trained exactly as the experiment trains them (:func:`~rsi_workbench.domains.code_repair.
predictor.trained_predictor`: E0 transitions of the pooled tasks' own mutation-coder rounds plus
injected bugs, cross-fitted by problem, so a task is scored by a model whose training never saw
it), in ``train_dir`` (default ``runs/code_ranker/minilm/<sha of the setting and the pools>/``;
resumable: a second call loads the checkpoints). A pooled
candidate's score is the predictor's P(all public tests pass) of the candidate (its unified diff
against the buggy program, the program and the public tests' statuses; hidden tests never enter
any text). ``world``: the experiment's ``world:`` block (``encoder``, ``folds``, ``train_epochs``,
``train_pool``, ``injected_per_problem``, ``lr`` (the world model's learning rates), ...).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

KINDS = {"minilm_verifier": "static_verifier", "minilm_world": "world_model"}


def minilm_scores(
    ranker: str,
    data: Mapping[str, Any],
    rows: Mapping[str, Mapping[str, Any]],
    *,
    world: Mapping[str, Any] | None = None,
    seed: int = 0,
    train_dir: str | Path | None = None,
) -> dict[str, dict[int, float]]:
    """Per pooled task and candidate index, the MiniLM predictor's P(all public tests pass)."""
    from rsi_workbench.agents import Candidate
    from rsi_workbench.domains.code_repair import Sandbox, unified_diff
    from rsi_workbench.domains.code_repair.binding import CodeRepairEnvironment, ExecutionCache
    from rsi_workbench.domains.code_repair.pools import pooled_candidates
    from rsi_workbench.domains.code_repair.predictor import (
        deterministic_torch,
        save_features,
        trained_predictor,
    )
    from rsi_workbench.domains.code_repair.task_source import TaskSource, load_tasks
    from rsi_workbench.domains.code_repair.world_settings import WorldSettings

    pooled = pooled_candidates(data)
    source = str(data["manifest"]["tasks"])
    src = TaskSource.model_validate(
        {"path": None if source == "humanevalfix" else source, "ids": sorted(pooled)}
    )
    w = WorldSettings.model_validate(dict(world or {}))
    if len(pooled) < w.folds:
        from rsi_workbench.domains.code_repair.pools import ArmUnavailable

        raise ArmUnavailable(
            f"--ranker {ranker}: cross-fitting needs at least world.folds = {w.folds} pooled tasks, "
            f"the pools hold {len(pooled)}"
        )
    deterministic_torch(1)  # the experiment's default torch_threads
    tasks = load_tasks(src)
    key = {"world": w.model_dump(mode="json"), "manifest": data["manifest"], "tasks": sorted(pooled)}
    tag = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:12]
    out = Path(train_dir) if train_dir is not None else Path("runs") / "code_ranker" / "minilm" / tag
    out.mkdir(parents=True, exist_ok=True)
    env = CodeRepairEnvironment(tasks, Sandbox(None), cache=ExecutionCache(out / "exec_cache.jsonl"))
    pred = trained_predictor(w, KINDS[ranker], seed, tasks, env, out, source=src.path)
    scores: dict[str, dict[int, float]] = {}
    for tid, idx in sorted(pooled.items()):
        state, _ = env.initial(tid)
        cands = rows[tid]["candidates"]
        acts = [
            Candidate(
                cands[i]["program"],
                unified_diff(state.program, cands[i]["program"]),
                {"operator": cands[i]["operator"], "suspiciousness": cands[i]["suspiciousness"]},
            )
            for i in idx
        ]
        preds = pred.predict(tid, state, acts)
        scores[tid] = {i: float(p.utility_terms["p_all_pass"]) for i, p in zip(idx, preds, strict=True)}
    save_features()
    return scores


__all__ = ["KINDS", "minilm_scores"]
