"""When an update is attempted: the policy/workflow update trigger u_k^π (eq. 9) and the conditional
predictor adaptation trigger u_k^W (eq. 11), each a conjunction recorded with its inputs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from pydantic import Field

from rsi_workbench.config import StrictModel
from rsi_workbench.protocol.reliability import Reliability


class AdaptationCriteria(StrictModel):
    """When an adaptation attempt u_k^W may happen (eq. 11)."""

    enabled: bool = Field(default=False, description="the adaptation path; off ⇒ u_k^W = 0 always")
    min_examples: int = Field(
        default=20, ge=1, description="D_adapt,k is sufficient with at least this many units"
    )


@dataclass(frozen=True)
class TriggerDecision:
    triggered: bool
    conjuncts: dict[str, bool]
    verdict: str
    n_adapt_examples: int
    budget_remaining: float
    estimated_cost: float
    criteria: dict[str, Any]

    def to_event(self) -> dict[str, Any]:
        return asdict(self)


def adaptation_trigger(
    verdict: Reliability,
    n_adapt_examples: int,
    budget_remaining: float,
    estimated_cost: float,
    criteria: AdaptationCriteria,
) -> TriggerDecision:
    """u_k^W = 1{unreliable} 1{D_adapt sufficient} 1{B_update ≥ ĉ_adapt} (eq. 11), 0 if the path is off."""
    conj = {
        "path_enabled": criteria.enabled,
        "unreliable": verdict == "unreliable",
        "data_sufficient": n_adapt_examples >= criteria.min_examples,
        "budget_sufficient": budget_remaining + 1e-12 >= estimated_cost,
    }
    return TriggerDecision(
        all(conj.values()),
        conj,
        verdict,
        n_adapt_examples,
        budget_remaining,
        estimated_cost,
        criteria.model_dump(),
    )


class PolicyUpdateCriteria(StrictModel):
    """When a policy/workflow update attempt u_k^π may happen (eq. 9); off is the fixed-coder setting."""

    enabled: bool = Field(default=False, description="u_k^π = 0 always when off (the paper's fixed coder)")
    min_records: int = Field(
        default=8, ge=1, description="D_policy,k must hold at least this many observations"
    )
    cost: float = Field(default=1.0, ge=0.0, description="update-compute units charged per update attempt")


@dataclass(frozen=True)
class PolicyTrigger:
    triggered: bool
    conjuncts: dict[str, bool]
    n_records: int
    budget_remaining: float
    criteria: dict[str, Any]

    def to_event(self) -> dict[str, Any]:
        return asdict(self)


def policy_trigger(n_records: int, budget_remaining: float, criteria: PolicyUpdateCriteria) -> PolicyTrigger:
    """u_k^π: the declared schedule (every cycle) with enough learning evidence and budget."""
    conj = {
        "path_enabled": criteria.enabled,
        "data_sufficient": n_records >= criteria.min_records,
        "budget_sufficient": budget_remaining + 1e-12 >= criteria.cost,
    }
    return PolicyTrigger(all(conj.values()), conj, n_records, budget_remaining, criteria.model_dump())
