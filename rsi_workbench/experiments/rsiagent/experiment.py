"""``rsiagent`` experiment: RSIAgent's memory engine on MiniWoB++ with the built-in (model-free) roles.

For every experiment seed and ablation (``none``: empty memory, the no-RSI baseline; ``drs_only``;
``brs_only``; ``full``) one engine run (:func:`~rsi_workbench.memory.engine.run_rsiagent`) learns a
memory and evaluates it frozen on the known targets; each arm is its own run directory under
``arms/`` and the experiment log records each finished arm (``arm_finished``: Partial/Binary,
per-target scores, episodes, frozen memory hash). A killed experiment resumes: finished arms are
skipped and an unfinished arm continues from its last committed wave (the engine's ledger).
The targets of a seed are the same for every ablation, so each arm is compared with its own seed's
no-RSI baseline. The environments and roles are the domains' (MiniWoB++:
:mod:`rsi_workbench.domains.gui.rsiagent`; code repair:
:mod:`rsi_workbench.domains.code_repair.rsiagent_env`); model roles are the engine's
(:mod:`rsi_workbench.memory.llm_roles`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, model_validator

from rsi_workbench.config import StrictModel
from rsi_workbench.domains.code_repair.rsiagent_env import CodeRepairSettings
from rsi_workbench.domains.gui.rsiagent.matched import matched_payload, matched_roles
from rsi_workbench.domains.gui.rsiagent.settings import CurriculumSettings, MiniwobSettings, build_miniwob_arm
from rsi_workbench.memory.engine import RsiAgentResult, run_rsiagent
from rsi_workbench.memory.llm_roles import LLMRoles
from rsi_workbench.memory.settings import Ablation, RsiAgentSettings
from rsi_workbench.records import Run, child_runs

CHILD_RUN_EVENTS = ("arm_finished",)  # the events that finish a child run (records.children)
ALL_ARMS: list[Ablation] = ["none", "drs_only", "brs_only", "full"]


def _environment_kind(v: Any) -> str:
    kind = v.get("kind") if isinstance(v, dict) else getattr(v, "kind", None)
    return str(kind or "miniwob")  # an environment block without ``kind`` is MiniWoB++


Environment = Annotated[
    Annotated[MiniwobSettings, Tag("miniwob")] | Annotated[CodeRepairSettings, Tag("code_repair")],
    Discriminator(_environment_kind),
]


class ArmOverrides(StrictModel):
    """One arm's own engine and curriculum settings, over the shared blocks (e.g. a BRS budget for
    ``brs_only`` large enough to spend the learning cap that ``full`` splits between BRS and DRS)."""

    engine: dict[str, Any] = Field(default_factory=dict, description="engine settings for this arm only")
    curriculum: dict[str, Any] = Field(
        default_factory=dict, description="curriculum settings for this arm only"
    )


class Config(StrictModel):
    """The ``rsiagent`` experiment: environment, roles, ablations x seeds, engine settings."""

    experiment: Literal["rsiagent"] = "rsiagent"
    environment: Environment = Field(
        default_factory=MiniwobSettings, description="kind: miniwob (the default) or code_repair"
    )
    roles: Literal["builtin"] | LLMRoles = Field(
        default="builtin", description="builtin: the model-free roles; or model blocks per role (llm_roles)"
    )
    ablations: list[Ablation] = Field(default_factory=lambda: list(ALL_ARMS), min_length=1)
    seeds: list[int] = Field(default_factory=lambda: [0], min_length=1)
    engine: RsiAgentSettings = Field(
        default_factory=lambda: RsiAgentSettings.model_validate({}),
        description="the engine's settings; ablation and seed are set per arm and must be left out",
    )
    curriculum: CurriculumSettings = Field(default_factory=CurriculumSettings)
    arms: dict[Ablation, ArmOverrides] = Field(
        default_factory=dict,
        description="per-arm settings over `engine` and `curriculum`, e.g. {brs_only: {engine: {project_budget: 14}}}",
    )
    curve_arms: list[Ablation] = Field(
        default_factory=lambda: list(ALL_ARMS[-1:]),
        description="arms that probe the target score after every committed step (recursion curves)",
    )
    learning_episodes: int | None = Field(
        default=None,
        ge=1,
        description="the same cap on every arm's learning episodes (practice + DRS target tests); None: no cap",
    )
    learning_verifier_calls: int | None = Field(
        default=None,
        ge=1,
        description="the same cap on every arm's verifier calls of learning attempts (with learning_episodes: "
        "arms matched on spend, episodes and verifier calls); None: counted, not capped",
    )
    fresh_instances: int = Field(
        default=0,
        ge=0,
        le=100,
        description="frozen evaluation also on this many fresh instances of each target's page (miniwob)",
    )
    audit: bool = Field(
        default=False,
        description="log the verifier's verdict beside the raw reward of every learning episode",
    )

    @model_validator(mode="after")
    def _arms(self) -> Config:
        if len(set(self.ablations)) != len(self.ablations):
            raise ValueError(f"ablations: each at most once, got {self.ablations}")
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds: each at most once, got {self.seeds}")
        if (self.fresh_instances or self.audit) and not isinstance(self.environment, MiniwobSettings):
            raise ValueError("fresh_instances and audit: only with environment kind miniwob")
        if self.fresh_instances and self.roles != "builtin":
            raise ValueError("fresh_instances: only with roles builtin (a fresh built-in actor per instance)")
        fixed = {"ablation", "seed"} & self.engine.model_fields_set
        if fixed:
            raise ValueError(
                f"engine: {sorted(fixed)} are set per arm from `ablations` and `seeds`; remove them"
            )
        for arm, o in self.arms.items():
            if {"ablation", "seed"} & set(o.engine):
                raise ValueError(f"arms.{arm}.engine: ablation and seed are set per arm; remove them")
            try:
                arm_settings(self, arm, self.seeds[0]), self.curriculum_of(arm)
            except ValueError as err:  # pydantic's ValidationError included: name the arm's block
                raise ValueError(f"arms.{arm}: {err}") from None
        return self

    def curriculum_of(self, ablation: str) -> CurriculumSettings:
        """The arm's curriculum settings: ``curriculum`` with ``arms.<ablation>.curriculum`` over it."""
        over = self.arms[ablation].curriculum if ablation in self.arms else {}  # type: ignore[index]
        return CurriculumSettings.model_validate({**self.curriculum.model_dump(), **over})

    def run_config(self) -> dict[str, Any]:
        """The frozen config (``engine`` without the per-arm ablation and seed, so a resume validates)."""
        return self.model_dump(mode="json", exclude={"engine": {"ablation", "seed"}})


def arm_settings(config: Config, ablation: str, seed: int) -> RsiAgentSettings:
    """The arm's engine settings: ``engine`` with ``arms.<ablation>.engine`` over it."""
    over = config.arms[ablation].engine if ablation in config.arms else {}  # type: ignore[index]
    curve = config.engine.curve or ablation in config.curve_arms or bool(over.get("curve"))
    base = {**config.engine.model_dump(), **over, "ablation": ablation, "seed": seed, "curve": curve}
    return RsiAgentSettings.model_validate(base)


def build_arm(config: Config, seed: int, ablation: str = "full") -> tuple[Any, Any, Any, Any]:
    """(environment, actor factory, verifier, curriculum) for one seed: the built-in MiniWoB++ roles
    (with a model actor in ``roles`` the environment offers text workspaces); the domain's
    :func:`~rsi_workbench.domains.gui.rsiagent.settings.build_miniwob_arm`."""
    e = config.environment
    if isinstance(e, CodeRepairSettings):
        from rsi_workbench.domains.code_repair.rsiagent_env import build_code_repair_arm

        return build_code_repair_arm(e, seed)
    model_actor = not isinstance(config.roles, str) and config.roles.actor is not None
    return build_miniwob_arm(e, config.curriculum_of(ablation), seed, model_actor=model_actor)


def _arm_payload(
    res: RsiAgentResult, env: Any, ablation: str, seed: int, rel: Path, wall: float
) -> dict[str, Any]:
    targets = {t.id: t.instruction for t in env.targets()}
    return {
        "ablation": ablation,
        "seed": seed,
        "run_dir": str(rel),
        "wall_s": wall,
        "targets": targets,
        "browser_episodes_this_process": dict(getattr(env, "episodes", {})),
        **res.as_payload(),
    }


def run_arm(config: Config, out: Path, ablation: str, seed: int) -> dict[str, Any]:
    """One (ablation, seed) engine run into ``out/arms/<ablation>-seed<seed>`` (resumed if present)."""
    rel = Path("arms") / f"{ablation}-seed{seed}"
    settings = arm_settings(config, ablation, seed)
    env, actor_factory, verifier, curriculum = build_arm(config, seed, ablation)
    arm_cfg = {
        "experiment_arm": "rsiagent",
        "environment": config.environment.model_dump(mode="json"),
        "curriculum": config.curriculum_of(ablation).model_dump(mode="json"),
        "engine": settings.model_dump(mode="json"),
    }
    t0 = time.perf_counter()
    if not isinstance(config.roles, str):
        arm_cfg["roles"] = config.roles.model_dump(mode="json")
    with Run.create(out / rel, arm_cfg, kind="rsiagent_arm", exist_ok=True) as sub:
        grant = env.sandbox_isolation() if callable(getattr(env, "sandbox_isolation", None)) else None
        if grant is not None and grant.record_in(sub):  # the isolation the actions run under
            sub.commit()
        if callable(getattr(env, "attach_run", None)):  # e.g. MiniWoB++ attempts of a model actor
            env.attach_run(sub)
        if not isinstance(config.roles, str):  # model roles, their calls recorded on the arm's run
            from rsi_workbench.memory.llm_roles import apply_llm_roles

            arm = apply_llm_roles(config.roles, (env, actor_factory, verifier, curriculum), sub)
            env, actor_factory, verifier, curriculum = arm
        budget = None
        if config.learning_episodes is not None or config.audit or config.learning_verifier_calls:
            env, actor_factory, verifier, budget = matched_roles(config, sub, env, actor_factory, verifier)
        res = run_rsiagent(env, actor_factory, verifier, curriculum, settings, sub)
        extra = matched_payload(config, sub, env, res, budget, seed)
    payload = _arm_payload(res, env, ablation, seed, rel, time.perf_counter() - t0)
    return {**payload, **extra}


def run_experiment(config: Config, out: Path, *, resume: bool = False) -> Path:
    """Run every (seed, ablation) arm not yet finished in ``out``; an infra stop is recorded and skipped."""
    out = Path(out)
    with Run.create(out, config.run_config(), kind="rsiagent", exist_ok=resume) as run:
        done = {(e.payload["ablation"], e.payload["seed"]) for e in run.events("arm_finished")}
        if not run.events("experiment_started"):
            run.append(
                "experiment_started", {"arms": [[a, s] for s in config.seeds for a in config.ablations]}
            )
            run.commit()
        stopped = 0
        for seed in config.seeds:
            for ablation in config.ablations:
                if (ablation, seed) in done:
                    continue
                payload = run_arm(config, out, ablation, seed)
                if payload["status"] != "done":  # resumed later: its sub-run grows, no fingerprint
                    stopped += 1
                    run.append("arm_stopped", payload)
                else:
                    run.append("arm_finished", {**payload, **child_runs(out, out / payload["run_dir"])})
                run.commit()
        if not stopped and not run.events("experiment_finished"):
            run.append("experiment_finished", {})
            run.commit()
    return out
