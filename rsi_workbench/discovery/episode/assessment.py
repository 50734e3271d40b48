"""The assessment stage: a rubric profile per new version, then Progress against its true predecessors.

The profile (DFM-Bench level 1) is computed from the version's executed evidence; decision criteria
count as fixed before results when the version's event precedes its execution's. Progress is
ancestor-aware: a revision is judged only against its own parents, never against relatives that
merely share data.
"""

from __future__ import annotations

import json
from typing import Any

from rsi_workbench.discovery.assess import judge_progress, plan_overlap, profile, rubric_inputs, weighted
from rsi_workbench.discovery.episode.context import EpisodeContext, executions_by_hypothesis, record_session
from rsi_workbench.discovery.graph import ResearchGraph
from rsi_workbench.discovery.records import (
    DiscoveryRecords,
    ExecutionEvent,
    HypothesisVersion,
    ProfileAssessment,
    ProgressLabel,
    load_records_partial,
)
from rsi_workbench.discovery.roles import Session


def assess(
    ctx: EpisodeContext, ep: int, new: list[HypothesisVersion], graph: ResearchGraph
) -> tuple[DiscoveryRecords, dict[str, ProfileAssessment], dict[str, Any]]:
    """Rubric profile of each new version from its executed evidence; Progress against its true parents."""
    recs = load_records_partial(ctx.run, ep)
    prof_of = {p.hypothesis_id: p for p in recs.profiles}
    inputs_of = profile_new(ctx, ep, new, recs, prof_of)
    for h in new:
        if h.parents:
            judge_new_progress(ctx, ep, h, recs, graph, prof_of)
    return recs, prof_of, inputs_of


def _preregistered(ctx: EpisodeContext, ep: int) -> set[str]:
    """Versions whose event precedes their execution's: their decision criteria were fixed before results."""
    seq_h, seq_x = {}, {}
    for e_ in ctx.run.events():
        if e_.cycle == ep and e_.kind == HypothesisVersion.kind:
            seq_h[e_.payload["hypothesis_id"]] = e_.seq
        elif e_.cycle == ep and e_.kind == ExecutionEvent.kind:
            seq_x[e_.payload["hypothesis_id"]] = e_.seq
    return {h for h in seq_h if h not in seq_x or seq_h[h] < seq_x[h]}


def profile_new(
    ctx: EpisodeContext,
    ep: int,
    new: list[HypothesisVersion],
    recs: DiscoveryRecords,
    prof_of: dict[str, ProfileAssessment],
) -> dict[str, Any]:
    """Append a :class:`ProfileAssessment` per new version (added to ``prof_of``); returns its rubric inputs."""
    ex = executions_by_hypothesis(recs)
    task_of = {t.hypothesis_id: t for t in recs.tasks}
    inputs_of: dict[str, Any] = {}
    prereg = _preregistered(ctx, ep)
    for h in new:
        earlier = [
            o
            for o in recs.hypotheses
            if o.episode < ep or (o.episode == ep and o.hypothesis_id < h.hypothesis_id)
        ]
        e = ex.get(h.hypothesis_id)
        x = rubric_inputs(
            task_of[h.hypothesis_id].model_dump(),
            e.model_dump() if e else None,
            threshold=h.content.criteria.threshold,
            preregistered=h.hypothesis_id in prereg,
            overlap=plan_overlap(h, earlier),
            controls_offered=ctx.domain.controls_offered,
        )
        inputs_of[h.hypothesis_id] = x
        axes = profile(x)
        p = ProfileAssessment(
            hypothesis_id=h.hypothesis_id,
            episode=ep,
            axes=axes,
            weighted=weighted(axes),
            execution_ready=bool(e and e.status == "ok" and all(e.checks.values())),
            inputs={**x.__dict__, "verdict": x.verdict},
        )
        ctx.run.append(p, cycle=ep)
        prof_of[h.hypothesis_id] = p
    return inputs_of


def judge_new_progress(
    ctx: EpisodeContext,
    ep: int,
    h: HypothesisVersion,
    recs: DiscoveryRecords,
    graph: ResearchGraph,
    prof_of: dict[str, ProfileAssessment],
) -> None:
    """The Progress judge's label for a revision against its true predecessors, as a recorded session."""
    ex = executions_by_hypothesis(recs)
    fps = {t.fingerprint for t in recs.tasks if t.hypothesis_id != h.hypothesis_id and t.episode <= ep}
    fingerprint = {t.hypothesis_id: t.fingerprint for t in recs.tasks}[h.hypothesis_id]
    e = ex.get(h.hypothesis_id)
    dom = ctx.domain
    facts: dict[str, Any] = dict(
        operation=h.operation,
        executed=bool(e and e.status == "ok"),
        weighted_child=prof_of[h.hypothesis_id].weighted,
        weighted_predecessors=[prof_of[p].weighted for p in h.parents if p in prof_of],
        defects_child=dom.defects(h, e.status if e else None),
        defects_predecessors=sorted(
            {d for p in h.parents for d in dom.defects(graph.nodes[p], ex[p].status if p in ex else None)}
        ),
    )
    s = Session(f"e{ep:03d}-progress", "progress", _progress_prompt(h, graph, prof_of))
    if ctx.progress_judge is not None:  # model-backed Progress: its own reply, parsed and validated
        label_or_none, reasons, text = ctx.progress_judge.judge(
            {
                **facts,
                "repeats_an_earlier_analysis": fingerprint in fps,
                "statement": h.content.claim.statement,
            }
        )
        s.reply(text, failed=label_or_none is None)
        if label_or_none is None:  # an invalid judgement is a failed turn, never a label
            record_session(ctx, s, ep, [h.hypothesis_id])
            return
        label = label_or_none
    else:
        label, reasons = judge_progress(
            **facts, fingerprint=fingerprint, earlier_fingerprints=fps, margin=ctx.harness.progress_margin
        )
        s.reply(f"label: {label}\nreasons: {'; '.join(reasons)}")
    ctx.run.append(
        ProgressLabel(
            hypothesis_id=h.hypothesis_id,
            predecessors=list(h.parents),
            label=label,  # type: ignore[arg-type]
            episode=ep,
            judge=s.trajectory_id,
            reasons=reasons,
            delta_profile=prof_of[h.hypothesis_id].weighted - max(prof_of[p].weighted for p in h.parents),
        ),
        cycle=ep,
    )
    record_session(ctx, s, ep, [h.hypothesis_id])


def _progress_prompt(
    h: HypothesisVersion, graph: ResearchGraph, prof_of: dict[str, ProfileAssessment]
) -> str:
    return json.dumps(
        {
            "revision": {"statement": h.content.claim.statement, "profile": prof_of[h.hypothesis_id].axes},
            "predecessors": [
                {"statement": graph.nodes[p].content.claim.statement, "profile": prof_of[p].axes}
                for p in h.parents
                if p in prof_of
            ],
            "operation": h.operation,
        },
        sort_keys=True,
    )
