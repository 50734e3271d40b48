"""The declared protocol: constraints C_d, selection rule, thresholds and modes every decision reads
(frozen into a run's ``loop_opened`` event).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from rsi_workbench.config import StrictModel
from rsi_workbench.protocol.gates import PairGateCriteria, PolicyGateCriteria, PredictorGateCriteria
from rsi_workbench.protocol.metrics import METRICS_VERSION
from rsi_workbench.protocol.reliability import (
    BinaryReliabilityCriteria,
    RegressionReliabilityCriteria,
    ReliabilityCriteria,
)
from rsi_workbench.protocol.selection import RULES, AdmissionCriteria, UtilitySpec
from rsi_workbench.protocol.triggers import AdaptationCriteria, PolicyUpdateCriteria


class GateSettings(StrictModel):
    policy: PolicyGateCriteria = Field(default_factory=PolicyGateCriteria)
    predictor: PredictorGateCriteria = Field(default_factory=PredictorGateCriteria)
    pair: PairGateCriteria = Field(default_factory=PairGateCriteria)


class ProtocolSettings(StrictModel):
    """Everything the loop's decisions read: constraints C_d, rules and declared thresholds."""

    k: int = Field(default=4, ge=1, description="candidates proposed per task per round")
    max_rounds: int = Field(default=3, ge=1, description="feedback rounds (cycles) per run")
    batch_size: int = Field(default=1, ge=1, description="candidates executed per task per round")
    rule: str = Field(
        default="utility_argmax",
        description=(
            "selection rule: utility_argmax, random_k, info_gain, or the import path pkg.mod:Name "
            "of a SelectionRule of one's own (rsi_workbench.protocol.selection.resolve_rule)"
        ),
    )
    utility: UtilitySpec = Field(default_factory=UtilitySpec)
    admission: AdmissionCriteria = Field(default_factory=AdmissionCriteria)
    reliability: ReliabilityCriteria = Field(default_factory=ReliabilityCriteria)
    adaptation: AdaptationCriteria = Field(default_factory=AdaptationCriteria)
    policy_update: PolicyUpdateCriteria = Field(default_factory=PolicyUpdateCriteria)
    gates: GateSettings = Field(default_factory=GateSettings)
    gate_fraction: float = Field(
        default=0.3, ge=0.0, lt=1.0, description="share of tasks whose feedback is gate data"
    )
    gate_execution_cost: float = Field(
        default=1.0, ge=0.0, description="update-compute units per gate execution"
    )
    audit: bool = Field(
        default=True, description="execute every candidate offline on all tests (metrics only)"
    )
    rescore_history: bool = Field(
        default=False,
        description="re-score past inputs with the current predictor when reliability lacks its own predictions",
    )
    rescore_cost: float = Field(
        default=0.01, ge=0.0, description="update-compute units per re-scored record or gate prediction"
    )
    readout: Literal["classes", "binary", "gaussian"] = Field(
        default="classes",
        description="classes: per-unit class probabilities (Brier/ECE); binary: one predicted probability "
        "per candidate against its observed 0/1 outcome (binary_reliability); gaussian: a [mean, std] "
        "per utility term",
    )
    binary_reliability: BinaryReliabilityCriteria = Field(
        default_factory=BinaryReliabilityCriteria,
        exclude_if=lambda v: v == BinaryReliabilityCriteria(),  # settings without it dump as before
        description="reliability criteria (term, bins, thresholds) of a binary readout",
    )
    regression_reliability: RegressionReliabilityCriteria = Field(
        default_factory=RegressionReliabilityCriteria,
        description="reliability criteria of a gaussian readout",
    )
    gate_data: Literal["tasks", "held_out_observations", "prequential"] = Field(
        default="tasks",
        description=(
            "tasks: gate data is the feedback on a held-out share of tasks (gates may execute their "
            "candidates); held_out_observations: a held-out share of every task's own rounds "
            "(observation_split), gates only re-predict recorded observations and execute nothing; "
            "prequential: every observation is first gate data (the window of the latest cycles, "
            "scored by the predictions made before it arrived), then update data "
            "(rsi_workbench.protocol.prequential states the rule)"
        ),
    )
    gate_window: int | None = Field(
        default=None,
        ge=1,
        exclude_if=lambda v: v is None,  # settings without it dump as before it existed
        description=(
            "prequential: the gate window is the last gate_window cycles "
            "(unset: max(1, ⌊gate_fraction·k + ½⌋) at the decision of cycle k)"
        ),
    )
    initial_design: int = Field(
        default=0, ge=0, description="the first N cycles select uniformly at random (same for every method)"
    )
    record_candidates: int | None = Field(
        default=None,
        ge=1,
        description="record only this many best-ranked candidates (plus the selected) per proposal event",
    )
    metrics_version: Literal[1, 2] = Field(
        default=METRICS_VERSION,
        description="ECE-bin and ranking-tie rules of rsi_workbench.metrics (1: as recorded before versioning)",
    )
    execution: Literal["auto", "sequential", "concurrent"] = Field(
        default="auto",
        exclude_if=lambda v: v == "auto",  # settings without it dump as before it existed
        description=(
            "a cycle's feedback rounds: auto (tasks proposed/evaluated in parallel where the policy/"
            "environment declares it safe), sequential, or concurrent (auto, refusing a policy that does "
            "not declare it); the same records either way (rsi_workbench.protocol.concurrent)"
        ),
    )
    execution_workers: int | None = Field(
        default=None, ge=1, exclude_if=lambda v: v is None, description="threads of a phase (unset: 32)"
    )

    @model_validator(mode="before")
    @classmethod
    def _score_follows_readout(cls, data: Any) -> Any:
        """A gaussian readout gates on Gaussian NLL unless a gate's score is set explicitly."""
        if isinstance(data, dict) and data.get("readout") == "gaussian":
            data = dict(data)
            gates = dict(data.get("gates") or {})
            for g in ("predictor", "pair"):
                sec = gates.get(g)
                sec = dict(sec) if isinstance(sec, dict) else ({} if sec is None else sec)
                if isinstance(sec, dict):
                    sec.setdefault("score", "gaussian_nll")
                gates[g] = sec
            data["gates"] = gates
        return data

    @field_validator("rule")
    @classmethod
    def _rule_name_or_path(cls, v: str) -> str:
        from rsi_workbench.plugins import is_import_path

        if v not in RULES and not (":" in v and is_import_path(v)):
            raise ValueError(
                f"unknown selection rule {v!r}; allowed: {', '.join(RULES)} or an import path pkg.mod:Name"
            )
        return v

    @model_validator(mode="after")
    def _check_modes(self) -> ProtocolSettings:
        if self.gate_data != "tasks" and self.policy_update.enabled:
            raise ValueError(
                "policy_update.enabled needs gate executions of new proposals; "
                f"gate_data: {self.gate_data} supports predictor updates only"
            )
        if self.gate_window is not None and self.gate_data != "prequential":
            raise ValueError("gate_window applies to gate_data: prequential only")
        if self.readout == "gaussian" and self.gate_data == "tasks" and self.adaptation.enabled:
            raise ValueError(
                "readout: gaussian scores the predictor gate on re-predicted observations: use "
                "gate_data: held_out_observations or prequential (gate_data: tasks scores class "
                "readouts only, so no adapted predictor could ever pass)"
            )
        return self
