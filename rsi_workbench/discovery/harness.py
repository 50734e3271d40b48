"""Harness replay (eq. 10) and accept-on-dev (eq. 11): one DiscoveryRSI improvement round.

    Psi_cand = Propose(psi_k; H_k),   psi_k+ = Select_dev({psi_k} u Psi_cand | theta_k, B)
    (theta_k+1, psi_k+1) = Accept_dev({theta_k, theta_k+} x {psi_k, psi_k+})

A round reads a finished campaign's records H_k, (1) assigns hypothesis credit and fine-tunes
theta_k+ on supported tokens (``credit``, ``sft``), (2) diagnoses where the workflow broke
(repeated exploration, failed tool calls, lost artifacts, premature convergence, sparse critique)
and proposes harness edits from those diagnoses, the incumbent always a candidate, (3) selects
psi_k+ on a development set of fresh questions -- dataset-outcome pairs the campaign never used --
with theta_k fixed and (4) evaluates the four pairs under one matched budget and records the
chosen pair with its evidence. A dev evaluation already recorded (same Lead, harness and dev
config) is replayed from its events; one never recorded is actually executed as a campaign.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rsi_workbench.discovery.lead import Lead
from rsi_workbench.discovery.records import DiscoveryRecords, load_records
from rsi_workbench.discovery.workflow import Harness
from rsi_workbench.records import Run

# ---------------------------------------------------------------------------------------------
# Diagnosis from the records
FailureKind = Literal[
    "repeated_exploration", "failed_tool_calls", "lost_artifacts", "premature_convergence", "sparse_critique"
]


@dataclass(frozen=True)
class Diagnosis:
    """A failure found by joining contributions and decisions with execution and delivery records."""

    kind: str
    count: int
    rate: float  # count relative to the opportunities it had
    evidence: tuple[str, ...]  # record ids (hypotheses, trajectories, tasks) it rests on
    detail: str


def diagnose(
    recs: DiscoveryRecords, run_path: Path | None = None, min_comparisons: int = 2
) -> list[Diagnosis]:
    """Find where work broke down in a campaign; every finding names the records it rests on."""
    found = [
        repeated_exploration(recs),
        failed_tool_calls(recs),
        lost_artifacts(recs, run_path),
        premature_convergence(recs),
        sparse_critique(recs, min_comparisons),
    ]
    return sorted((d for d in found if d is not None), key=lambda d: -d.rate)


def repeated_exploration(recs: DiscoveryRecords) -> Diagnosis | None:
    """The same executable analysis again, or Progress calling a revision a duplicate."""
    seen: set[str] = set()
    dups = []
    for t in recs.tasks:
        if t.fingerprint in seen:
            dups.append(t.hypothesis_id)
        seen.add(t.fingerprint)
    dups += [p.hypothesis_id for p in recs.progress if p.label == "duplicate" and p.hypothesis_id not in dups]
    if not dups:
        return None
    return Diagnosis(
        "repeated_exploration",
        len(dups),
        len(dups) / max(1, len(recs.hypotheses)),
        tuple(dups),
        "analyses repeated or judged duplicate by Progress",
    )


def failed_tool_calls(recs: DiscoveryRecords) -> Diagnosis | None:
    """Known-failed actions in the role transcripts, counted by tool."""
    failed = [t for t in recs.turns if t.failed]
    if not failed:
        return None
    tools = Counter((t.output.get("tool_call") or {}).get("name", "reply") for t in failed)
    return Diagnosis(
        "failed_tool_calls",
        len(failed),
        len(failed) / max(1, len(recs.turns)),
        tuple(sorted({t.trajectory_id for t in failed})),
        "failed actions by tool: " + ", ".join(f"{k}={v}" for k, v in sorted(tools.items())),
    )


def lost_artifacts(recs: DiscoveryRecords, run_path: Path | None = None) -> Diagnosis | None:
    """Executions that failed or were blocked, required outputs missing, or outputs gone from the store."""
    tasks = {t.task_id: t for t in recs.tasks}
    lost = []
    for e in recs.executions:
        task = tasks.get(e.task_id)
        missing = [o for o in (task.required_outputs if task else []) if o not in e.outputs]
        gone = run_path is not None and any(
            not (run_path / "artifacts" / sha).exists() for sha in e.outputs.values()
        )
        if e.status != "ok" or missing or gone:
            lost.append(e.hypothesis_id)
    if not lost:
        return None
    return Diagnosis(
        "lost_artifacts",
        len(lost),
        len(lost) / max(1, len(recs.executions)),
        tuple(lost),
        "executions failed/blocked or deliverables missing",
    )


def premature_convergence(recs: DiscoveryRecords) -> Diagnosis | None:
    """Late episodes stop opening new questions, or the last Progress labels are all stale."""
    decisions = sorted(recs.lead_decisions, key=lambda d: d.episode)
    decisions = [d for d in decisions if d.valid]
    late = decisions[len(decisions) // 2 :]
    late_restarts = sum(d.operation == "restart" for d in late)
    stale = [p.hypothesis_id for p in recs.progress[-3:] if p.label in ("duplicate", "insufficient_evidence")]
    if not (late and (late_restarts == 0 or len(stale) >= 3)):
        return None
    return Diagnosis(
        "premature_convergence",
        len(late) - late_restarts,
        1.0 - late_restarts / len(late),
        tuple(stale),
        f"{late_restarts} restarts in the last {len(late)} decisions; last labels stale: {len(stale)}",
    )


def sparse_critique(recs: DiscoveryRecords, min_comparisons: int = 2) -> Diagnosis | None:
    """Versions with too few effective (non-abstaining) comparisons to be rated."""
    n_cmp: Counter[str] = Counter()
    for c in recs.critiques:
        if c.outcome != "abstain":
            n_cmp[c.a] += 1
            n_cmp[c.b] += 1
    sparse = [h.hypothesis_id for h in recs.hypotheses if n_cmp[h.hypothesis_id] < min_comparisons]
    if not sparse:
        return None
    return Diagnosis(
        "sparse_critique",
        len(sparse),
        len(sparse) / max(1, len(recs.hypotheses)),
        tuple(sparse),
        f"versions with fewer than {min_comparisons} effective comparisons",
    )


def _edit(h: Harness, kind: str) -> tuple[Harness, str] | None:
    """One harness edit addressing one diagnosed failure; None if the edit would change nothing."""
    r, c, o = h.roles, h.critique, h.operations
    if kind == "repeated_exploration":
        new = h.model_copy(
            update={
                "roles": r.model_copy(
                    update={
                        "stale_after": max(1, r.stale_after - 1),
                        "max_children": max(1, r.max_children - 1),
                    }
                )
            }
        )
        what = "leave stale directions and crowded nodes sooner (stale_after-1, max_children-1)"
    elif kind in ("failed_tool_calls", "lost_artifacts"):
        new = h.model_copy(
            update={"roles": r.model_copy(update={"unavailable_rate": round(r.unavailable_rate / 2, 4)})}
        )
        what = "show Generation the cohort's recorded data first (unavailable_rate halved)"
    elif kind == "premature_convergence":
        new = h.model_copy(
            update={
                "roles": r.model_copy(update={"explore_rate": round(min(1.0, r.explore_rate + 0.1), 4)}),
                "operations": o.model_copy(update={"restart": round(min(1.0, o.restart + 0.1), 4)}),
            }
        )
        what = "more room for scientific restarts (explore_rate+0.1, restart budget+0.1)"
    elif kind == "sparse_critique":
        new = h.model_copy(
            update={
                "critique": c.model_copy(update={"comparisons_per_version": c.comparisons_per_version + 1})
            }
        )
        what = "one more blinded comparison per new version"
    else:
        return None
    if new.digest() == h.digest():
        return None
    return new.model_copy(update={"version": f"{h.version}+{kind}"}), what


def propose_edits(
    incumbent: Harness, diagnoses: list[Diagnosis], max_candidates: int = 2
) -> list[tuple[Harness, str]]:
    """Psi_cand (eq. 10): edits from the most frequent failures first, deduplicated, never the incumbent."""
    out: list[tuple[Harness, str]] = []
    seen = {incumbent.digest()}
    for d in diagnoses:
        if len(out) >= max_candidates:
            break
        e = _edit(incumbent, d.kind)
        if e is not None and e[0].digest() not in seen:
            seen.add(e[0].digest())
            out.append((e[0], f"{d.kind}: {e[1]}"))
    return out


# ---------------------------------------------------------------------------------------------
# Dev evaluation under a matched budget
@dataclass(frozen=True)
class DevScore:
    """Dev-set outcome of one (theta, psi) pair under the matched budget.

    ``value`` (the selection key) is the research yield: the DFM-Bench weighted profile summed over
    *distinct* executable analyses per hypothesis version the budget paid for -- a repeated analysis
    adds nothing (it is the same duplicate suppression credit applies). Ties fall to quality,
    reliability, then lower cost.
    """

    lead: str
    harness: str
    value: float
    quality: float  # mean weighted profile over distinct analyses
    best: float  # mean over dev questions of the best version's weighted profile
    versions: float  # hypothesis versions per campaign
    duplicates: float  # repeated analyses per campaign
    breadth: float  # lineage families per campaign
    reliability: float  # share of executions that ran ok
    invalid_decisions: int
    agent_calls: float
    external_feedback: float
    runs: tuple[str, ...]
    replayed: bool = False

    @property
    def key(self) -> tuple[float, float, float, float]:
        return (round(self.value, 6), round(self.quality, 6), round(self.reliability, 6), -self.agent_calls)


def dev_score(paths: list[Path], lead: str, harness: str) -> DevScore:
    """Score finished dev campaigns from their records (a pure function of the records)."""
    q: list[float] = []
    best: list[float] = []
    fam, rel, n_versions, n_dups = [], [], 0, 0
    inv, calls, fb = 0, 0.0, 0.0
    for p in paths:
        recs = load_records(p)
        prof = {x.hypothesis_id: x.weighted for x in recs.profiles}
        seen: set[str] = set()
        for t in recs.tasks:
            if t.fingerprint in seen:
                n_dups += 1
                continue
            seen.add(t.fingerprint)
            if t.hypothesis_id in prof:
                q.append(prof[t.hypothesis_id])
        n_versions += len(recs.hypotheses)
        by_dir: dict[str, float] = {}
        for h in recs.hypotheses:
            if h.hypothesis_id in prof:
                by_dir[h.direction] = max(by_dir.get(h.direction, 0.0), prof[h.hypothesis_id])
        best += list(by_dir.values())
        fam.append(len({h.family for h in recs.hypotheses}))
        ex = recs.executions
        rel.append(sum(e.status == "ok" for e in ex) / max(1, len(ex)))
        inv += sum(not d.valid for d in recs.lead_decisions)
        for e in Run.open(p).events("budget_spent"):
            if e.payload["budget"] == "agent_calls":
                calls += float(e.payload["amount"])
            elif e.payload["budget"] == "external_feedback":
                fb += float(e.payload["amount"])
    mean = statistics.fmean
    n = max(1, len(paths))
    return DevScore(
        lead,
        harness,
        sum(q) / max(1, n_versions),
        mean(q) if q else 0.0,
        mean(best) if best else 0.0,
        n_versions / n,
        n_dups / n,
        mean(fam) if fam else 0.0,
        mean(rel) if rel else 0.0,
        inv,
        calls / n,
        fb / n,
        tuple(str(p) for p in paths),
    )


@dataclass
class Policy:
    """theta: a named Lead; ``digest`` identifies it for replay (a checkpoint's sha256, or the rule name)."""

    name: str
    digest: str
    make: Callable[[], Lead]


def select_dev(
    scores: dict[tuple[str, str], DevScore], incumbent: tuple[str, str], min_gain: float = 0.0
) -> tuple[str, str]:
    """The best pair by :attr:`DevScore.key`, preferring fewer changes on ties; a challenger must beat
    the incumbent's value by more than ``min_gain`` -- otherwise nothing changes."""
    inc = scores[incumbent]

    def changes(k: tuple[str, str]) -> int:
        return int(k[0] != incumbent[0]) + int(k[1] != incumbent[1])

    best = max(scores, key=lambda k: (scores[k].key, -changes(k)))
    if best != incumbent and scores[best].value <= inc.value + min_gain:
        return incumbent
    return best
