"""The settings blocks of the code-repair predictors φ (world model, static verifier, LM readout):
``world:`` of an experiment config (:class:`WorldSettings` with its recipe switches), read by
:mod:`.predictor` and :mod:`.lm_readout`. Fields and defaults are those every stored config holds."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, field_validator, model_serializer, model_validator

from rsi_workbench.config import InputPath, StrictModel
from rsi_workbench.models.config import ModelConfig


class ListwiseSettings(StrictModel):
    """The paper's listwise KL over each state's candidate pool, beside the pairwise hinge (world model
    only; the static verifier stays cross-entropy only): KL(softmax(u_obs/τ) || softmax(u_pred/τ))."""

    tau: float = Field(default=0.1, gt=0.0, description="the softmax temperature τ (the paper: 0.1)")
    weight: float = Field(default=0.2, gt=0.0, description="the loss weight (not in the paper; the hinge's)")
    pool_size: int | None = Field(
        default=4, ge=2, le=4, description="pools of exactly this many candidates (k=4); null = any >= 2"
    )


class InjectedTraining(StrictModel):
    """The injected-bug training states of ``train_on: injected`` (:mod:`.injected_training`)."""

    per_problem: int = Field(default=1, ge=1, description="bugs injected per reference program")
    candidates: int = Field(default=16, ge=4, description="mutation-coder candidates per injected state")
    pools_per_state: int = Field(
        default=4, ge=1, description="pools of four drawn per state (as a pools dir)"
    )
    seed: int = Field(default=0, description="seeds the injection, the proposals and the pool draws")
    table: InputPath | None = Field(
        default=None,
        exclude_if=lambda v: v is None,  # blocks without it dump (and key) as before it existed
        description="a directory holding an earlier build's candidates.jsonl and settings.json with these "
        "same settings (e.g. a committed table): read instead of rebuilt; states it lacks are built "
        "(relative: to the config file)",
    )

    @model_validator(mode="after")
    def _table_matches(self) -> InjectedTraining:
        if self.table is not None:  # checked before any run directory exists
            from rsi_workbench.domains.code_repair.injected_training import table_rows

            table_rows(self)
        return self


class LMReadoutSettings(StrictModel):
    """The LM-likelihood readout as the protocol predictor (methods ``lm_fixed`` / ``lm_adaptive``):
    eq. 4's P(pass) readout on [Δ log p, per-token Δ, operator, suspiciousness] (``lm_ranker.
    ReadoutPredictor``), cross-fitted over ``folds`` task folds and fitted on the pooled candidates
    (label: passes every hidden test) of a pools directory's tasks outside a task's fold."""

    model: ModelConfig = Field(default_factory=ModelConfig, description="a model block that scores")
    pools: InputPath = Field(
        description="a pools directory (`rsi-workbench tasks pools`) of the same task source: the "
        "readout's training candidates (relative: to the config file)"
    )
    folds: int = Field(default=5, ge=2, description="task folds of the cross-fitted readout")
    use_lm: bool = Field(default=True, description="false: the features readout (no Δ log p, no model)")
    train_on: Literal["pools", "injected"] = Field(
        default="pools",
        exclude_if=lambda v: v == "pools",  # blocks without it dump as before it existed
        description="pools: the pools directory's candidates (HumanEvalFix's own bugs, in distribution); "
        "injected: candidates of bugs injected into the reference programs (uniform operators, "
        "`injected`), a shifted prior; the features readout only (methods features_*, or use_lm: false)",
    )
    injected: InjectedTraining = Field(
        default_factory=InjectedTraining,
        exclude_if=lambda v: v == InjectedTraining(),
        description="the injected states of train_on: injected",
    )
    scores_from: InputPath | None = Field(
        default=None,
        description="an LM score cache (JSONL) to start from, read only; null: the pools "
        "directory's lm_scores.jsonl when present (a key covers the model identity, so only "
        "matching scores are used)",
    )


class LearningRates(StrictModel):
    """The world model's learning rates per role (training and adaptation); null fields: the paper's
    LoRA-regime W1 values (opf 1e-5, readout 1e-4). Head-regime values (>= 1e-3) test whether the
    heads on cached MiniLM features were under-trained"""

    opf: float | None = Field(default=None, gt=0.0, le=1.0, description="the OPF head's learning rate")
    readout: float | None = Field(default=None, gt=0.0, le=1.0, description="the readout's learning rate")

    def train_fields(self) -> dict[str, float]:
        """The TrainConfig fields these set (``lr_opf``, ``lr_readout``; unset ones are left out)."""
        return {f"lr_{k}": v for k, v in (("opf", self.opf), ("readout", self.readout)) if v is not None}


class WorldSettings(StrictModel):
    """The predictors φ (world model, static verifier): encoder, cross-fitting, training, adaptation."""

    encoder: str = Field(
        default="minilm",
        description="minilm | tiny | lm:default (a causal LM's hidden states) | a local checkpoint path",
    )
    folds: int = Field(
        default=4, ge=3, description="K-fold cross-fitting by problem (audit, gate, train folds)"
    )
    transitions: InputPath | None = Field(
        default=None,
        description="an existing world-transitions run dir to train on (read only; relative: to the "
        "config file); null = build one",
    )
    train_pool: int = Field(
        default=0, ge=0, description="extra tasks outside the batch used only as training data"
    )
    injected_per_problem: int = Field(
        default=1, ge=0, description="training bugs injected per reference solution"
    )
    train_epochs: int = Field(default=10, ge=1)
    adapt_epochs: int = Field(default=20, ge=1)
    adapt_trainable: list[str] = Field(
        default_factory=lambda: ["opf", "readout"], description="Adapt's roles"
    )
    adapt_cost_per_row_epoch: float = Field(default=0.001, ge=0.0, description="update-compute units")
    device: str = "cpu"
    listwise: ListwiseSettings | None = Field(
        default=None, description="the listwise KL loss: null/false = off; true or {tau, weight, pool_size}"
    )
    staged: bool = Field(
        default=False,
        description="staged training of the world model: initial -> semantic (heads, then joint) -> "
        "expanded -> incumbent, train_epochs split 1/4, 1/8 + 1/8, 1/4, 1/4",
    )
    lr: LearningRates | None = Field(
        default=None,
        description="the world model's learning rates {opf, readout} (training and adaptation; the "
        "static verifier keeps the defaults); null: the paper's opf 1e-5, readout 1e-4",
    )
    lm_readout: LMReadoutSettings | None = Field(
        default=None,
        description="the LM-likelihood readout of methods lm_fixed / lm_adaptive (ReadoutPredictor): "
        "{model, pools, folds}; required by those methods",
    )

    @field_validator("listwise", mode="before")
    @classmethod
    def _listwise_switch(cls, v: Any) -> Any:
        if v is True:
            return {}
        return None if v is False else v

    @model_validator(mode="after")
    def _staged_epochs(self) -> WorldSettings:
        if self.staged and self.train_epochs < 4:
            raise ValueError(
                f"world.staged needs train_epochs >= 4 (one epoch or more per stage of initial -> "
                f"semantic -> expanded -> incumbent), got train_epochs={self.train_epochs}"
            )
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)  # recipe switches left off dump as before they existed (runs resume)
        if isinstance(data, dict):
            if data.get("listwise", 0) is None:
                data.pop("listwise")
            if data.get("staged") is False:
                data.pop("staged")
            for k in ("lr", "lm_readout"):
                if data.get(k, 0) is None:
                    data.pop(k)
        return data


__all__ = ["InjectedTraining", "LMReadoutSettings", "LearningRates", "ListwiseSettings", "WorldSettings"]
