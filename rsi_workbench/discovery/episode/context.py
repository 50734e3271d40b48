"""What one episode works with: the run, the campaign settings, the harness ψ, the roles and the domain.

The engine knows no domain. Everything that depends on what a plan means — which data a direction
has, whether a plan's spec is runnable, its defects, how it compiles to a task and runs, which
sources it cites — comes through :class:`ResearchDomain`, which an experiment implements for its
domain (``rsi_workbench.experiments.discovery`` binds the tabular one).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from rsi_workbench import budget
from rsi_workbench.agents import Judge, Proposer
from rsi_workbench.discovery.graph import ResearchGraph
from rsi_workbench.discovery.lead import Lead, LeadDecision
from rsi_workbench.discovery.records import DiscoveryRecords, ExecutionEvent, HypothesisVersion, RoleTurn
from rsi_workbench.discovery.roles import Session
from rsi_workbench.discovery.workflow import Harness
from rsi_workbench.execute import ExecutorConfig, ExecutorKind
from rsi_workbench.records import Run


class CampaignBudgets(Protocol):
    @property
    def agent_calls(self) -> int: ...
    @property
    def external_feedback(self) -> int: ...


class CampaignSettings(Protocol):
    """The part of a campaign's config the engine reads (an experiment's config model has more)."""

    @property
    def seed(self) -> int: ...
    @property
    def round(self) -> int: ...
    @property
    def episodes(self) -> int: ...
    @property
    def directions(self) -> list[str]: ...
    @property
    def budgets(self) -> CampaignBudgets: ...
    @property
    def executor(self) -> ExecutorKind | ExecutorConfig: ...
    @property
    def workers(self) -> int: ...


class ResearchDomain(Protocol):
    """What the episode workflow asks of a research domain (an experiment's binding implements it)."""

    @property
    def name(self) -> str:
        """Recorded as the ``domain`` of every hypothesis version and critique."""
        ...

    @property
    def controls_offered(self) -> int:
        """How many control analyses a plan may choose from (a rubric input)."""
        ...

    @property
    def execute(self) -> Callable[[dict[str, Any], str], dict[str, Any]]:
        """Runs an executable task in a worker; picklable (a module-level function)."""
        ...

    def defects(self, h: HypothesisVersion, status: str | None) -> list[str]:
        """Known defects of a version's plan, given its execution status (None: not executed)."""
        ...

    def added(self, h: HypothesisVersion) -> tuple[str, ...]:
        """What a version's plan adds beyond its baseline (shown to the Lead)."""
        ...

    def inspect_data(self, direction: str, groups: list[str]) -> dict[str, Any]:
        """Worker tool: what a direction's data records; raises ``ToolError`` for data it lacks."""
        ...

    def validate_plan(self, spec: dict[str, Any]) -> None:
        """Raise ``ValueError`` / ``KeyError`` when a plan's spec is not runnable in this domain."""
        ...

    def worker_context(
        self, role: str, dec: LeadDecision, recs: DiscoveryRecords, graph: ResearchGraph, episode: int
    ) -> dict[str, Any]:
        """The domain's part of a worker's context (Generation or Evolution), next to the engine's."""
        ...

    def link_sources(self, run: Run, recs: DiscoveryRecords, h: HypothesisVersion, episode: int) -> None:
        """Append the sources a new version uses (data, splits, dependencies) and its support links."""
        ...

    def compile_task(self, h: HypothesisVersion, task_id: str) -> dict[str, Any]:
        """The Compiler's task for a version: inputs, environment, outputs, checks, dependencies."""
        ...

    def run_blocked(self, task: dict[str, Any], workdir: Path) -> dict[str, Any]:
        """The recorded outcome of a task that cannot run (its required data is unavailable)."""
        ...


@dataclass
class EpisodeContext:
    """Everything an episode's stages share; the run and the budget ledger are open."""

    run: Run
    config: CampaignSettings
    harness: Harness
    lead: Lead
    generation: Proposer
    evolution: Proposer
    critique: Judge
    ledger: budget.BudgetLedger
    domain: ResearchDomain
    progress_judge: Any = None  # a model-backed Progress (``judges.LLMProgress``); None: the rule judge


def executions_by_hypothesis(recs: DiscoveryRecords) -> dict[str, ExecutionEvent]:
    """The (last) execution of each hypothesis version."""
    return {e.hypothesis_id: e for e in recs.executions}


def record_session(ctx: EpisodeContext, s: Session, ep: int, hids: list[str]) -> None:
    """Append a role session's turns as role-tagged transcript records and charge one agent call each."""
    for i, t in enumerate(s.turns):
        ctx.run.append(
            RoleTurn(
                trajectory_id=s.trajectory_id,
                role=s.role,  # type: ignore[arg-type]
                episode=ep,
                round=ctx.config.round,
                turn=i,
                messages_in=[_msg(m) for m in t.messages_in],
                output=_msg(t.output),
                failed=t.failed,
                hypothesis_ids=hids,
                model=_model_of(ctx, s.role),
            ),
            cycle=ep,
        )
    # one agent call per turn, unless the role asks a model through the model room on this ledger: the
    # recorder charges that role one call per live request (replays are free), so no turn counts twice
    if s.turns and not _charged_by_model_room(ctx, s.role):
        ctx.ledger.spend(budget.AGENT_CALLS, len(s.turns), reason=f"{s.role} turns", cycle=ep)


def _role_object(ctx: EpisodeContext, role: str) -> Any:
    if role == "lead":
        return ctx.lead
    return {
        "generation": ctx.generation,
        "evolution": ctx.evolution,
        "critique": ctx.critique,
        "progress": ctx.progress_judge,
    }.get(role)


def _charged_by_model_room(ctx: EpisodeContext, role: str) -> bool:
    """Whether a role's model calls are charged to this campaign's ledger by the model room's
    recorder (``models.open_model(..., ledger)``); a built-in role or a bare Hugging Face Lead is not."""
    llm = getattr(_role_object(ctx, role), "llm", None)
    return llm is not None and getattr(llm, "ledger", None) is ctx.ledger


def _model_of(ctx: EpisodeContext, role: str) -> str:
    """Who answered a role's turns: the Lead's name, a model-backed worker's ``model_name``, else builtin."""
    if role == "lead":
        return str(getattr(ctx.lead, "name", "builtin"))
    return str(getattr(_role_object(ctx, role), "model_name", "builtin"))


def _msg(m: Any) -> dict[str, Any]:
    return {"role": m.role, "content": m.content, "tool_call": m.tool_call}
