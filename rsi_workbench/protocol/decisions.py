"""Every decision of the retained-pair protocol as a pure function of records and declared thresholds.

Selection (eq. 7), admission of imagined trajectories (eq. 8), reliability (eq. 10), the adaptation
trigger (eq. 11), component gates (eq. 13–14), assembly (eq. 15–16), the pair gate (eq. 17),
retention (eq. 18), disjoint data splits and budget fit. Each returns a frozen record whose
``to_event()`` holds its inputs, thresholds and outcome, so a decision can be recomputed later with
other thresholds without re-running anything.

Each family lives in its own module, named after the paper's concept; this module gathers them so
``from rsi_workbench.protocol.decisions import ...`` keeps working:
:mod:`~rsi_workbench.protocol.selection` (eq. 7–8), :mod:`~rsi_workbench.protocol.reliability`
(eq. 10), :mod:`~rsi_workbench.protocol.triggers` (eq. 9, 11), :mod:`~rsi_workbench.protocol.gates`
(eq. 13–18), :mod:`~rsi_workbench.protocol.splits` and :mod:`~rsi_workbench.protocol.seeds`.
"""

from __future__ import annotations

from rsi_workbench.protocol.gates import (
    Assembly,
    GateDecision,
    PairGateCriteria,
    PolicyGateCriteria,
    PredictorGateCriteria,
    RetainDecision,
    Score,
    assemble,
    pair_gate,
    pair_gate_skipped,
    policy_gate,
    predictor_gate,
    retain,
)
from rsi_workbench.protocol.reliability import (
    RegressionReliabilityCriteria,
    Reliability,
    ReliabilityCriteria,
    ReliabilityVerdict,
    regression_reliability,
    reliability,
)
from rsi_workbench.protocol.seeds import derive_rng, derive_seed
from rsi_workbench.protocol.selection import (
    RULES,
    AdmissionCriteria,
    AdmissionDecision,
    InformationGain,
    RandomK,
    ScoredCandidate,
    SelectionDecision,
    SelectionRule,
    UtilityArgmax,
    UtilitySpec,
    admit_imagined,
    fit_budget,
    initial_design_select,
    select,
    utility,
)
from rsi_workbench.protocol.splits import SplitOverlap, assert_disjoint, observation_split, split_tasks
from rsi_workbench.protocol.triggers import (
    AdaptationCriteria,
    PolicyTrigger,
    PolicyUpdateCriteria,
    TriggerDecision,
    adaptation_trigger,
    policy_trigger,
)

__all__ = [
    "AdaptationCriteria",
    "AdmissionCriteria",
    "AdmissionDecision",
    "Assembly",
    "GateDecision",
    "InformationGain",
    "PairGateCriteria",
    "PolicyGateCriteria",
    "PolicyTrigger",
    "PolicyUpdateCriteria",
    "PredictorGateCriteria",
    "RULES",
    "RandomK",
    "RegressionReliabilityCriteria",
    "Reliability",
    "ReliabilityCriteria",
    "ReliabilityVerdict",
    "RetainDecision",
    "Score",
    "ScoredCandidate",
    "SelectionDecision",
    "SelectionRule",
    "SplitOverlap",
    "TriggerDecision",
    "UtilityArgmax",
    "UtilitySpec",
    "adaptation_trigger",
    "admit_imagined",
    "assemble",
    "assert_disjoint",
    "derive_rng",
    "derive_seed",
    "fit_budget",
    "initial_design_select",
    "observation_split",
    "pair_gate",
    "pair_gate_skipped",
    "policy_gate",
    "policy_trigger",
    "predictor_gate",
    "regression_reliability",
    "reliability",
    "retain",
    "select",
    "split_tasks",
    "utility",
]
