"""Eq. 6: evidenced contribution edges and contributor shares alpha.

Only direct publication, documented production and Lead coordination earn an edge; shares give
gamma to coordinators and 1 - gamma to producers of each hypothesis.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from rsi_workbench.discovery.credit.inputs import (
    NEVER_SUPERVISED,
    Assignment,
    ContributionClaim,
    ContributionEdge,
    HypothesisNode,
    Promotion,
    TrajectoryNode,
)


@dataclass(frozen=True)
class ShareSettings:
    """Eq. 6-7 constants: coordination ratio gamma, family budgets C_loc / C_glob, cap W_max."""

    gamma: float = 0.2
    c_loc: float = 2.0
    c_glob: float = 2.0
    w_max: float = 2.0


@dataclass(frozen=True)
class EdgeDecision:
    """Why a contribution claim was admitted or rejected (written to the records for audit)."""

    claim: ContributionClaim
    admitted: bool
    kind: Literal["coordination", "production"] | None
    reason: str


def admit_edges(
    claims: Iterable[ContributionClaim],
    trajectories: Mapping[str, TrajectoryNode],
    hypotheses: Mapping[str, HypothesisNode],
    promotions: Mapping[str, Promotion] = {},  # noqa: B006 - read-only default
    assignments: Mapping[str, Assignment] = {},  # noqa: B006
) -> list[EdgeDecision]:
    """Check each claim against the records; only publication, documented production and Lead coordination count.

    Direct publication needs publisher, episode and creation-time lineage to match; documented production
    needs the original proposal text hash, an exact draft promotion record, or a hash-and-path matched
    support file; Lead coordination needs an assignment or a publication/promotion record. Sharing an
    episode, appearing in the lineage or completing a worker call earns nothing.
    """
    out: list[EdgeDecision] = []
    for c in claims:
        t, h = trajectories.get(c.trajectory), hypotheses.get(c.hypothesis)
        if t is None or h is None:
            missing = "trajectory" if t is None else "hypothesis"
            out.append(EdgeDecision(c, False, None, f"unknown {missing}"))
            continue
        if t.role in NEVER_SUPERVISED:
            out.append(EdgeDecision(c, False, None, f"{t.role} records are context or provenance only"))
            continue
        ok, reason = _check(c, t, h, promotions, assignments)
        kind: Literal["coordination", "production"] | None = None
        if ok:
            kind = "coordination" if t.role == "lead" else "production"
        out.append(EdgeDecision(c, ok, kind, reason))
    return out


def _check(
    c: ContributionClaim,
    t: TrajectoryNode,
    h: HypothesisNode,
    promotions: Mapping[str, Promotion],
    assignments: Mapping[str, Assignment],
) -> tuple[bool, str]:
    lead = t.role == "lead"
    if c.basis == "direct_publication":
        if h.publisher != t.agent:
            return False, "publisher does not match the trajectory's agent"
        if h.episode != t.episode:
            return False, "episode does not match"
        if t.started_at > h.created_at:
            return False, "trajectory started after the hypothesis was created"
        return True, "Lead publication record (coordination only)" if lead else "direct publication"
    if c.basis == "proposal_text":
        if lead:
            return False, "Lead authorship unresolved: coordination needs an assignment or promotion record"
        if h.proposal_sha256 is None or h.proposal_sha256 not in t.text_sha256s:
            return False, "proposal text hash not written by the trajectory"
        if c.ref is not None and c.ref != h.proposal_sha256:
            return False, "claimed proposal text is not the hypothesis's original proposal"
        return True, "original proposal text"
    if c.basis == "support_file":
        if lead:
            return False, "Lead authorship unresolved: coordination needs an assignment or promotion record"
        path = c.ref or ""
        if path not in h.support_files or t.files.get(path) != h.support_files[path]:
            return False, "support file hash and path do not match"
        return True, "hash-and-path matched support file"
    if c.basis in ("draft_promotion", "promotion"):
        p = promotions.get(c.ref or "")
        if p is None or p.hypothesis != h.id:
            return False, "no matching promotion record"
        if lead and p.promoted_by == t.id:
            return True, "Lead promotion record"
        if not lead and p.draft_author == t.id:
            return True, "exact draft promotion"
        return False, "promotion record names another trajectory"
    if c.basis == "assignment":
        a = assignments.get(c.ref or "")
        if not lead:
            return False, "assignments credit only the coordinating Lead"
        if a is None or h.id not in a.hypotheses or a.lead != t.id:
            return False, "no matching assignment record"
        return True, "Lead work assignment"
    return False, f"{c.basis} earns no credit edge"


def contributor_shares(edges: Iterable[ContributionEdge], gamma: float = 0.2) -> dict[str, dict[str, float]]:
    """alpha_ih (eq. 6): gamma/|L_h| to coordinators, (1 - gamma)/|P_h| to producers; empty pools stay unallocated."""
    coord: dict[str, set[str]] = defaultdict(set)
    prod: dict[str, set[str]] = defaultdict(set)
    for e in edges:  # sets: a duplicated edge counts once
        (coord if e.kind == "coordination" else prod)[e.hypothesis].add(e.trajectory)
    alpha: dict[str, dict[str, float]] = defaultdict(dict)
    # sorted, not set order: set order varies with PYTHONHASHSEED, and the order of these dicts decides
    # the order of later float sums (w_i, table rows), so a recomputed credit must not depend on it
    for h in sorted(set(coord) | set(prod)):
        for i in sorted(coord.get(h, ())):
            alpha[h][i] = alpha[h].get(i, 0.0) + gamma / len(coord[h])
        for i in sorted(prod.get(h, ())):
            alpha[h][i] = alpha[h].get(i, 0.0) + (1.0 - gamma) / len(prod[h])
    return dict(alpha)
