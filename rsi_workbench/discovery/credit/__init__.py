"""Hypothesis credit optimization (DiscoveryRSI eq. 2-7, 9): evaluation to bounded trajectory weights.

Three links, each a pure function of typed records and declared thresholds:
  1. evaluation (eq. 2, :mod:`.rating`): blinded Critique preferences -> a TrueSkill posterior
     (mu, sigma, n) per hypothesis version, using the ``trueskill`` package; abstentions update nothing;
  2. hypothesis weight (eq. 3-5, :mod:`.weight`): conservative score s = mu - kappa*sigma, tie-aware
     rank within a stratum, reliability factors and the bounded transform q; missing assessments stay
     unknown;
  3. contributor shares (eq. 6, :mod:`.shares`) and family caps (eq. 7, :mod:`.caps`): only
     evidenced contribution edges, shares alpha with coordination ratio gamma, duplicate suppression,
     local/global family budgets, w = min(W_max, sum b).
Training weights omega (eq. 9, :mod:`.release`) are then frozen into a :class:`TrainingRelease` for
``sft.py``. :mod:`.pipeline` runs the chain end to end (``assign_credit``), :mod:`.tables` turns its
result into credit tables, and :mod:`.from_records` maps a run's records onto the typed inputs
(:mod:`.inputs`). Proposition 1 (allocation <= q~_h, family totals <= C_glob, w in [0, W_max]) holds
by construction and is property-tested.
"""

from __future__ import annotations

from rsi_workbench.discovery.credit.caps import (
    CappedWeight,
    family_caps,
    trajectory_weights,
)
from rsi_workbench.discovery.credit.from_records import (
    credit_records_from,
)
from rsi_workbench.discovery.credit.inputs import (
    NEVER_SUPERVISED,
    PROGRESS_LABELS,
    ROLES,
    WORKER_ROLES,
    Assessment,
    Assignment,
    Basis,
    Comparison,
    ContributionClaim,
    ContributionEdge,
    HypothesisNode,
    Outcome,
    ProgressLabel,
    Promotion,
    Role,
    TrajectoryNode,
)
from rsi_workbench.discovery.credit.pipeline import (
    CreditRecords,
    CreditResult,
    CreditSettings,
    assign_credit,
)
from rsi_workbench.discovery.credit.rating import (
    HypothesisRating,
    TrueSkillSettings,
    draw_margin_from_probability,
    draw_probability_from_margin,
    rate_hypotheses,
)
from rsi_workbench.discovery.credit.release import (
    TrainingRelease,
    training_weights,
)
from rsi_workbench.discovery.credit.shares import (
    EdgeDecision,
    ShareSettings,
    admit_edges,
    contributor_shares,
)
from rsi_workbench.discovery.credit.tables import (
    credit_tables,
)
from rsi_workbench.discovery.credit.weight import (
    HypothesisWeight,
    WeightSettings,
    bounded_weight,
    conservative_score,
    coverage_reliability,
    default_stratum,
    hypothesis_weights,
    tie_aware_rank,
    uncertainty_reliability,
)

__all__ = [
    "Assessment",
    "Assignment",
    "Basis",
    "CappedWeight",
    "Comparison",
    "ContributionClaim",
    "ContributionEdge",
    "CreditRecords",
    "CreditResult",
    "CreditSettings",
    "EdgeDecision",
    "HypothesisNode",
    "HypothesisRating",
    "HypothesisWeight",
    "NEVER_SUPERVISED",
    "Outcome",
    "PROGRESS_LABELS",
    "ProgressLabel",
    "Promotion",
    "ROLES",
    "Role",
    "ShareSettings",
    "TrainingRelease",
    "TrajectoryNode",
    "TrueSkillSettings",
    "WORKER_ROLES",
    "WeightSettings",
    "admit_edges",
    "assign_credit",
    "bounded_weight",
    "conservative_score",
    "contributor_shares",
    "coverage_reliability",
    "credit_records_from",
    "credit_tables",
    "default_stratum",
    "draw_margin_from_probability",
    "draw_probability_from_margin",
    "family_caps",
    "hypothesis_weights",
    "rate_hypotheses",
    "tie_aware_rank",
    "training_weights",
    "trajectory_weights",
    "uncertainty_reliability",
]
