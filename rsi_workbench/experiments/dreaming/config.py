"""The ``dreaming`` experiment's validated config: the task, the arms and seeds, the executor, the
fidelity declaration, and the arm's own settings (:class:`~rsi_workbench.domains.math.dream_arm.ArmSettings`:
budget, β, candidates, writer) as top-level fields."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag

from rsi_workbench.config import config_error
from rsi_workbench.domains.math import DiscoveryTask
from rsi_workbench.domains.math.candidates import (
    CandidateSet,
    DreamingSettings,
    check_candidate_set,
    online_arm,
)
from rsi_workbench.domains.math.dream_arm import ALL_ARMS, DREAMING_ARMS, Arm, ArmSettings, arm_policy
from rsi_workbench.domains.math.fidelity import FidelitySettings
from rsi_workbench.domains.math.settings import TaskConfig, target_score
from rsi_workbench.domains.openevolve.settings import OpenEvolveTaskConfig
from rsi_workbench.execute import ExecutorConfig


def _task_kind(v: Any) -> str:
    kind = v.get("kind") if isinstance(v, dict) else getattr(v, "kind", None)
    return "openevolve" if kind == "openevolve" else "math"


#: a config's ``task:``: a built-in math task or an OpenEvolve task directory
AnyTaskConfig = Annotated[
    Annotated[TaskConfig, Tag("math")] | Annotated[OpenEvolveTaskConfig, Tag("openevolve")],
    Discriminator(_task_kind),
]


class Config(ArmSettings):
    experiment: Literal["dreaming"] = "dreaming"
    task: AnyTaskConfig = Field(default_factory=TaskConfig)
    arms: list[Arm] = Field(default_factory=lambda: list(ALL_ARMS))
    seeds: list[int] = Field(default_factory=lambda: [0, 1, 2])
    executor: Literal["serial", "process", "ray"] | ExecutorConfig = Field(
        default="process", description="a kind name (with `workers`) or an executor block"
    )
    workers: int = Field(
        default=2, ge=1, le=64, description="workers running attempts (unless the block sets them)"
    )
    fidelity: FidelitySettings | None = Field(
        default=None, description="replay fidelity: replay V vs online best@budget, declared before running"
    )


def make_task(cfg: TaskConfig | OpenEvolveTaskConfig) -> DiscoveryTask:
    """The discovery task a config's ``task:`` names."""
    return cfg.make()


def check_candidates(config: Config, source: str) -> None:
    """Preflight of ``dreaming:`` and ``fidelity:``: the ``dreaming_diverse`` arm needs a
    ``dreaming.candidates`` block (:func:`~rsi_workbench.domains.math.candidates.check_candidate_set`)
    and the block an arm that uses it; ``fidelity.arm`` must be the run's ``dreaming_diverse`` arm and
    every family needs an online arm. Errors name the file and the field."""
    arms, block, fid = list(config.arms), config.dreaming, config.fidelity
    if "dreaming_diverse" in arms and block is None:
        raise config_error(
            source,
            "dreaming",
            "arm dreaming_diverse needs a `dreaming: {candidates: {families: [...], mutations: N}}` block",
        )
    if block is not None:
        check_candidate_set(block, source)
        if "dreaming_diverse" not in arms:
            raise config_error(source, "dreaming", "set but no arm uses it: add dreaming_diverse to `arms`")
    if fid is not None:
        if fid.arm not in arms:
            raise config_error(source, "fidelity.arm", f"{fid.arm!r} is not one of the run's arms {arms}")
        if fid.arm != "dreaming_diverse":
            raise config_error(
                source,
                "fidelity.arm",
                "only dreaming_diverse replays the fixed families, whose online runs fidelity compares",
            )
        if fid.budget is not None and fid.budget > config.calls:
            raise config_error(source, "fidelity.budget", f"{fid.budget} is above `calls` ({config.calls})")
        missing = [f for f in map(online_arm, block.candidates.families if block else []) if f not in arms]
        if missing:
            raise config_error(
                source, "fidelity", f"families {missing} have no online arm: add them to `arms`"
            )


__all__ = [
    "ALL_ARMS",
    "DREAMING_ARMS",
    "AnyTaskConfig",
    "Arm",
    "CandidateSet",
    "Config",
    "DreamingSettings",
    "FidelitySettings",
    "OpenEvolveTaskConfig",
    "TaskConfig",
    "arm_policy",
    "check_candidates",
    "make_task",
    "target_score",
]
