"""The Lead stage of an episode: the graph state the Lead sees, and its validated, recorded decision.

An invalid Lead output is a recorded failed action; the built-in :class:`RuleLead` then decides
instead (trajectory ``e{episode:03d}-lead-fallback``).
"""

from __future__ import annotations

import random
from collections import Counter

from rsi_workbench.discovery.episode.context import (
    CampaignSettings,
    EpisodeContext,
    ResearchDomain,
    executions_by_hypothesis,
    record_session,
)
from rsi_workbench.discovery.graph import ResearchGraph
from rsi_workbench.discovery.lead import (
    InvalidLeadDecision,
    LeadDecision,
    LeadState,
    NodeSummary,
    RuleLead,
    format_lead_decision,
    validate_lead_decision,
)
from rsi_workbench.discovery.records import DiscoveryRecords, LeadDecisionRecord
from rsi_workbench.discovery.roles import Session
from rsi_workbench.discovery.workflow import Harness


def lead_state(
    recs: DiscoveryRecords,
    config: CampaignSettings,
    harness: Harness,
    episode: int,
    domain: ResearchDomain,
) -> LeadState:
    """The graph state the Lead sees at the start of ``episode``."""
    g = ResearchGraph.from_records(recs)
    ex = executions_by_hypothesis(recs)
    prof = {p.hypothesis_id: p.weighted for p in recs.profiles}
    lab = {p.hypothesis_id: p.label for p in recs.progress}
    nodes = []
    for h in recs.hypotheses:
        e = ex.get(h.hypothesis_id)
        status = e.status if e else None
        verdict = e.results.get("verdict") if e and e.status == "ok" else status
        kids = g.children.get(h.hypothesis_id, [])
        nodes.append(
            NodeSummary(
                hypothesis_id=h.hypothesis_id,
                direction=h.direction,
                family=h.family,
                operation=h.operation,
                parents=tuple(h.parents),
                episode=h.episode,
                weighted=prof.get(h.hypothesis_id),
                verdict=verdict,
                progress=lab.get(h.hypothesis_id),
                defects=tuple(domain.defects(h, status)),
                children=len(kids),
                repaired=any(g.nodes[k].operation == "repair" for k in kids),
                added=tuple(domain.added(h)),
                ancestors=tuple(sorted(g.ancestors(h.hypothesis_id))),
            )
        )
    ops = Counter(d.operation for d in recs.lead_decisions if d.valid or d.fallback)
    crossed = frozenset(frozenset(h.parents) for h in recs.hypotheses if h.operation == "crossover")
    return LeadState(
        episode=episode,
        round=config.round,
        n_episodes=config.episodes,
        directions=tuple(config.directions),
        nodes=tuple(nodes),
        operation_counts={str(k): v for k, v in ops.items()},
        harness=harness,
        crossed=crossed,
    )


def decide(ctx: EpisodeContext, state: LeadState, rng: random.Random, ep: int) -> tuple[LeadDecision, str]:
    """The Lead's decision for episode ``ep`` and the trajectory that made it (the fallback's if invalid)."""
    traj = f"e{ep:03d}-lead"
    s = Session(traj, "lead", state.prompt())
    attempted: LeadDecision | None = None
    try:
        attempted = ctx.lead.decide(state, rng)
        dec = validate_lead_decision(attempted, state)
        s.reply(dec.raw or format_lead_decision(dec))
        ok, err = True, ""
    except InvalidLeadDecision as e:
        raw = (attempted.raw or format_lead_decision(attempted)) if attempted else getattr(e, "raw", None)
        s.reply(raw or f"invalid decision: {e}", failed=True)
        ok, err = False, str(e)
        dec = attempted or LeadDecision("", (), "")
    record_session(ctx, s, ep, [])
    ctx.run.append(
        LeadDecisionRecord(
            episode=ep,
            trajectory_id=traj,
            direction=dec.direction,
            operation=dec.operation,  # type: ignore[arg-type]
            parents=list(dec.parents),
            valid=ok,
            error=err,
            lead=getattr(ctx.lead, "name", "lead"),
        ),
        cycle=ep,
    )
    if ok:
        return dec, traj
    return _fallback(ctx, state, rng, ep)


def _fallback(ctx: EpisodeContext, state: LeadState, rng: random.Random, ep: int) -> tuple[LeadDecision, str]:
    """An invalid decision is a recorded failed action; the built-in Lead decides instead."""
    traj = f"e{ep:03d}-lead-fallback"
    s = Session(traj, "lead", state.prompt())
    dec = validate_lead_decision(RuleLead().decide(state, rng), state)
    s.reply(format_lead_decision(dec))
    record_session(ctx, s, ep, [])
    ctx.run.append(
        LeadDecisionRecord(
            episode=ep,
            trajectory_id=traj,
            direction=dec.direction,
            operation=dec.operation,  # type: ignore[arg-type]
            parents=list(dec.parents),
            valid=True,
            fallback=True,
            lead="rule-lead",
        ),
        cycle=ep,
    )
    return dec, traj
