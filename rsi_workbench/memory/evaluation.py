"""Freeze and known-target evaluation, and recursion-curve probes.

After learning the memory is frozen (stored as a snapshot, ``memory_frozen`` event): curriculum
access and memory writes are closed (nothing here calls the curriculum, the verifier or
``actor.distil``), the memory is copied to a FRESH actor per target, each target runs in a reset
environment (a new workspace, purpose ``evaluation``), with no learning and one attempt. Only here
(and in curve probes, which do the same with the current memory) is ``env.official_score`` called.
Each evaluation records the hash of the memory folder the actor had after its attempt; any record
that does not match the frozen snapshot hash raises :class:`FrozenMemoryMismatch`.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from rsi_workbench.memory.commits import with_infra_retry
from rsi_workbench.memory.ledger import EVALUATION, FROZEN
from rsi_workbench.memory.roles import Actor, Environment, Workspace
from rsi_workbench.memory.scores import check_score
from rsi_workbench.memory.snapshots import materialise, remove_materialised, store_snapshot
from rsi_workbench.memory.tree import MemoryTree
from rsi_workbench.memory.types import InfraFailure, Project, ProjectRejected
from rsi_workbench.records import Run


class FrozenMemoryMismatch(RuntimeError):
    """The memory an evaluation used does not hash to the frozen snapshot."""


def _score_one(
    env: Environment, actor_factory: Callable[[], Actor], target: Project, seed: int, memory: MemoryTree
) -> dict[str, Any]:
    """One fresh actor, one reset workspace, one attempt with a private copy of ``memory``."""
    tmp = tempfile.mkdtemp(prefix=f"rsiagent-eval-{target.id}-")
    mem = materialise(memory, Path(tmp) / "memory")
    ws: Workspace | None = None
    try:
        actor = actor_factory()
        try:
            ws = env.open(target, seed=seed, purpose="evaluation")
        except ProjectRejected as e:
            return {"score": 0.0, "status": "rejected", "error": str(e), "memory": memory.tree_hash()}
        attempt = actor.attempt(target, ws, mem, None)
        score = check_score(env.official_score(ws), who=f"official score of {target.id}")
        try:
            observed = MemoryTree.from_dir(mem.path).tree_hash()
        except Exception:  # a link or bad name appeared in the copy
            observed = "unreadable"
        return {"score": score, "status": "ok", "memory": observed, "calls": int(attempt.calls)}
    finally:
        if ws is not None:
            try:
                ws.close()
            except InfraFailure:
                pass
        remove_materialised(mem)
        shutil.rmtree(tmp, ignore_errors=True)


def score_targets(
    run: Run,
    memory: MemoryTree,
    *,
    env: Environment,
    actor_factory: Callable[[], Actor],
    targets: Sequence[Project],
    seeds: Sequence[int],
    kind: str,
    detail: dict[str, Any],
) -> dict[str, float]:
    """Score every target with a fresh actor on ``memory``; append one ``kind`` event per target."""
    scores: dict[str, float] = {}
    want = memory.tree_hash()
    for target, seed in zip(targets, seeds, strict=True):
        rec = with_infra_retry(
            run,
            partial(_score_one, env, actor_factory, target, seed, memory),
            where=f"{kind} {target.id}",
        )
        run.append(kind, {**detail, "target": target.id, "seed": seed, "frozen": want, **rec})
        if rec["memory"] != want:
            raise FrozenMemoryMismatch(
                f"{kind} of {target.id}: the memory after the attempt hashes to {str(rec['memory'])[:12]}, "
                f"not the frozen snapshot {want[:12]}; evaluation must not write memory"
            )
        scores[target.id] = float(rec["score"])
    return scores


def freeze_and_evaluate(
    run: Run,
    memory: MemoryTree,
    *,
    env: Environment,
    actor_factory: Callable[[], Actor],
    targets: Sequence[Project],
    seeds: Sequence[int],
    canonical_hash: Callable[[], str],
) -> tuple[str, dict[str, float]]:
    """Freeze ``memory``, evaluate every target on it, and check the final record against the freeze."""
    frozen = store_snapshot(run, memory, label="frozen", base=memory)  # its files were stored when committed
    run.append(FROZEN, memory.stats())
    run.commit()
    scores = score_targets(
        run,
        memory,
        env=env,
        actor_factory=actor_factory,
        targets=targets,
        seeds=seeds,
        kind=EVALUATION,
        detail={"frozen_snapshot": frozen},
    )
    final = canonical_hash()
    if final != frozen:
        raise FrozenMemoryMismatch(
            f"the canonical memory {final[:12]} changed after the freeze {frozen[:12]}"
        )
    return frozen, scores
