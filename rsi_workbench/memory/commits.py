"""Serial audited commits: the branch actor distils and reconciles against the CURRENT canonical
memory, the candidate is audited, installed, stored as a snapshot and written as an outcome record.

Only branches with a grounded PASS or FAIL verdict distil: a rejected project, an UNVERIFIED verdict
(unresolved evidence) or a branch that wrote into its snapshot leaves the memory as it was, and
infrastructure failures never reach this point. An :class:`InfraFailure` while distilling (e.g. a
model transport error) is retried at most twice, then the run stops ``infra`` (:class:`InfraStop`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from rsi_workbench.memory.audit import AuditReject, ShingleIndex, shingle_audit
from rsi_workbench.memory.branches import BranchResult
from rsi_workbench.memory.ledger import AUDIT_REJECT, INFRA, OUTCOME
from rsi_workbench.memory.settings import INFRA_RETRIES
from rsi_workbench.memory.snapshots import store_snapshot
from rsi_workbench.memory.tree import MemoryTree
from rsi_workbench.memory.types import InfraFailure, VerifierReport
from rsi_workbench.records import Run

T = TypeVar("T")


class InfraStop(RuntimeError):
    """Infrastructure failed three times in a row: the run stops with status ``infra`` (resumable)."""


def with_infra_retry(run: Run, fn: Callable[[], T], *, where: str, wave: int | None = None) -> T:
    """Call ``fn``; on InfraFailure log it and retry at most twice, then raise :class:`InfraStop`."""
    last = ""
    for attempt_no in range(1 + INFRA_RETRIES):
        try:
            return fn()
        except InfraFailure as e:
            last = f"{type(e).__name__}: {e}"
            run.append(INFRA, {"where": where, "wave": wave, "try": attempt_no + 1, "error": last})
    raise InfraStop(f"{where}: infrastructure failed {1 + INFRA_RETRIES} times; last: {last}")


def report_dict(r: VerifierReport) -> dict[str, Any]:
    return {"verdict": r.verdict, "evidence": list(r.evidence), "checks": _plain(r.checks)}


def _plain(obj: Any) -> Any:
    """A JSON-safe copy (mappings to dicts, unknown objects to their str)."""
    return json.loads(json.dumps(obj, default=_default, sort_keys=True))


def _default(o: Any) -> Any:
    if isinstance(o, Mapping):
        return dict(o)
    if isinstance(o, tuple | set | frozenset):
        return list(o)
    return str(o)


def _store_json(run: Run, obj: Any, name: str) -> str:
    data = json.dumps(obj, default=_default, sort_keys=True, separators=(",", ":")).encode()
    return run.put_artifact(data, name=name, media_type="application/json")


def terminal_outcome(res: BranchResult) -> str:
    return res.verdict if res.status == "ok" and res.verdict else res.status


def commit_branch(
    run: Run,
    res: BranchResult,
    canonical: MemoryTree,
    *,
    audit_index: ShingleIndex,
    wave_key: int,
    wave: int,
    phase: str,
    unit: str,
) -> tuple[MemoryTree, dict[str, Any]]:
    """Distil, audit and install one branch; return the new canonical memory and its outcome record."""
    before, after = canonical, canonical
    rejects: tuple[AuditReject, ...] = ()
    if res.status == "ok" and res.verdict in ("PASS", "FAIL") and res.actor and res.attempt:
        actor, attempt, report = res.actor, res.attempt, res.reports[-1]
        candidate = with_infra_retry(
            run, lambda: actor.distil(attempt, report, before), where=f"distil {res.project.id}", wave=wave
        )
        if not isinstance(candidate, MemoryTree):
            raise TypeError(f"actor.distil must return a MemoryTree, got {type(candidate).__name__}")
        audit = shingle_audit(candidate, audit_index, audit_index.n, canonical=before)
        after, rejects = audit.accepted, audit.rejects
    for rj in rejects:  # host-side only: no role ever sees these events
        run.append(
            AUDIT_REJECT,
            {
                "wave_key": wave_key,
                "wave": wave,
                "project_index": res.index,
                "project_id": res.project.id,
                "path": rj.path,
                "restored": rj.restored,
                "shingle": " ".join(rj.shingle),
                "hidden_from_agents": True,
            },
        )
    store_snapshot(run, after, label=f"w{wave}-p{res.index}", base=before, wave=wave, project_index=res.index)
    record = outcome_record(run, res, before, after, wave_key=wave_key, wave=wave, phase=phase, unit=unit)
    record["n_audit_rejects"] = len(rejects)
    run.append(OUTCOME, record, cycle=wave)
    return after, record


def outcome_record(
    run: Run,
    res: BranchResult,
    before: MemoryTree,
    after: MemoryTree,
    *,
    wave_key: int,
    wave: int,
    phase: str,
    unit: str,
) -> dict[str, Any]:
    """The per-project ledger line: indices, terminal outcome, cycles, reports, memory before/after, files."""
    diff = before.diff(after)
    rec: dict[str, Any] = {
        "wave_key": wave_key,
        "wave": wave,
        "phase": phase,
        "unit": unit,
        "project_index": res.index,
        "project_id": res.project.id,
        "instruction": res.project.instruction,
        "is_target": res.project.is_target,
        "seed": res.seed,
        "terminal_outcome": terminal_outcome(res),
        "verdict": res.verdict,
        "verification_cycles": len(res.reports),
        "verifier_reports": [report_dict(r) for r in res.reports],
        "attempts": res.attempts,
        "calls": res.calls,
        "infra_retries": len(res.infra_errors),
        "error": res.error,
        "memory_before": before.tree_hash(),
        "memory_after": after.tree_hash(),
        "memory_before_stats": before.stats(),
        "memory_after_stats": after.stats(),
        "files": diff.as_dict(),
        "n_files_changed": {k: len(v) for k, v in diff.as_dict().items()},
    }
    if res.attempt is not None:
        ev = res.attempt.evidence
        evidence = {"requirements": ev.requirements, "final_state": ev.final_state, "execution": ev.execution}
        rec["evidence_artifact"] = _store_json(run, evidence, f"evidence-p{res.index}.json")
        rec["private_artifact"] = _store_json(run, dict(res.attempt.private), f"private-p{res.index}.json")
    return rec
