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
        return self

    def run_config(self) -> dict[str, Any]:
        """The frozen config (``engine`` without the per-arm ablation and seed, so a resume validates)."""
        return self.model_dump(mode="json", exclude={"engine": {"ablation", "seed"}})


def arm_settings(config: Config, ablation: str, seed: int) -> RsiAgentSettings:
    curve = config.engine.curve or ablation in config.curve_arms
    return config.engine.model_copy(update={"ablation": ablation, "seed": seed, "curve": curve})


def build_arm(config: Config, seed: int) -> tuple[Any, Any, Any, Any]:
    """(environment, actor factory, verifier, curriculum) for one seed: the built-in MiniWoB++ roles
    (with a model actor in ``roles`` the environment offers text workspaces); the domain's
    :func:`~rsi_workbench.domains.gui.rsiagent.settings.build_miniwob_arm`."""
    e = config.environment
    if isinstance(e, CodeRepairSettings):
        from rsi_workbench.domains.code_repair.rsiagent_env import build_code_repair_arm

        return build_code_repair_arm(e, seed)
    model_actor = not isinstance(config.roles, str) and config.roles.actor is not None
    return build_miniwob_arm(e, config.curriculum, seed, model_actor=model_actor)


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
    env, actor_factory, verifier, curriculum = build_arm(config, seed)
    arm_cfg = {
        "experiment_arm": "rsiagent",
        "environment": config.environment.model_dump(mode="json"),
        "curriculum": config.curriculum.model_dump(mode="json"),
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
            env, actor_factory, verifier, budget = _matched_roles(config, sub, env, actor_factory, verifier)
        res = run_rsiagent(env, actor_factory, verifier, curriculum, settings, sub)
        extra = _matched_payload(config, sub, env, res, budget, seed)
    payload = _arm_payload(res, env, ablation, seed, rel, time.perf_counter() - t0)
    return {**payload, **extra}


def _matched_roles(config: Config, sub: Run, env: Any, actor_factory: Any, verifier: Any) -> tuple[Any, ...]:
    """The arm's actor under the shared learning budget and its verifier audited (the domain's ``matched``)."""
    from rsi_workbench.domains.gui.rsiagent.matched import (
        AuditingVerifier,
        LearningActor,
        LearningBudget,
        committed_attempts,
    )

    budget = LearningBudget(config.learning_episodes, committed_attempts(sub))
    calls = LearningBudget(config.learning_verifier_calls, committed_attempts(sub))
    inner = actor_factory

    def factory() -> Any:
        return LearningActor(inner(), budget, calls)

    budget.calls = calls
    return env, factory, AuditingVerifier(verifier, sub) if config.audit else verifier, budget


def _matched_payload(
    config: Config, sub: Run, env: Any, res: RsiAgentResult, budget: Any, seed: int
) -> dict[str, Any]:
    """Spent learning episodes, the verifier audit and the fresh-instance scores of a finished arm."""
    from rsi_workbench.domains.gui.rsiagent.matched import audit_events, audit_summary, fresh_evaluation

    out: dict[str, Any] = {"learning_episodes_cap": config.learning_episodes}
    if budget is not None:
        out["learning_episodes_spent"] = budget.spent
        calls = budget.calls
        out["spend"] = {
            "learning_episodes": budget.spent,
            "verifier_calls": calls.spent if calls is not None else None,
            "verifier_calls_cap": config.learning_verifier_calls,
            "browser_episodes": dict(getattr(env, "episodes", {})),
        }
    if config.audit:
        out["audit"] = audit_summary(audit_events(sub))
    if config.fresh_instances and res.status == "done":
        from rsi_workbench.domains.gui.rsiagent.actor import BuiltinActor
        from rsi_workbench.domains.gui.rsiagent.miniwob import target_seed_for

        e = config.environment
        assert isinstance(e, MiniwobSettings)
        others = {
            target_seed_for(env.salt, t.page, i, s, vary_template=e.vary_template)
            for s in config.seeds
            for t in e.targets
            for i in range(t.count)
        }
        fresh = fresh_evaluation(
            sub, env, res.memory, BuiltinActor, seed=seed, n=config.fresh_instances, all_target_seeds=others
        )
        out["fresh"] = fresh
        out["fresh_n"] = config.fresh_instances
    return out


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
