"""The critique stage: blinded pairwise comparisons of each new version against earlier ones.

Compatible opponents (same direction: same population, outcome and metric) are drawn first. Each
dossier is checked to carry no hypothesis or trajectory id before the Critique sees it; every
judgement is a :class:`CritiquePreference` record, the input of TrueSkill hypothesis credit.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

from rsi_workbench.agents import Message
from rsi_workbench.discovery.assess import BlindedCritique, RubricInputs, blinded_dossier, check_blinded
from rsi_workbench.discovery.episode.context import EpisodeContext, record_session
from rsi_workbench.discovery.graph import ResearchGraph
from rsi_workbench.discovery.records import (
    CritiquePreference,
    DiscoveryRecords,
    HypothesisVersion,
    ProfileAssessment,
)
from rsi_workbench.discovery.roles import Session


def critique(
    ctx: EpisodeContext,
    ep: int,
    new: list[HypothesisVersion],
    recs: DiscoveryRecords,
    graph: ResearchGraph,
    prof_of: dict[str, ProfileAssessment],
    inputs_of: dict[str, Any],
    rng: random.Random,
    hidden: set[str],
) -> None:
    """Blinded pairwise critiques of each new version against compatible earlier ones."""
    run, cfg = ctx.run, ctx.config
    crit = Session(f"e{ep:03d}-critique", "critique", "Compare the following investigations, blinded.")
    pairs, stop = _pairs(ctx, new, recs, graph, prof_of, inputs_of, rng, hidden)
    judged = _judgements(ctx.critique, [(da, db) for _, _, da, db in pairs])
    try:
        j = 0
        for a, b, da, db in pairs:
            crit.messages.append(Message("user", json.dumps({"a": da, "b": db}, sort_keys=True)))
            rubric: dict[str, Any] = {"tie_margin": ctx.harness.critique.tie_margin}
            if judged is not None:  # a model-backed Critique: its own reply, parsed
                pref, text = next(judged)
                crit.reply(text, failed=pref is None)
                if pref is None:  # an invalid judgement is a failed turn, never a preference
                    continue
                outcome = pref
                rubric["critic_model"] = str(getattr(ctx.critique, "model_name", "model"))
            else:
                outcome = ctx.critique.compare(da, db, None)
                crit.reply(f"preference: {outcome}")
            if isinstance(ctx.critique, BlindedCritique):
                rubric.update(score_a=ctx.critique.score(da), score_b=ctx.critique.score(db))
            run.append(
                CritiquePreference(
                    comparison_id=f"c{ep:03d}-{j}",
                    a=a,
                    b=b,
                    outcome=outcome,
                    episode=ep,
                    round=cfg.round,
                    domain=ctx.domain.name,
                    critic=crit.trajectory_id,
                    rubric=rubric,
                ),
                cycle=ep,
            )
            j += 1
    finally:
        close = getattr(judged, "close", None)
        if close is not None:  # answers computed ahead and not taken are dropped
            close()
    if stop is not None:  # a dossier failed the blinding check: after the comparisons before it
        raise stop
    record_session(ctx, crit, ep, [h.hypothesis_id for h in new])


def _pairs(
    ctx: EpisodeContext,
    new: list[HypothesisVersion],
    recs: DiscoveryRecords,
    graph: ResearchGraph,
    prof_of: dict[str, ProfileAssessment],
    inputs_of: dict[str, Any],
    rng: random.Random,
    hidden: set[str],
) -> tuple[list[tuple[str, str, dict[str, Any], dict[str, Any]]], Exception | None]:
    """Every comparison of the stage, ``(a, b, dossier a, dossier b)``, drawn as before (opponents,
    then sides, per new version) and blinding-checked; they depend on no judgement, so a model
    Critique can judge them together. A failed check (or dossier) ends the list and is returned, to
    be raised after the comparisons before it were judged and recorded (as when each was judged at
    once)."""
    all_ids = {x.hypothesis_id for x in recs.hypotheses} | {t.trajectory_id for t in recs.turns}
    k = ctx.harness.critique.comparisons_per_version
    out: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = []
    for h in new:
        pool_ids = [
            o.hypothesis_id
            for o in recs.hypotheses
            if o.hypothesis_id != h.hypothesis_id and o.hypothesis_id in prof_of
        ]
        # compatible opponents first (same direction: same population, outcome and metric), then others
        same = [x for x in pool_ids if graph.nodes[x].direction == h.direction]
        rest = [x for x in pool_ids if x not in same]
        opponents = rng.sample(same, min(k, len(same)))
        opponents += rng.sample(rest, min(k - len(opponents), len(rest)))
        for other in opponents:
            a, b = (h.hypothesis_id, other) if rng.random() < 0.5 else (other, h.hypothesis_id)
            try:
                da = blinded_dossier(graph.nodes[a], _inputs(inputs_of, prof_of, a))
                db = blinded_dossier(graph.nodes[b], _inputs(inputs_of, prof_of, b))
                check_blinded({"a": da, "b": db}, all_ids | hidden)
            except Exception as e:  # noqa: BLE001 - raised by the caller, in sequence
                return out, e
            out.append((a, b, da, db))
    return out, None


def _judgements(critique: Any, pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> Iterator[Any] | None:
    """A model Critique's ``(preference or None, reply)`` per pair, lazily and in order: through its
    ``judgements`` (requests in flight together, recorded in order) or pair by pair through
    ``judge_blinded``; None for a rule Critique."""
    many = getattr(critique, "judgements", None)
    if many is not None:
        return iter(many(pairs))
    one = getattr(critique, "judge_blinded", None)
    return None if one is None else (one(da, db) for da, db in pairs)


def _inputs(inputs_of: dict[str, Any], prof_of: dict[str, ProfileAssessment], hid: str) -> RubricInputs:
    """Rubric inputs of a version: computed this episode, or rebuilt from its recorded profile."""
    if hid in inputs_of:
        return inputs_of[hid]
    raw = {k: v for k, v in prof_of[hid].inputs.items() if k in RubricInputs.__dataclass_fields__}
    return RubricInputs(**raw)
