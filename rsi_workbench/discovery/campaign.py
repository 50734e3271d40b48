"""A campaign: episodes of the DiscoveryRSI workflow on one research domain, under one harness ψ.

The engine's loop: open (or resume) the run and its budget ledger, record which Lead and harness
run it, then play each episode not yet finished (:func:`rsi_workbench.discovery.episode.run_episode`)
until the episodes or a budget run out. An experiment binds it to a domain and gives its config
(``rsi_workbench.experiments.discovery.campaign`` for the tabular domain).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from rsi_workbench import budget
from rsi_workbench.agents import Judge, Proposer
from rsi_workbench.discovery.assess import BlindedCritique
from rsi_workbench.discovery.episode import CampaignSettings, EpisodeContext, ResearchDomain, run_episode
from rsi_workbench.discovery.lead import Lead
from rsi_workbench.discovery.records import EpisodeFinished, EpisodeStarted
from rsi_workbench.discovery.workflow import Harness
from rsi_workbench.records import Run


def run_campaign(
    domain: ResearchDomain,
    config: CampaignSettings,
    out: str | Path,
    *,
    lead: Lead,
    harness: Harness,
    generation: Proposer,
    evolution: Proposer,
    critique: Judge | None = None,
    resume: bool = False,
    kind: str = "discovery",
    progress: bool = True,
    open_roles: Callable[[Run, budget.BudgetLedger], Mapping[str, Any]] | None = None,
) -> Path:
    """Run (or resume) ``config.episodes`` episodes on ``domain``; returns the run directory.

    ``config`` must be the experiment's validated config model (it is frozen into the run).
    ``open_roles(run, ledger)`` may return model-backed roles (``lead``, ``generation``,
    ``evolution``, ``critique``, ``progress``) built on the open run and ledger; they replace the
    ones given (``progress``: the rule Progress judge otherwise). A ``model_tokens``
    budget is opened when ``config.budgets`` has one; a budget spent inside an episode stops the
    campaign cleanly (the cut episode is ignored by the loaders and run again on resume).
    """
    out = Path(out)
    if not isinstance(config, BaseModel):
        raise TypeError("config: the experiment's validated config model (it is frozen into the run)")
    run = Run.create(out, config, kind=kind, exist_ok=resume, exclusive=True)
    with run:
        ledger = budget.BudgetLedger.open(run, _budgets(config))
        roles = dict(open_roles(run, ledger)) if open_roles else {}
        lead, generation, evolution = (
            roles.get("lead", lead),
            roles.get("generation", generation),
            roles.get("evolution", evolution),
        )
        critique = roles.get("critique", critique)
        ctx = EpisodeContext(
            run=run,
            config=config,
            harness=harness,
            lead=lead,
            generation=generation,
            evolution=evolution,
            critique=critique or BlindedCritique(tie_margin=harness.critique.tie_margin),
            ledger=ledger,
            domain=domain,
            progress_judge=roles.get("progress"),
        )
        run.append(
            "campaign_started",
            {
                "lead": getattr(lead, "name", "lead"),
                "harness": harness.version,
                "harness_digest": harness.digest(),
                "harness_config": harness.model_dump(mode="json"),
                **({"model_roles": {r: getattr(v, "name", r) for r, v in roles.items()}} if roles else {}),
            },
        )
        run.commit()
        events = run.events()
        stopped = _play(ctx, events, progress)
        if not any(e.kind == "campaign_finished" for e in events):
            run.append("campaign_finished", {"stopped": stopped, "budgets": ledger.report()})
        run.commit()
    return out


def _budgets(config: CampaignSettings) -> dict[str, float]:
    """The campaign's budgets; ``model_tokens`` only when the config sets it."""
    budgets: dict[str, float] = {
        budget.AGENT_CALLS: config.budgets.agent_calls,
        budget.EXTERNAL_FEEDBACK: config.budgets.external_feedback,
    }
    model_tokens = getattr(config.budgets, "model_tokens", None)
    if model_tokens is not None:
        budgets[budget.MODEL_TOKENS] = model_tokens
    return budgets


def _play(ctx: EpisodeContext, events: list[Any], progress: bool) -> str:
    """Play every episode not yet finished until the episodes or a budget run out; returns why it
    stopped early (empty when it did not)."""
    from tqdm.auto import tqdm

    ledger, config = ctx.ledger, ctx.config
    done = {int(e.payload["episode"]) for e in events if e.kind == EpisodeFinished.kind}
    attempts = Counter(int(e.payload["episode"]) for e in events if e.kind == EpisodeStarted.kind)
    need_calls = 14 + 2 * ctx.harness.critique.comparisons_per_version
    for ep in tqdm(range(config.episodes), desc="episodes", unit="ep", disable=not progress):
        if ep in done:
            continue
        if (
            ledger.remaining(budget.AGENT_CALLS) < need_calls
            or ledger.remaining(budget.EXTERNAL_FEEDBACK) < 2
        ):
            return f"budget exhausted before episode {ep}: {ledger.report()}"
        if budget.MODEL_TOKENS in ledger.initial and ledger.remaining(budget.MODEL_TOKENS) <= 0:
            return f"model_tokens budget spent before episode {ep}: {ledger.report()}"
        try:
            run_episode(ctx, ep, attempts[ep])
        except budget.BudgetExceeded as e:
            return f"budget exhausted during episode {ep}: {e}"
    return ""
