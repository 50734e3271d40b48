"""One DiscoveryRSI episode (paper, Figure 1), stage by stage, on any research domain.

1. :mod:`.decision` — the Lead picks direction, parents and operation from the graph state;
2. :mod:`.work` — Generation (restart) or Evolution (evolve / repair / crossover) publishes a draft
   through its tools, and the Lead promotes it to a hypothesis version with its contributions;
3. :mod:`.execution` — the Compiler turns the plan into a task that really runs;
4. :mod:`.assessment` — the rubric profile and the ancestor-aware Progress label;
5. :mod:`.critique` — blinded pairwise Critiques, written back as linked records.

Every role output is a role-tagged transcript turn (:func:`.context.record_session`). State is
rebuilt from the events at the start of each episode, so a resumed campaign continues exactly where
the last completed episode ended (an attempt cut short by a crash is ignored by the loaders and run
again). What a plan means is the domain's business (:class:`.context.ResearchDomain`).
"""

from __future__ import annotations

import random

from rsi_workbench.discovery.episode.assessment import assess
from rsi_workbench.discovery.episode.context import (
    CampaignSettings,
    EpisodeContext,
    ResearchDomain,
    record_session,
)
from rsi_workbench.discovery.episode.critique import critique
from rsi_workbench.discovery.episode.decision import decide, lead_state
from rsi_workbench.discovery.episode.execution import compile_and_execute
from rsi_workbench.discovery.episode.work import work
from rsi_workbench.discovery.graph import ResearchGraph
from rsi_workbench.discovery.records import EpisodeFinished, EpisodeStarted, load_records


def run_episode(ctx: EpisodeContext, ep: int, attempt: int) -> None:
    """One episode: Lead decision, worker proposal, compile and execute, assessment, critique."""
    run, cfg = ctx.run, ctx.config
    run.append(EpisodeStarted(episode=ep, attempt=attempt, harness_version=ctx.harness.version), cycle=ep)
    recs = load_records(run)
    graph = ResearchGraph.from_records(recs)
    rng = random.Random(f"{cfg.seed}:{ep}")
    state = lead_state(recs, cfg, ctx.harness, ep, ctx.domain)
    dec, lead_traj = decide(ctx, state, rng, ep)
    new, worker = work(ctx, ep, dec, lead_traj, recs, graph, rng)
    compile_and_execute(ctx, ep, new)
    recs, prof_of, inputs_of = assess(ctx, ep, new, graph)
    critique(ctx, ep, new, recs, graph, prof_of, inputs_of, rng, {worker, lead_traj})
    run.append(
        EpisodeFinished(
            episode=ep,
            attempt=attempt,
            operations={dec.operation: 1},
            hypotheses=[h.hypothesis_id for h in new],
        ),
        cycle=ep,
    )
    run.commit()


__all__ = [
    "CampaignSettings",
    "EpisodeContext",
    "ResearchDomain",
    "lead_state",
    "record_session",
    "run_episode",
]
