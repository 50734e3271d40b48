"""Config of the ``reactions`` experiment (``experiment: reactions``): grids, methods, seeds, budgets,
protocol thresholds, predictor and BO settings, executor."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    Discriminator,
    Field,
    SerializerFunctionWrapHandler,
    Tag,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from rsi_workbench.config import StrictModel
from rsi_workbench.domains.reactions.arms import (
    PREDICTOR_METHODS,
    Method,
    MethodSpec,
    arm_of,
    is_protocol,
)
from rsi_workbench.domains.reactions.baselines import BOConfig
from rsi_workbench.domains.reactions.corruption import CorruptionSpec
from rsi_workbench.domains.reactions.embed import EmbedConfig
from rsi_workbench.domains.reactions.grid import BUILTIN_GRIDS, GridSpec, grid_spec
from rsi_workbench.domains.reactions.prior_gp import PriorGPConfig
from rsi_workbench.execute import ExecutorConfig, omit_unset_executor
from rsi_workbench.metrics import METRICS_VERSION
from rsi_workbench.protocol.decisions import (
    PairGateCriteria,
    PredictorGateCriteria,
    RegressionReliabilityCriteria,
)
from rsi_workbench.protocol.loop import GateSettings
from rsi_workbench.world.ensemble import EnsembleConfig

__all__ = ["PREDICTOR_METHODS", "Config", "Method", "MethodSpec", "arm_of", "grid_spec", "is_protocol"]


def _grid_entry_kind(v: Any) -> str | None:
    """A grid entry is a built-in grid's name (a string) or a spec (a mapping, or a GridSpec)."""
    if isinstance(v, str):
        return "name"
    return "spec" if isinstance(v, dict | GridSpec) else None


# One branch per entry, chosen by its type: an error names the spec's field (grids.0.spec.yield_column),
# not both union branches' internals (grids.0.str / grids.0.function-after[_check(), GridSpec]).
GridEntry = Annotated[
    Annotated[str, Tag("name")] | Annotated[GridSpec, Tag("spec")],
    Discriminator(
        _grid_entry_kind,
        custom_error_type="grid_entry",
        custom_error_message="a grid is a built-in grid's name or a spec mapping (name, path or dataset, "
        "factors, yield_column...)",
    ),
]


def _default_grids() -> list[str | GridSpec]:
    return list(BUILTIN_GRIDS)


def _default_methods() -> list[Method | MethodSpec]:
    return ["predictor_utility", "predictor_information", "gp_ei", "random"]


def _gaussian_gates() -> GateSettings:
    return GateSettings(
        predictor=PredictorGateCriteria(score="gaussian_nll"), pair=PairGateCriteria(score="gaussian_nll")
    )


class Config(StrictModel):
    """The ``reactions`` experiment: grids × methods × seeded runs at a matched experiment budget."""

    experiment: Literal["reactions"] = "reactions"
    grids: list[GridEntry] = Field(
        default_factory=lambda: _default_grids(),
        description="built-in grid names or full grid specs (path, factors, yield column)",
    )
    methods: list[Method | MethodSpec] = Field(
        default_factory=lambda: _default_methods(),
        description="method names (experiment-wide settings) or arms {name, kind, prior, lambda, adaptation}",
    )
    runs: int = Field(default=100, ge=1, description="seeded runs per method per grid")
    first_seed: int = Field(default=4001, description="runs use seeds first_seed .. first_seed+runs−1")
    cohort_size: int = Field(default=25, ge=1, description="runs advanced together and committed as a chunk")
    n_initial: int = Field(default=8, ge=1, description="random initial observations (same for every method)")
    n_total: int = Field(default=40, ge=2, description="experiment budget per run, initial ones included")
    report_at: list[int] = Field(default_factory=lambda: [10, 20, 40])
    uncertainty_penalty: float = Field(default=0.5, ge=0.0, description="λ of eq. 7 (Δ = λ·σ̂)")
    update_budget: float = Field(
        default=40.0, ge=0.0, description="update-compute units per run (1 per fit, 0.01 per gate prediction)"
    )
    reliability: RegressionReliabilityCriteria = Field(default_factory=RegressionReliabilityCriteria)
    min_adapt_examples: int = Field(
        default=3, ge=1, description="D_adapt is sufficient with this many observations"
    )
    gate_fraction: float = Field(
        default=0.25, ge=0.0, lt=1.0, description="share of each run's rounds held out as gate data"
    )
    gates: GateSettings = Field(default_factory=_gaussian_gates, description="gate thresholds (eq. 14, 17)")
    record_candidates: int = Field(
        default=5, ge=1, description="best-ranked candidates kept per proposal event"
    )
    predictor: EnsembleConfig = Field(default_factory=EnsembleConfig)
    bo: BOConfig = Field(default_factory=BOConfig)
    embed: EmbedConfig = Field(
        default_factory=EmbedConfig,
        exclude_if=lambda v: v == EmbedConfig(),  # configs without the block dump as before it existed
        description="the condition-embedding ensemble of the _embed methods",
    )
    prior_gp: PriorGPConfig = Field(
        default_factory=PriorGPConfig,
        exclude_if=lambda v: v == PriorGPConfig(),  # configs without the block dump as before it existed
        description="the prior-mean GP of the _gp protocol arms with a prior (prior as mean function)",
    )
    corruption: CorruptionSpec | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="misread a seeded share of every run's measurements, the same ones in every arm "
        "(rsi_workbench.domains.reactions.corruption); null: the grid's yields as measured",
    )
    bootstrap: int = Field(default=2000, ge=100, description="bootstrap resamples for the intervals")
    metrics_version: Literal[1, 2] = Field(
        default=METRICS_VERSION, description="metrics rules the protocol runs use (rsi_workbench.metrics)"
    )
    threads: int = Field(default=1, ge=1, description="torch threads (the machine is shared)")
    gate_data: Literal["held_out_observations", "prequential"] = Field(
        default="held_out_observations",
        exclude_if=lambda v: v == "held_out_observations",  # configs without it dump as before
        description=(
            "the predictor methods' gate data: a held-out share (gate_fraction) of each run's rounds, "
            "or prequential (rsi_workbench.protocol.prequential: every measurement first judges, then trains)"
        ),
    )
    gate_window: int | None = Field(
        default=None,
        ge=1,
        exclude_if=lambda v: v is None,
        description="prequential: gate window in cycles (unset: max(1, ⌊gate_fraction·k + ½⌋) at cycle k)",
    )
    executor: ExecutorConfig | None = Field(
        default=None, description="where baseline cohorts (gp_ei, random) run; null: in the driver, in turn"
    )

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> Any:
        return omit_unset_executor(handler(self))  # configs without the block dump as they always did

    @model_validator(mode="before")
    @classmethod
    def _gaussian_scores(cls, data: Any) -> Any:
        """Gates compare Gaussian NLL unless a config sets a gate's score explicitly."""
        if isinstance(data, dict) and isinstance(data.get("gates"), dict):
            gates = dict(data["gates"])
            for g in ("predictor", "pair"):
                if isinstance(gates.get(g, {}), dict):
                    gates[g] = {"score": "gaussian_nll", **gates.get(g, {})}
            data = {**data, "gates": gates}
        return data

    @model_validator(mode="after")
    def _check(self) -> Config:
        if self.n_initial >= self.n_total:
            raise ValueError(f"n_initial ({self.n_initial}) must be < n_total ({self.n_total})")
        bad = [n for n in self.report_at if not 1 <= n <= self.n_total]
        if bad:
            raise ValueError(f"report_at {bad} outside 1..n_total ({self.n_total})")
        names = [arm_of(m).name for m in self.methods]
        if len(set(names)) != len(names):
            raise ValueError(f"method/arm names must be unique, got {names}")
        if any(arm_of(m).prior is not None for m in self.methods):
            for g in self.grids:
                spec = grid_spec(g)
                if not spec.campaign_columns:
                    raise ValueError(
                        f"grid {spec.name!r}: an arm has a prior, and priors need campaign_columns"
                    )
        oracle = [arm_of(m).name for m in self.methods if arm_of(m).gates == "oracle"]
        if oracle and self.corruption is None:
            raise ValueError(f"arms {oracle}: gates: oracle needs a declared corruption (corruption:)")
        if any(arm_of(m).kind.endswith("_gp") for m in self.methods) and self.min_adapt_examples < 2:
            raise ValueError(
                "the GP predictor methods need min_adapt_examples >= 2 (a GP fit needs 2 points)"
            )
        return self

    @field_validator("grids")
    @classmethod
    def _known_grids(cls, grids: list[str | GridSpec]) -> list[str | GridSpec]:
        for g in grids:
            if isinstance(g, str) and g not in BUILTIN_GRIDS:
                raise PydanticCustomError(
                    "unknown_grid",
                    "unknown built-in grid '{name}'; the registered grids are {known}, or give a spec "
                    "(name, path or dataset, factors, yield_column)",
                    {"name": g, "known": ", ".join(sorted(BUILTIN_GRIDS))},
                )
        names = [grid_spec(g).name for g in grids]
        if len(set(names)) != len(names):
            raise PydanticCustomError(
                "duplicate_grid", "grid names must be unique, got {names}", {"names": names}
            )
        return grids
