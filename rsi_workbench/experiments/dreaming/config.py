"""The ``dreaming`` experiment's validated config, its discovery task, and each arm's exploration policy."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag

from rsi_workbench.config import InputPath, StrictModel
from rsi_workbench.domains.math import CirclePacking, DiscoveryTask, FirstAutocorrelation
from rsi_workbench.execute import ExecutorConfig
from rsi_workbench.experiments.dreaming.policy_writer import WriterSettings
from rsi_workbench.replay.policies import ExplorationPolicy, PortfolioParams, PortfolioPolicy, baseline

Arm = Literal[
    "dreaming",
    "dreaming_writer",
    "dreaming_diverse",
    "portfolio",
    "independent_roots",
    "greedy_deepest_best",
    "breadth_first",
]
#: arms that dream after each tree: parameter mutations (``dreaming``), a model writing policy code
#: (``dreaming_writer``) or the ``dreaming.candidates`` set: fixed families beside π0 and its mutations
DREAMING_ARMS = ("dreaming", "dreaming_writer", "dreaming_diverse")
ALL_ARMS: tuple[Arm, ...] = (
    "dreaming",
    "portfolio",
    "independent_roots",
    "greedy_deepest_best",
    "breadth_first",
)


class TaskConfig(StrictModel):
    """Which discovery task, and how much local optimisation one attempt may do."""

    kind: Literal["circle_packing", "autocorrelation"] = "circle_packing"
    n: int = Field(default=26, ge=2, le=200, description="circles (circle_packing)")
    m: int = Field(default=60, ge=2, le=2000, description="step heights (autocorrelation)")
    maxiter: int = Field(default=150, ge=1, le=5000, description="local optimiser iterations per attempt")
    time_limit: float = Field(default=5.0, gt=0, description="seconds per attempt before a timeout failure")


class CandidateSet(StrictModel):
    """The ``dreaming_diverse`` arm's candidates each round: the deployed policy (candidate 0), π0
    (the ``policy:`` parameters), each fixed family by name, and ``mutations`` revisions of the last
    deployed portfolio parameters."""

    families: list[str] = Field(
        default_factory=list,
        description="fixed policy families (independent_roots, greedy_deepest_best, breadth_first, "
        "portfolio, or package.module:Name)",
    )
    mutations: int = Field(default=7, ge=0, le=255, description="parameter mutations of the portfolio π")
    pi0: bool = Field(default=True, description="keep π0 (the `policy:` parameters) a candidate every round")


class DreamingSettings(StrictModel):
    """The ``dreaming:`` block: what the ``dreaming_diverse`` arm may deploy."""

    candidates: CandidateSet = Field(default_factory=CandidateSet)


class FidelitySettings(StrictModel):
    """Replay fidelity, declared before the run (``fidelity:``): which replay scores V are read, which
    online results they are compared with, and how (family, seed) points are pooled into one ρ."""

    arm: Arm = Field(default="dreaming_diverse", description="the dreamer whose replay scores are read")
    trees: Literal["at_choice"] = Field(
        default="at_choice", description="V of each candidate on the trees the dreamer had when it chose"
    )
    round: Literal["last", "first"] = Field(
        default="last", description="which round of choice: the last (all trees) or the first"
    )
    online: Literal["other_seeds_mean", "same_seed"] = Field(
        default="other_seeds_mean",
        description="a family's online result: mean best@budget of its own arm over the other seeds "
        "(fresh seeds), or its arm on the same seed",
    )
    pooling: Literal["within_seed_ranks", "raw"] = Field(
        default="within_seed_ranks",
        description="one point per (family, seed); ρ = Spearman over all points of the within-seed "
        "ranks (β and difficulty differ by seed) or of the raw values",
    )
    budget: int | None = Field(default=None, ge=1, description="best@budget calls (default: calls)")


class Config(StrictModel):
    experiment: Literal["dreaming"] = "dreaming"
    task: AnyTaskConfig = Field(default_factory=TaskConfig)
    arms: list[Arm] = Field(default_factory=lambda: list(ALL_ARMS))
    seeds: list[int] = Field(default_factory=lambda: [0, 1, 2])
    W: int = Field(default=4, ge=1, le=64, description="parallel workers (batch width) in the paper's sense")
    executor: Literal["serial", "process", "ray"] | ExecutorConfig = Field(
        default="process", description="a kind name (with `workers`) or an executor block"
    )
    workers: int = Field(
        default=2, ge=1, le=64, description="workers running attempts (unless the block sets them)"
    )
    calls: int = Field(default=200, ge=1, description="agent-call budget per arm and seed")
    calls_per_round: int = Field(
        default=40, ge=1, description="attempts per online round (one tree per round)"
    )
    max_rounds: int = Field(default=100, ge=1)
    warm_start: bool = Field(default=True, description="each new tree's root is the best state found so far")
    beta1: float = Field(default=2e-4, ge=0, description="replay cost per revealed node")
    beta2: float = Field(default=5e-4, ge=0, description="replay parallelism bonus per node per round")
    adaptive_beta: bool = Field(default=False, description="recalibrate β from the last online round")
    adaptive_c1: float = Field(default=0.5, ge=0)
    adaptive_ratio: float = Field(default=2.0, ge=0)
    candidates: int = Field(
        default=8, ge=1, le=256, description="M: π0 plus M−1 proposed revisions per round"
    )
    policy: PortfolioParams = Field(default_factory=PortfolioParams)  # type: ignore[arg-type]
    writer: WriterSettings | None = Field(
        default=None, description="the dreaming_writer arm's policy writer (default: the offline model)"
    )
    target_fraction: float = Field(
        0.999, gt=0, le=1, description="report calls to this fraction of best known"
    )
    dreaming: DreamingSettings | None = Field(
        default=None, description="the dreaming_diverse arm's candidate set (families, mutations)"
    )
    fidelity: FidelitySettings | None = Field(
        default=None, description="replay fidelity: replay V vs online best@budget, declared before running"
    )


class OpenEvolveTaskConfig(StrictModel):
    """An OpenEvolve task directory used unchanged (``initial_program.py`` with an evolve block,
    ``evaluator.py``, optional ``config.yaml``); see docs/extending-dreaming.md."""

    kind: Literal["openevolve"]
    dir: InputPath = Field(description="the task directory (relative to the config file)")
    timeout: float | None = Field(
        default=None, gt=0, le=86400, description="seconds per evaluator stage (default: config.yaml's)"
    )


def _task_kind(v: Any) -> str:
    kind = v.get("kind") if isinstance(v, dict) else getattr(v, "kind", None)
    return "openevolve" if kind == "openevolve" else "math"


#: a config's ``task:``: a built-in math task or an OpenEvolve task directory
AnyTaskConfig = Annotated[
    Annotated[TaskConfig, Tag("math")] | Annotated[OpenEvolveTaskConfig, Tag("openevolve")],
    Discriminator(_task_kind),
]


def make_task(cfg: TaskConfig | OpenEvolveTaskConfig) -> DiscoveryTask:
    """The discovery task a config's ``task:`` names."""
    if isinstance(cfg, OpenEvolveTaskConfig):
        from rsi_workbench.domains.openevolve import load_task

        return load_task(cfg.dir, timeout=cfg.timeout)
    if cfg.kind == "circle_packing":
        return CirclePacking(n=cfg.n, maxiter=cfg.maxiter, time_limit=cfg.time_limit)
    return FirstAutocorrelation(m=cfg.m, maxiter=cfg.maxiter)


def target_score(task: DiscoveryTask, fraction: float) -> float | None:
    """The score (higher is better) at ``fraction`` of the best-known value."""
    if task.best_known is None:
        return None
    return fraction * task.best_known if task.direction == "max" else -task.best_known / fraction


def arm_policy(arm: str, params: PortfolioParams) -> ExplorationPolicy:
    if arm in (*DREAMING_ARMS, "portfolio"):
        return PortfolioPolicy(params, name=arm)
    return baseline(arm)
