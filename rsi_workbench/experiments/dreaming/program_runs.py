"""``program_agent`` experiment: the program-writing discovery agent against the SciPy agent, and
replay-selected policies against a text hint (the paper's Fig. 5 ablation), at equal agent calls.

Arms (each per seed, one *lane*):

- ``program`` — the language model writes programs (:class:`ProgramAgent`) under the fixed ``policy``;
- ``scipy`` — the built-in SciPy restart-and-perturb agent under the same policy, W and budget;
- ``program_replay`` — the program agent; after each tree the policy is the replay-selected one:
  every ``replay_candidates`` policy (``replay/policies.py``) is replayed on all of this lane's
  recorded trees and the argmax of V^m is deployed (ties keep the current policy);
- ``program_text_hint`` — the program agent under the fixed ``policy``, its prompts extended by a
  text summary of the lane's earlier trees (:func:`history_hint`) instead of a replay-selected policy;
- ``mutate`` — (OpenEvolve task directories only, ``task: {kind: openevolve, dir: PATH}``) the
  non-LLM baseline: seeded mutations of the parent's evolve block
  (:meth:`~rsi_workbench.domains.openevolve.OpenEvolveTask.attempt`), no model.

On an OpenEvolve task the program arms use :class:`OpenEvolveAgent` (the model rewrites the evolve
block only), every evaluation runs in the sandbox, and ``scipy`` is not available; the run records
an ``openevolve_task`` event (the directory, its files' sha256, the evaluator settings).

All lanes grow their trees round by round in lockstep; the W attempts of every program lane in one
round are one batched model call (their prompts differ), so a lane's samples depend on the batch it
shares (documented, deterministic for a given config). Trees are the same :class:`DiscoveryTree` as
imported OpenEvolve/ShinkaEvolve trees. Events (one run directory, rows tagged ``arm``, ``seed``):
``tree_started``, ``tree_node`` (with ``prompt_tokens``, ``completion_tokens`` per program call),
``tree_recorded``, ``policy_selected``, ``lane_finished``, plus the model's ``model_call`` events;
before any lane, ``initial_program_scored`` (the initial program, evaluated once: the baseline of
"initial → best"). With ``usd_budget`` (and the model block's ``price``) the model calls are charged
in USD (``budget_spent``); once it is spent the model lanes stop (``budget_exhausted``). A run ends
with warnings for answers cut at ``max_tokens``, spent budgets and lanes that never beat the initial
program. A resumed run rebuilds every lane from these events and continues (never re-scoring the
initial program).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from rsi_workbench.budget import USD, BudgetLedger
from rsi_workbench.domains.math.program_agent import ProgramAgent, ProgramAgentSettings
from rsi_workbench.domains.math.program_lanes import (
    DEFAULT_ARMS,
    MODEL_FREE,
    LaneSettings,
    ProgramArm,
    ProgramLanes,
)
from rsi_workbench.domains.math.programs import program_isolation, program_spec, run_program
from rsi_workbench.domains.openevolve import OpenEvolveTask
from rsi_workbench.domains.openevolve.agent import OpenEvolveAgent
from rsi_workbench.domains.openevolve.settings import OpenEvolveTaskConfig
from rsi_workbench.experiments.dreaming.config import AnyTaskConfig, TaskConfig, make_task
from rsi_workbench.models import ModelConfig, open_model
from rsi_workbench.records import Run


class Config(LaneSettings, ProgramAgentSettings):
    """The ``program_agent`` experiment: the task, model, arms and seeds; the lanes' settings
    (:class:`LaneSettings`: budget, policies, β) and the agent's (:class:`ProgramAgentSettings`:
    sampling, sandbox clock, prompt slice) as top-level fields."""

    experiment: Literal["program_agent"] = "program_agent"
    task: AnyTaskConfig = Field(default_factory=TaskConfig)
    model: ModelConfig = Field(default_factory=lambda: ModelConfig(cpu_threads=1))
    arms: list[ProgramArm] = Field(default_factory=lambda: list(DEFAULT_ARMS))
    seeds: list[int] = Field(default_factory=lambda: [0, 1, 2])
    usd_budget: float | None = Field(
        default=None,
        gt=0,
        exclude_if=lambda v: v is None,
        description="USD the model calls may cost (the model block's price); spent, the model lanes stop",
    )

    @model_validator(mode="after")
    def _arms_fit_task(self) -> Config:
        oe = isinstance(self.task, OpenEvolveTaskConfig)
        bad = [a for a in self.arms if a == ("scipy" if oe else "mutate")]
        if bad:
            what = "an OpenEvolve task (no built-in SciPy agent)" if oe else "the built-in math tasks"
            raise ValueError(f"arms: {bad[0]!r} is not available for {what}")
        if self.usd_budget is not None and self.model.price is None:
            raise ValueError(
                "usd_budget needs the model's price: model: {price: {input_per_1k: ..., output_per_1k: ...}}"
            )
        return self


def lanes_of(cfg: Config, run: Run, llm: Any = None) -> ProgramLanes:
    """The run's lanes on the configured task: the agent on ``llm`` (else the configured model, opened
    in ``run``), the starting program and its evaluator (the OpenEvolve evaluator or the program runner)."""
    task = make_task(cfg.task)
    oe = task if isinstance(task, OpenEvolveTask) else None
    agent: ProgramAgent | None = None
    if any(a not in MODEL_FREE for a in cfg.arms):
        if llm is None:
            ledger = BudgetLedger.open(run, {USD: cfg.usd_budget}) if cfg.usd_budget is not None else None
            llm = open_model(cfg.model, run, ledger, role="discovery_agent")
        agent = (OpenEvolveAgent if oe is not None else ProgramAgent).from_settings(llm, task, cfg)

    def evaluate(program: str) -> Any:
        if oe is not None:
            return oe.evaluate_program(program)
        return run_program(task, program, wall_s=cfg.program_wall_s)

    return ProgramLanes(
        cfg,
        run,
        task,
        [(arm, seed) for seed in cfg.seeds for arm in cfg.arms],
        agent=agent,
        seed_program=oe.seed_program if oe is not None else program_spec(task).seed_program,
        evaluate=evaluate,
    )


def run_experiment(config: Config, out: Path, *, resume: bool = False, llm: Any = None) -> Path:
    """Run (or resume) every lane in ``out``; ``llm`` overrides the configured model (test doubles)."""
    # programs run only in the sandbox: a plan weaker than the mode is refused before the run exists
    task = make_task(config.task) if isinstance(config.task, OpenEvolveTaskConfig) else None
    if isinstance(task, OpenEvolveTask):
        grant: Any = task.isolation_grant()
    else:
        grant = program_isolation() if any(a != "scipy" for a in config.arms) else None
    run = Run.create(out, config, kind="program_agent", exist_ok=resume)
    with run:
        changed = grant is not None and grant.record_in(run)
        if isinstance(task, OpenEvolveTask) and not any(
            e.payload == task.record() for e in run.events("openevolve_task")
        ):
            run.append("openevolve_task", task.record())  # a resumed run whose directory changed adds one
            changed = True
        if changed:
            run.commit()
        t0 = time.perf_counter()
        lanes_of(config, run, llm).run_all()
        run.append("experiment_session", {"wall_s": time.perf_counter() - t0})
        run.commit()
        for line in end_warnings(run, config):
            print(f"warning: {line}", file=sys.stderr)
    return Path(out)


def end_warnings(run: Run, config: Config) -> list[str]:
    """What a run's end warns about: model answers cut at ``max_tokens``, lanes stopped by a spent
    budget, and lanes where no candidate beat the initial program."""
    from rsi_workbench.experiments.dreaming.program_report import CUT, initial_lines, lane_rows

    out = []
    rows = [e.payload for e in run.events("tree_node") if e.payload.get("finish_reason")]
    cut = sum(r["finish_reason"] == CUT for r in rows)
    if cut:
        out.append(
            f"{cut} of {len(rows)} model answers were cut at max_tokens ({config.max_tokens}): their "
            "programs stop mid-way; raise max_tokens"
        )
    out += [
        f"{e.payload['arm']} seed {e.payload['seed']}: {e.payload['reason']}"
        for e in run.events("budget_exhausted")
    ]
    out += [ln.strip() for ln in initial_lines(run, lane_rows(run)) if ln.startswith("NOTHING BEAT")]
    return out


def report(path: str | Path) -> str:
    """The results table (see :mod:`.program_report`)."""
    from rsi_workbench.experiments.dreaming.program_report import program_report

    return program_report(path)


__all__ = ["Config", "end_warnings", "lanes_of", "report", "run_experiment"]
