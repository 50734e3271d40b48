"""RSIAgent's settings: ablation, budgets, parallelism, stop policy, audit and curve probes."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rsi_workbench.config import StrictModel

Ablation = Literal["none", "drs_only", "brs_only", "full"]
StopPolicy = Literal["verifier_pass", "curriculum_review"]

INFRA_RETRIES = 2  # a branch failing for infrastructure reasons is retried at most twice


class RsiAgentSettings(StrictModel):
    """What one RSIAgent run is allowed to do (frozen into the run's config by the experiment)."""

    ablation: Ablation = Field(
        "full",
        description="none: empty memory, no learning; drs_only: no BRS; brs_only: no DRS; full: BRS then DRS",
    )
    project_budget: int = Field(
        8, ge=0, description="BRS practice projects; checked only between whole waves"
    )
    max_parallel: int = Field(
        4, ge=1, description="host capacity: branches run in a pool of min(max_parallel, n)"
    )
    max_waves: int = Field(4, ge=0, description="most BRS waves")
    max_verification_cycles: int = Field(
        2, ge=1, description="attempt/verify cycles per project in one workspace"
    )
    stop_policy: StopPolicy = "curriculum_review"
    max_drs_steps: int = Field(
        3, ge=0, description="most DRS target tests per target (the STALLED final test included)"
    )
    drs_order: Literal["targets", "seeded"] = Field(
        "targets",
        description="the order deep practice visits the targets: as listed, or shuffled by the seed (seeded), "
        "so that no target is always the last one when a budget runs out",
    )
    curriculum_memory: Literal["read_only", "none"] = "read_only"
    shingle_n: int = Field(8, ge=1, description="n of the n-word shingle audit against host-only texts")
    seed: int = Field(0, ge=0)
    curve: bool = Field(False, description="probe the official target score after every committed wave")
    max_failed_turns: int = Field(2, ge=0, description="consecutive failed curriculum turns before STALLED")
