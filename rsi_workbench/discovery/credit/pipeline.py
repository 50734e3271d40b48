"""The whole credit pipeline, eq. 2-7 and 9 end to end, keeping every intermediate table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rsi_workbench.discovery.credit.caps import CappedWeight, family_caps, trajectory_weights
from rsi_workbench.discovery.credit.inputs import (
    Assessment,
    Assignment,
    Comparison,
    ContributionClaim,
    ContributionEdge,
    HypothesisNode,
    Promotion,
    TrajectoryNode,
)
from rsi_workbench.discovery.credit.rating import HypothesisRating, TrueSkillSettings, rate_hypotheses
from rsi_workbench.discovery.credit.release import TrainingRelease, training_weights
from rsi_workbench.discovery.credit.shares import (
    EdgeDecision,
    ShareSettings,
    admit_edges,
    contributor_shares,
)
from rsi_workbench.discovery.credit.weight import HypothesisWeight, WeightSettings, hypothesis_weights


@dataclass(frozen=True)
class CreditSettings:
    """All credit constants in one place (paper defaults)."""

    trueskill: TrueSkillSettings = TrueSkillSettings()
    weight: WeightSettings = WeightSettings()
    shares: ShareSettings = ShareSettings()
    eta: Mapping[str, float] | None = None


@dataclass(frozen=True)
class CreditRecords:
    """Everything the credit pipeline reads from a research graph."""

    hypotheses: Mapping[str, HypothesisNode]
    trajectories: Mapping[str, TrajectoryNode]
    comparisons: Sequence[Comparison]
    assessments: Sequence[Assessment]
    claims: Sequence[ContributionClaim]
    promotions: Mapping[str, Promotion] = field(default_factory=dict)
    assignments: Mapping[str, Assignment] = field(default_factory=dict)


@dataclass(frozen=True)
class CreditResult:
    """Every intermediate table of the pipeline, so a decision can be recomputed and audited."""

    ratings: dict[str, HypothesisRating]
    weights: dict[str, HypothesisWeight]
    edges: list[EdgeDecision]
    alpha: dict[str, dict[str, float]]
    capped: dict[str, CappedWeight]
    b: dict[tuple[str, str], float]
    w: dict[str, float]
    release: TrainingRelease


def assign_credit(records: CreditRecords, settings: CreditSettings = CreditSettings()) -> CreditResult:
    """Eq. 2-7 and 9 end to end: ratings, hypothesis weights, admitted edges, shares, caps, w and omega."""
    ratings = rate_hypotheses(records.comparisons, records.hypotheses, settings.trueskill)
    weights = hypothesis_weights(ratings, records.assessments, records.hypotheses, settings.weight)
    decisions = admit_edges(
        records.claims, records.trajectories, records.hypotheses, records.promotions, records.assignments
    )
    edges = [
        ContributionEdge(d.claim.trajectory, d.claim.hypothesis, d.kind, d.claim.basis, d.claim.ref)
        for d in decisions
        if d.admitted and d.kind is not None
    ]
    alpha = contributor_shares(edges, settings.shares.gamma)
    q = {h: hw.q for h, hw in weights.items() if hw.q is not None}
    capped = family_caps(q, records.hypotheses, settings.shares.c_loc, settings.shares.c_glob)
    w, b = trajectory_weights(alpha, {h: c.q_tilde for h, c in capped.items()}, settings.shares.w_max)
    release = training_weights(w, records.trajectories, settings.eta)
    return CreditResult(ratings, weights, decisions, alpha, capped, b, w, release)
