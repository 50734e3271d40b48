"""``discovery`` experiment: a campaign of Lead-driven episodes on the built-in tabular domain.

The config model and the entry points. The episode workflow itself (Lead decision, worker,
Compiler, assessment, critique; paper Figure 1) is the engine's
(:mod:`rsi_workbench.discovery.episode`, :mod:`rsi_workbench.discovery.campaign`); this experiment
binds it to the tabular domain (:class:`rsi_workbench.domains.tabular.binding.TabularResearch`)
and adds the domain's built-in Generation / Evolution roles. State is rebuilt from the events at the
start of each episode, so a resumed campaign continues exactly where the last completed episode
ended (an attempt cut short by a crash is ignored by the loaders and run again).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_serializer

from rsi_workbench.agents import Judge, Proposer
from rsi_workbench.budget import BudgetLedger
from rsi_workbench.config import StrictModel
from rsi_workbench.discovery import campaign as engine
from rsi_workbench.discovery.episode import lead_state as _lead_state
from rsi_workbench.discovery.lead import Lead, LeadState, RuleLead
from rsi_workbench.discovery.records import DiscoveryRecords, load_records_partial
from rsi_workbench.discovery.report import campaign_report
from rsi_workbench.discovery.workflow import Harness
from rsi_workbench.domains import tabular
from rsi_workbench.domains.tabular.binding import DOMAIN, TabularResearch, known_directions, noise_controls
from rsi_workbench.domains.tabular.llm_roles import Roles, check_roles, open_roles
from rsi_workbench.domains.tabular.roles import TabularEvolution, TabularGeneration
from rsi_workbench.execute import ExecutorConfig
from rsi_workbench.models.usage import with_model_calls
from rsi_workbench.records import Run

__all__ = [
    "DOMAIN",
    "Budgets",
    "Config",
    "TabularResearch",
    "lead_state",
    "research",
    "load_records_partial",
    "report",
    "run_campaign",
    "run_experiment",
]


class Budgets(StrictModel):
    """Agent calls (one per role turn, and one per live model call of a model-backed role), external
    feedback (one per executed analysis) and, when set, model tokens (in + out, live calls only)."""

    agent_calls: int = Field(default=800, ge=1)
    external_feedback: int = Field(default=60, ge=1)
    model_tokens: int | None = Field(default=None, ge=1, description="None: tokens are not budgeted")

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:
        return _without_none(handler(self), "model_tokens")


class Config(StrictModel):
    experiment: Literal["discovery"] = "discovery"
    seed: int = 0
    round: int = Field(default=0, ge=0, description="rediscovery round k of the records")
    episodes: int = Field(default=20, ge=1)
    directions: list[str] = Field(default_factory=lambda: sorted(tabular.DIRECTIONS), min_length=1)
    noise_control: bool = Field(default=True, description="episode 0 also publishes a pure-noise control")
    n_bootstrap: int = Field(default=400, ge=50)
    outer_folds: int = Field(default=5, ge=2, le=10)
    split_seed: int = Field(default=0, description="seed of the fixed patient-level outer folds")
    budgets: Budgets = Budgets()
    harness: Harness = Harness()
    executor: Literal["serial", "process", "ray"] | ExecutorConfig = Field(
        default="serial", description="a kind name (with `workers`) or an executor block"
    )
    workers: int = Field(default=1, ge=1)
    roles: Roles | None = Field(
        default=None, description="model-backed research roles; a role left out is the rule role"
    )

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:  # rule-only configs dump exactly as before
        return _without_none(handler(self), "roles")

    @field_validator("directions")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        return known_directions(v)


def _without_none(data: dict[str, Any], key: str) -> dict[str, Any]:
    if data.get(key) is None:
        data.pop(key, None)
    return data


def _execute(task: dict[str, Any], workdir: str) -> dict[str, Any]:
    """Module-level so a process pool can run it."""
    return tabular.run_task(task, workdir)


def research(config: Config) -> TabularResearch:
    """The tabular domain with this campaign's analysis settings."""
    return TabularResearch(
        _execute, config.n_bootstrap, config.outer_folds, config.split_seed, config.noise_control
    )


def lead_state(recs: DiscoveryRecords, config: Config, harness: Harness, episode: int) -> LeadState:
    """The graph state the Lead sees at the start of ``episode``."""
    return _lead_state(recs, config, harness, episode, research(config))


def run_campaign(
    config: Config,
    out: str | Path,
    *,
    resume: bool = False,
    lead: Lead | None = None,
    harness: Harness | None = None,
    generation: Proposer | None = None,
    evolution: Proposer | None = None,
    critique: Judge | None = None,
    progress: bool = True,
) -> Path:
    """Run (or resume) a campaign of ``config.episodes`` episodes; returns the run directory.

    Roles given here win over the config's ``roles:`` block; a role in neither is the rule role.
    An ``openai`` role model is probed first and refused (before the run exists) when it cannot
    do what its role needs."""
    cfg_roles = config.roles
    if cfg_roles is not None:
        given = {"lead": lead, "generation": generation, "evolution": evolution, "critique": critique}
        cfg_roles = cfg_roles.model_copy(update={r: None for r, v in given.items() if v is not None})
    probes = check_roles(cfg_roles)

    def model_roles(run: Run, ledger: BudgetLedger) -> dict[str, Any]:
        if probes and not run.events("model_probe"):
            run.append("model_probe", {"roles": probes})
        return open_roles(cfg_roles, run, ledger)

    return engine.run_campaign(
        research(config),
        config,
        out,
        lead=lead or RuleLead(),
        harness=harness or config.harness,
        generation=generation or TabularGeneration(),
        evolution=evolution or TabularEvolution(),
        critique=critique,
        resume=resume,
        kind="discovery",
        progress=progress,
        open_roles=model_roles if cfg_roles is not None and cfg_roles.active() else None,
    )


def run_experiment(config: Config, out: Path, *, resume: bool = False) -> Path:
    """CLI entry point (``rsi-workbench run configs/discovery/<name>.yaml``)."""
    return run_campaign(config, out, resume=resume)


def report(path: str | Path) -> str:
    """The campaign's tables: graph size and depth, operation shares, profiles first vs last episode,
    and wall times (printed only; a run or ``report --save`` writes ``report.txt``)."""
    text = campaign_report(path, controls=noise_controls) + "\n\n" + "\n".join(_wall(Path(path)))
    return with_model_calls(text, path)


def _wall(path: Path) -> list[str]:
    """Each finished episode's wall time (its last start to its finish) and the campaign's (first to
    last event, pauses between resumed sessions included), from the events."""
    from rsi_workbench.experiments.walltime import span_s, wall_lines
    from rsi_workbench.records import Run

    events = Run.open(path).events()
    started: dict[int, float] = {}
    episodes = []
    for e in events:
        if e.kind == "episode_started":
            started[int(e.payload["episode"])] = e.time
        elif e.kind == "episode_finished" and int(e.payload["episode"]) in started:
            ep = int(e.payload["episode"])
            episodes.append((str(ep), e.time - started[ep]))
    return wall_lines(
        episodes, span_s(events), "from the events: campaign first to last event", per="episode"
    )
