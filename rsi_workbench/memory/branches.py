"""One branch: a fresh actor in a fresh workspace on its own copy of the pre-wave snapshot.

:func:`run_branch` runs attempt/verify cycles (at most ``max_verification_cycles``, stopping at the
first PASS or UNVERIFIED), then re-hashes the branch's materialised snapshot: a branch that wrote
into it fails (``snapshot_write``). An :class:`InfraFailure` anywhere (opening the workspace, the
actor's transport, the verifier) retries the whole branch with a fresh actor and workspace at most
:data:`INFRA_RETRIES` times, then the branch ends ``infra``: never scored, never a lesson.
:func:`run_branches` runs a wave's branches ``min(max_parallel, n)`` threads at a time and
returns their results in authored order; the engine appends its events serially, and what a
branch's roles append from its thread (a model role's ``model_call`` events) is held per branch and
written in branch order (:func:`~rsi_workbench.records.ordered.ordered_map`), so the run's events
are those of one branch after another.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Literal

from rsi_workbench.memory.roles import Actor, Environment, Purpose, Verifier, Workspace
from rsi_workbench.memory.settings import INFRA_RETRIES
from rsi_workbench.memory.snapshots import (
    SnapshotMutated,
    check_untouched,
    materialise,
    remove_materialised,
)
from rsi_workbench.memory.tree import MemoryTree
from rsi_workbench.memory.types import Attempt, InfraFailure, Project, ProjectRejected, VerifierReport
from rsi_workbench.records.ordered import ordered_map

BranchStatus = Literal["ok", "rejected", "snapshot_write", "infra"]


@dataclass
class BranchResult:
    """What one branch left for the serial commit: its actor (history kept), last attempt, reports."""

    index: int  # the project index in the run's ledger
    project: Project
    seed: int
    status: BranchStatus
    actor: Actor | None = None
    attempt: Attempt | None = None
    reports: list[VerifierReport] = field(default_factory=list)
    attempts: int = 0  # actor.attempt calls that completed
    calls: int = 0  # model calls / search steps the attempts reported
    infra_errors: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def verdict(self) -> str | None:
        return self.reports[-1].verdict if self.reports and self.status == "ok" else None


@dataclass(frozen=True)
class BranchSpec:
    index: int
    project: Project
    seed: int
    purpose: Purpose


def _close(ws: Workspace | None) -> None:
    if ws is None:
        return
    try:
        ws.close()
    except InfraFailure:  # a workspace that fails to close is the infrastructure's problem, not the branch's
        pass


def _cycles(
    actor: Actor,
    verifier: Verifier,
    project: Project,
    ws: Workspace,
    mem: MemoryTree,
    max_cycles: int,
    out: BranchResult,
) -> None:
    feedback: VerifierReport | None = None
    for _ in range(max_cycles):
        attempt = actor.attempt(project, ws, mem, feedback)
        if attempt.project.id != project.id:
            raise ValueError(f"actor returned an attempt for {attempt.project.id!r}, not {project.id!r}")
        out.attempt, out.attempts, out.calls = attempt, out.attempts + 1, out.calls + int(attempt.calls)
        report = verifier.verify(project, attempt.evidence)
        out.reports.append(report)
        if report.verdict != "FAIL":
            return
        feedback = report


def run_branch(
    spec: BranchSpec,
    snapshot: MemoryTree,
    *,
    env: Environment,
    actor_factory: Callable[[], Actor],
    verifier: Verifier,
    max_cycles: int,
    workdir: str | Path | None = None,
) -> BranchResult:
    """Run one project from ``snapshot``; retry infrastructure failures at most twice."""
    errors: list[str] = []
    for attempt_no in range(1 + INFRA_RETRIES):
        res = BranchResult(spec.index, spec.project, spec.seed, "ok", infra_errors=errors)
        tmp = tempfile.mkdtemp(prefix=f"rsiagent-p{spec.index}-t{attempt_no}-", dir=workdir)
        mem = materialise(snapshot, Path(tmp) / "memory")
        ws: Workspace | None = None
        try:
            res.actor = actor_factory()  # a fresh actor: the history resets per task, memory persists
            ws = env.open(spec.project, seed=spec.seed, purpose=spec.purpose)
            _cycles(res.actor, verifier, spec.project, ws, mem, max_cycles, res)
            check_untouched(mem, who=f"branch {spec.index} ({spec.project.id})")
            return res
        except ProjectRejected as e:
            res.status, res.error, res.reports = "rejected", str(e), []
            return res
        except SnapshotMutated as e:
            res.status, res.error = "snapshot_write", str(e)
            return res
        except InfraFailure as e:
            errors.append(f"{type(e).__name__}: {e}")
        finally:
            _close(ws)
            remove_materialised(mem)
            shutil.rmtree(tmp, ignore_errors=True)
    return BranchResult(spec.index, spec.project, spec.seed, "infra", infra_errors=errors, error=errors[-1])


def run_branches(
    specs: Sequence[BranchSpec],
    snapshot: MemoryTree,
    *,
    env: Environment,
    actor_factory: Callable[[], Actor],
    verifier: Verifier,
    max_cycles: int,
    max_parallel: int,
    workdir: str | Path | None = None,
) -> list[BranchResult]:
    """Every branch from the same immutable ``snapshot``, ``min(max_parallel, n)`` at a time, in order."""
    if not specs:
        return []
    one = partial(
        run_branch,
        env=env,
        actor_factory=actor_factory,
        verifier=verifier,
        max_cycles=max_cycles,
        workdir=workdir,
    )
    workers = min(max_parallel, len(specs))
    if workers == 1:
        return [one(s, snapshot) for s in specs]
    # what a branch's roles append from its thread (a model role's model_call events, a text
    # environment's records) is held per branch and written in branch order, as with one worker
    results, held = ordered_map(lambda s: one(s, snapshot), specs, workers)
    for buf in held:
        buf.flush()
    return results
