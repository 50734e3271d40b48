"""``discovery`` experiment: a campaign of Lead-driven episodes on the built-in tabular domain.

One episode (paper, Figure 1): the Lead picks direction, parents and operation; Generation
(restart) or Evolution (evolve / repair / crossover) publishes a draft that the Lead promotes to a
hypothesis version; the Compiler turns its plan into a task that really runs; the rubric profile,
the ancestor-aware Progress label and blinded pairwise Critiques are written back as linked
records. Every role output is a role-tagged transcript turn. State is rebuilt from the events at
the start of each episode, so a resumed campaign continues exactly where the last completed
episode ended (an attempt cut short by a crash is ignored by the loaders and run again).
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from rsi_workbench import budget
from rsi_workbench.agents import Judge, Message, Proposer
from rsi_workbench.config import StrictModel
from rsi_workbench.discovery.assess import (
    BlindedCritique,
    RubricInputs,
    axis_means,
    blinded_dossier,
    campaign_allocation,
    check_blinded,
    judge_progress,
    operation_shares,
    path_scores,
    plan_overlap,
    profile,
    profile_table,
    rubric_inputs,
    weighted,
)
from rsi_workbench.discovery.graph import ResearchGraph
from rsi_workbench.discovery.lead import (
    InvalidLeadDecision,
    Lead,
    LeadDecision,
    LeadState,
    NodeSummary,
    RuleLead,
    format_lead_decision,
    validate_lead_decision,
)
from rsi_workbench.discovery.records import (
    EVENT_KINDS,
    CompiledTask,
    Contribution,
    ContributionEvidence,
    CritiquePreference,
    DiscoveryRecords,
    Draft,
    DraftPromotion,
    EpisodeFinished,
    EpisodeStarted,
    ExecutionEvent,
    HypothesisVersion,
    InvalidHypothesis,
    LeadAssignment,
    LeadDecisionRecord,
    ProfileAssessment,
    ProgressLabel,
    RoleTurn,
    SourceRecord,
    SupportLink,
    completed_events,
    load_records,
    validate_hypothesis,
)
from rsi_workbench.discovery.roles import Session, ToolError
from rsi_workbench.domains.tabular.roles import TabularEvolution, TabularGeneration
from rsi_workbench.discovery.workflow import Harness
from rsi_workbench.domains import tabular
from rsi_workbench.execute import make_executor
from rsi_workbench.records import Run

DOMAIN = "tabular"


class Budgets(StrictModel):
    """Agent calls (one per role turn) and external feedback (one per executed analysis)."""

    agent_calls: int = Field(default=800, ge=1)
    external_feedback: int = Field(default=60, ge=1)


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
    executor: Literal["serial", "process"] = "serial"
    workers: int = Field(default=1, ge=1)

    @field_validator("directions")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        bad = [d for d in v if d not in tabular.DIRECTIONS]
        if bad:
            raise ValueError(f"unknown direction(s) {bad}; allowed: {sorted(tabular.DIRECTIONS)}")
        return v


def _execute(task: dict[str, Any], workdir: str) -> dict[str, Any]:
    """Module-level so a process pool can run it."""
    return tabular.run_task(task, workdir)


@dataclass
class _Ctx:
    run: Run
    config: Config
    harness: Harness
    lead: Lead
    generation: Proposer
    evolution: Proposer
    critique: Judge
    ledger: budget.BudgetLedger


# -- state derived from the records -------------------------------------------------------------
def _spec(h: HypothesisVersion) -> tabular.AnalysisSpec:
    return tabular.AnalysisSpec.from_dict(h.content.plan.spec)


def _status(recs: DiscoveryRecords) -> dict[str, ExecutionEvent]:
    return {e.hypothesis_id: e for e in recs.executions}


def lead_state(recs: DiscoveryRecords, config: Config, harness: Harness, episode: int) -> LeadState:
    """The graph state the Lead sees at the start of ``episode``."""
    g = ResearchGraph.from_records(recs)
    ex = _status(recs)
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
                defects=tuple(tabular.spec_defects(_spec(h), status)),
                children=len(kids),
                repaired=any(g.nodes[k].operation == "repair" for k in kids),
                added=tuple(_spec(h).added),
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


# -- one episode --------------------------------------------------------------------------------
def _record_session(ctx: _Ctx, s: Session, ep: int, hids: list[str]) -> None:
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
                model=getattr(ctx.lead, "name", "builtin") if s.role == "lead" else "builtin",
            ),
            cycle=ep,
        )
    if s.turns:
        ctx.ledger.spend(budget.AGENT_CALLS, len(s.turns), reason=f"{s.role} turns", cycle=ep)


def _msg(m: Any) -> dict[str, Any]:
    return {"role": m.role, "content": m.content, "tool_call": m.tool_call}


def _ensure_sources(ctx: _Ctx, recs: DiscoveryRecords, spec: tabular.AnalysisSpec, hid: str, ep: int) -> None:
    """Dataset, split file and missing-data dependencies as linked sources (shared, not lineage)."""
    known = {s.source_id for s in recs.sources}
    d = tabular.direction(spec.direction)
    links: list[tuple[str, str]] = []
    ds_id = f"dataset:{d.dataset}"
    if ds_id not in known:
        frame, _ = tabular.load_direction(spec.direction)
        sha = hashlib.sha256(frame.to_csv().encode()).hexdigest()
        rec = SourceRecord(
            source_id=ds_id, source_kind="dataset", name=d.dataset, sha256=sha, detail=d.population
        )
        ctx.run.append(rec, cycle=ep)
        recs.sources.append(rec)
    links.append((ds_id, "uses_data"))
    split_bytes = tabular.analysis.splits_csv(spec.direction, spec.outer_folds, spec.split_seed)
    split_sha = ctx.run.artifacts.put(split_bytes, name=f"splits-{d.dataset}-{d.outcome}.csv")
    sp_id = f"split:{spec.direction}:{spec.outer_folds}:{spec.split_seed}"
    if sp_id not in known:
        rec = SourceRecord(
            source_id=sp_id,
            source_kind="artifact",
            name=f"fixed patient-level splits for {spec.direction}",
            sha256=split_sha,
            path=f"artifacts/{split_sha}",
        )
        ctx.run.append(rec, cycle=ep)
        recs.sources.append(rec)
    links.append((sp_id, "uses_split"))
    for g in list(spec.required_groups()) + list(spec.deferred):
        if d.available(g):
            continue
        dep_id = f"dependency:{spec.direction}:{g}"
        if dep_id not in {s.source_id for s in recs.sources}:
            rec = SourceRecord(
                source_id=dep_id,
                source_kind="dependency",
                name=g,
                available=False,
                detail=d.unavailable.get(g, ""),
            )
            ctx.run.append(rec, cycle=ep)
            recs.sources.append(rec)
        links.append((dep_id, "cites"))
    for sid, rel in links:
        ctx.run.append(SupportLink(hypothesis_id=hid, source_id=sid, relation=rel), cycle=ep)  # type: ignore[arg-type]


def _decide(ctx: _Ctx, state: LeadState, rng: random.Random, ep: int) -> tuple[LeadDecision, str]:
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
    _record_session(ctx, s, ep, [])
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
    # an invalid decision is a recorded failed action; the built-in Lead decides instead
    traj = f"e{ep:03d}-lead-fallback"
    s = Session(traj, "lead", state.prompt())
    dec = validate_lead_decision(RuleLead().decide(state, rng), state)
    s.reply(format_lead_decision(dec))
    _record_session(ctx, s, ep, [])
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


def _episode(ctx: _Ctx, ep: int, attempt: int) -> None:
    """One episode: Lead decision, worker proposal, compile and execute, assessment, critique."""
    run, cfg = ctx.run, ctx.config
    run.append(EpisodeStarted(episode=ep, attempt=attempt, harness_version=ctx.harness.version), cycle=ep)
    recs = load_records(run)
    graph = ResearchGraph.from_records(recs)
    rng = random.Random(f"{cfg.seed}:{ep}")
    state = lead_state(recs, cfg, ctx.harness, ep)
    dec, lead_traj = _decide(ctx, state, rng, ep)
    new, worker = _work(ctx, ep, dec, lead_traj, recs, graph, rng)
    _compile_and_execute(ctx, ep, new)
    recs, prof_of, inputs_of = _assess(ctx, ep, new, graph)
    _critique(ctx, ep, new, recs, graph, prof_of, inputs_of, rng, {worker, lead_traj})
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


def _work(
    ctx: _Ctx,
    ep: int,
    dec: LeadDecision,
    lead_traj: str,
    recs: DiscoveryRecords,
    graph: ResearchGraph,
    rng: random.Random,
) -> tuple[list[HypothesisVersion], str]:
    """The worker (Generation for a restart, Evolution otherwise) publishes drafts; the Lead promotes them."""
    run, cfg = ctx.run, ctx.config
    role = "generation" if dec.operation == "restart" else "evolution"
    worker = f"e{ep:03d}-{role}"
    assignment_id = f"a{ep:03d}"
    run.append(
        LeadAssignment(
            assignment_id=assignment_id,
            lead=lead_traj,
            worker=worker,
            role=role,  # type: ignore[arg-type]
            episode=ep,
            operation=dec.operation,  # type: ignore[arg-type]
            parents=list(dec.parents),
            direction=dec.direction,
        ),
        cycle=ep,
    )
    drafts: dict[str, Draft] = {}
    read_files: list[tuple[str, dict[str, str]]] = []  # (parent publisher, support file)
    ex = _status(recs)

    def inspect_data(direction: str, groups: list[str]) -> dict[str, Any]:
        summary = tabular.data_summary(direction, groups)
        missing = [g for g, v in summary["groups"].items() if not v["available"]]
        if missing:
            raise ToolError(f"not recorded in this cohort: {missing} ({summary['unavailable']})")
        return summary

    def read_hypothesis(hypothesis_id: str) -> dict[str, Any]:
        h = graph.nodes.get(hypothesis_id)
        if h is None:
            raise ToolError(f"no hypothesis {hypothesis_id!r}")
        e = ex.get(hypothesis_id)
        out: dict[str, Any] = {
            "hypothesis_id": hypothesis_id,
            "statement": h.content.claim.statement,
            "spec": h.content.plan.spec,
            "status": e.status if e else None,
            "results": e.results if e else {},
            "defects": tabular.spec_defects(_spec(h), e.status if e else None),
        }
        if e and "metrics.json" in e.outputs:
            sha = e.outputs["metrics.json"]
            f = {"path": f"artifacts/{sha}", "sha256": sha}
            out["metrics_file"] = f
            read_files.append((h.publisher, f))
        return out

    def publish_draft(content: dict[str, Any], note: str) -> dict[str, Any]:
        try:
            validate_hypothesis(content)
            tabular.validate_spec(content["plan"]["spec"])
        except InvalidHypothesis as e:
            raise ToolError(str(e)) from None
        except (ValueError, KeyError) as e:
            raise ToolError(f"invalid plan.spec: {e}") from None
        sha = run.artifacts.put_json(content, name="draft.json")
        draft = Draft(
            draft_id=f"d{ep:03d}-{len(drafts)}",
            author=worker,
            role=role,  # type: ignore[arg-type]
            episode=ep,
            sha256=sha,
            path=f"artifacts/{sha}",
            proposal_text=json.dumps(content, sort_keys=True),
            created_at=time.time(),
        )
        run.append(draft, cycle=ep)
        drafts[draft.draft_id] = draft
        return {"draft_id": draft.draft_id, "sha256": sha, "note": note}

    tools: dict[str, Callable[..., Any]] = {
        "inspect_data": inspect_data,
        "read_hypothesis": read_hypothesis,
        "publish_draft": publish_draft,
    }
    settings = {"n_bootstrap": cfg.n_bootstrap, "outer_folds": cfg.outer_folds, "split_seed": cfg.split_seed}
    sess = Session(worker, role, f"Lead assignment {assignment_id}: {format_lead_decision(dec)}", tools=tools)
    if role == "generation":
        tried = {(_spec(h).baseline, _spec(h).added) for h in recs.hypotheses if h.direction == dec.direction}
        context = {
            "session": sess,
            "direction": dec.direction,
            "tried": tried,
            "unavailable_rate": ctx.harness.roles.unavailable_rate,
            "control": cfg.noise_control and ep == 0,
            "settings": settings,
        }
        cands = ctx.generation.propose(context, 1, rng)
    else:
        lineage = set(dec.parents).union(*(graph.ancestors(p) for p in dec.parents))
        context = {
            "session": sess,
            "operation": dec.operation,
            "parents": list(dec.parents),
            "lineage_keys": {tabular.spec_key(_spec(graph.nodes[x])) for x in lineage},
        }
        cands = ctx.evolution.propose(context, 1, rng)

    # -- the Lead promotes each valid draft to a hypothesis version -----------------------------
    new: list[HypothesisVersion] = []
    for i, cand in enumerate(cands):
        draft_ref = cand.meta.get("draft") or {}
        if "draft_id" not in draft_ref:
            continue  # publishing failed (invalid hypothesis): a recorded failed action, no node
        draft = drafts[draft_ref["draft_id"]]
        content = validate_hypothesis(json.loads(draft.proposal_text))
        hid = f"h{ep:03d}-{i}"
        parents = list(dec.parents)
        family = graph.nodes[parents[0]].family if parents else hid
        version = 1 + max((graph.nodes[p].version for p in parents), default=-1)
        pid = f"p{ep:03d}-{i}"
        run.append(
            DraftPromotion(
                promotion_id=pid,
                draft_id=draft.draft_id,
                draft_sha256=draft.sha256,
                hypothesis_id=hid,
                promoted_by=lead_traj,
                episode=ep,
            ),
            cycle=ep,
        )
        h = HypothesisVersion(
            hypothesis_id=hid,
            family=family,
            version=version,
            parents=parents,
            operation=dec.operation,  # type: ignore[arg-type]
            episode=ep,
            round=cfg.round,
            domain=DOMAIN,
            direction=dec.direction,
            content=content,
            publisher=worker,
            created_at=draft.created_at,
            draft_id=draft.draft_id,
        )
        run.append(h, cycle=ep)
        graph.add(h)
        new.append(h)
        run.append(
            Contribution(
                hypothesis_id=hid,
                trajectory_id=worker,
                role=role,  # type: ignore[arg-type]
                contribution="publish",
                evidence=ContributionEvidence(
                    publisher=worker,
                    episode=ep,
                    created_at=draft.created_at,
                    proposal_text=draft.proposal_text,
                    promotion_ids=[pid],
                ),
            ),
            cycle=ep,
        )
        run.append(
            Contribution(
                hypothesis_id=hid,
                trajectory_id=lead_traj,
                role="lead",
                contribution="coordinate",
                evidence=ContributionEvidence(episode=ep, assignment_id=assignment_id, promotion_ids=[pid]),
            ),
            cycle=ep,
        )
        for publisher, f in read_files:
            run.append(
                Contribution(
                    hypothesis_id=hid,
                    trajectory_id=publisher,
                    role="generation" if "-generation" in publisher else "evolution",
                    contribution="support",
                    evidence=ContributionEvidence(support_files=[f]),
                ),
                cycle=ep,
            )
        _ensure_sources(ctx, recs, _spec(h), hid, ep)
    _record_session(ctx, sess, ep, [h.hypothesis_id for h in new])
    return new, worker


def _compile_and_execute(ctx: _Ctx, ep: int, new: list[HypothesisVersion]) -> None:
    """The Compiler turns each new version into a task; executable tasks really run (blocked ones do not)."""
    run, cfg = ctx.run, ctx.config
    tasks: dict[str, dict[str, Any]] = {}
    comp = Session(
        f"e{ep:03d}-compiler",
        "compiler",
        "compile: " + ", ".join(h.hypothesis_id for h in new),
        tools={"compile_task": lambda hypothesis_id: tasks[hypothesis_id]},
    )
    for h in new:
        task = tabular.compile_task(_spec(h), task_id=f"t-{h.hypothesis_id}")
        c = h.content
        # the compiled task keeps the hypothesis's scientific commitments next to its inputs
        task["inputs"]["commitments"] = {
            "population": c.claim.population,
            "observable": c.claim.observable,
            "comparison": c.plan.comparison,
            "decision_rule": {
                "metric": c.criteria.metric,
                "threshold": c.criteria.threshold,
                "interval": c.criteria.interval,
            },
        }
        tasks[h.hypothesis_id] = task
        t = comp.call("compile_task", hypothesis_id=h.hypothesis_id)
        run.append(
            CompiledTask(
                hypothesis_id=h.hypothesis_id,
                episode=ep,
                **{k: t[k] for k in CompiledTask.model_fields if k in t},
            ),
            cycle=ep,
        )
    comp.reply(
        "; ".join(
            f"{hid}: {'executable' if t['executable'] else 'blocked on ' + str([d['name'] for d in t['dependencies'] if d['required'] and not d['available']])}"
            for hid, t in tasks.items()
        )
        or "nothing to compile"
    )
    _record_session(ctx, comp, ep, list(tasks))
    work = run.path / "work"
    runnable = [(hid, t) for hid, t in tasks.items() if t["executable"]]
    for hid, t in tasks.items():
        if not t["executable"]:
            res = tabular.run_task(t, work / t["task_id"])
            run.append(ExecutionEvent(task_id=t["task_id"], hypothesis_id=hid, episode=ep, **res), cycle=ep)
    with make_executor(cfg.executor, cfg.workers) as pool:
        futures = [(hid, t, pool.submit(_execute, t, str(work / t["task_id"]))) for hid, t in runnable]
        for hid, t, fut in futures:
            res = fut.result()
            outputs = {
                name: run.artifacts.put(Path(p).read_bytes(), name=f"{t['task_id']}-{name}")
                for name, p in res.pop("outputs").items()
            }
            ctx.ledger.spend(budget.EXTERNAL_FEEDBACK, 1, reason=f"execute {t['task_id']}", cycle=ep)
            run.append(
                ExecutionEvent(task_id=t["task_id"], hypothesis_id=hid, episode=ep, outputs=outputs, **res),
                cycle=ep,
            )


def _assess(
    ctx: _Ctx, ep: int, new: list[HypothesisVersion], graph: ResearchGraph
) -> tuple[DiscoveryRecords, dict[str, ProfileAssessment], dict[str, Any]]:
    """Rubric profile of each new version from its executed evidence; Progress against its true parents."""
    run = ctx.run
    recs = load_records_partial(run, ep)
    ex = _status(recs)
    prof_of = {p.hypothesis_id: p for p in recs.profiles}
    task_of = {t.hypothesis_id: t for t in recs.tasks}
    inputs_of: dict[str, Any] = {}
    # decision criteria count as fixed before results if the version's event precedes its execution's
    seq_h, seq_x = {}, {}
    for e_ in run.events():
        if e_.cycle == ep and e_.kind == HypothesisVersion.kind:
            seq_h[e_.payload["hypothesis_id"]] = e_.seq
        elif e_.cycle == ep and e_.kind == ExecutionEvent.kind:
            seq_x[e_.payload["hypothesis_id"]] = e_.seq
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
            preregistered=h.hypothesis_id in seq_h
            and (h.hypothesis_id not in seq_x or seq_h[h.hypothesis_id] < seq_x[h.hypothesis_id]),
            overlap=plan_overlap(h, earlier),
            controls_offered=len(tabular.CONTROLS),
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
        run.append(p, cycle=ep)
        prof_of[h.hypothesis_id] = p

    for h in new:
        if not h.parents:
            continue
        fps = {t.fingerprint for t in recs.tasks if t.hypothesis_id != h.hypothesis_id and t.episode <= ep}
        e = ex.get(h.hypothesis_id)
        label, reasons = judge_progress(
            operation=h.operation,
            executed=bool(e and e.status == "ok"),
            weighted_child=prof_of[h.hypothesis_id].weighted,
            weighted_predecessors=[prof_of[p].weighted for p in h.parents if p in prof_of],
            fingerprint=task_of[h.hypothesis_id].fingerprint,
            earlier_fingerprints=fps,
            defects_child=tabular.spec_defects(_spec(h), e.status if e else None),
            defects_predecessors=sorted(
                {
                    d
                    for p in h.parents
                    for d in tabular.spec_defects(_spec(graph.nodes[p]), ex[p].status if p in ex else None)
                }
            ),
            margin=ctx.harness.progress_margin,
        )
        s = Session(
            f"e{ep:03d}-progress",
            "progress",
            json.dumps(
                {
                    "revision": {
                        "statement": h.content.claim.statement,
                        "profile": prof_of[h.hypothesis_id].axes,
                    },
                    "predecessors": [
                        {"statement": graph.nodes[p].content.claim.statement, "profile": prof_of[p].axes}
                        for p in h.parents
                        if p in prof_of
                    ],
                    "operation": h.operation,
                },
                sort_keys=True,
            ),
        )
        s.reply(f"label: {label}\nreasons: {'; '.join(reasons)}")
        run.append(
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
        _record_session(ctx, s, ep, [h.hypothesis_id])
    return recs, prof_of, inputs_of


def _critique(
    ctx: _Ctx,
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
    all_ids = {x.hypothesis_id for x in recs.hypotheses} | {t.trajectory_id for t in recs.turns}
    k = ctx.harness.critique.comparisons_per_version
    j = 0
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
            da = blinded_dossier(graph.nodes[a], _inputs(inputs_of, prof_of, a))
            db = blinded_dossier(graph.nodes[b], _inputs(inputs_of, prof_of, b))
            check_blinded({"a": da, "b": db}, all_ids | hidden)
            crit.messages.append(Message("user", json.dumps({"a": da, "b": db}, sort_keys=True)))
            outcome = ctx.critique.compare(da, db, None)
            crit.reply(f"preference: {outcome}")
            rubric: dict[str, Any] = {"tie_margin": ctx.harness.critique.tie_margin}
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
                    domain=DOMAIN,
                    critic=crit.trajectory_id,
                    rubric=rubric,
                ),
                cycle=ep,
            )
            j += 1
    _record_session(ctx, crit, ep, [h.hypothesis_id for h in new])


def _inputs(inputs_of: dict[str, Any], prof_of: dict[str, ProfileAssessment], hid: str) -> RubricInputs:
    """Rubric inputs of a version: computed this episode, or rebuilt from its recorded profile."""
    if hid in inputs_of:
        return inputs_of[hid]
    raw = {k: v for k, v in prof_of[hid].inputs.items() if k in RubricInputs.__dataclass_fields__}
    return RubricInputs(**raw)


def load_records_partial(run: Run, episode: int) -> DiscoveryRecords:
    """Completed episodes plus the records the running ``episode`` has appended so far."""
    evs = run.events()
    recs = DiscoveryRecords()
    started = max(
        (e.seq for e in evs if e.kind == EpisodeStarted.kind and e.payload["episode"] == episode), default=-1
    )
    keep = {e.seq for e in completed_events(evs)}
    for e in evs:
        t = EVENT_KINDS.get(e.kind)
        if t is not None and (e.seq in keep or (e.cycle == episode and e.seq > started)):
            recs.add(t.from_event(e))
    return recs


# -- campaign -----------------------------------------------------------------------------------
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
    """Run (or resume) a campaign of ``config.episodes`` episodes; returns the run directory."""
    from tqdm.auto import tqdm

    out = Path(out)
    harness = harness or config.harness
    lead = lead or RuleLead()
    run = Run.create(out, config, kind="discovery", exist_ok=resume, exclusive=True)
    with run:
        ledger = budget.BudgetLedger.open(
            run,
            {
                budget.AGENT_CALLS: config.budgets.agent_calls,
                budget.EXTERNAL_FEEDBACK: config.budgets.external_feedback,
            },
        )
        ctx = _Ctx(
            run=run,
            config=config,
            harness=harness,
            lead=lead,
            generation=generation or TabularGeneration(),
            evolution=evolution or TabularEvolution(),
            critique=critique or BlindedCritique(tie_margin=harness.critique.tie_margin),
            ledger=ledger,
        )
        run.append(
            "campaign_started",
            {
                "lead": getattr(lead, "name", "lead"),
                "harness": harness.version,
                "harness_digest": harness.digest(),
                "harness_config": harness.model_dump(mode="json"),
            },
        )
        run.commit()
        events = run.events()
        done = {int(e.payload["episode"]) for e in events if e.kind == EpisodeFinished.kind}
        attempts = Counter(int(e.payload["episode"]) for e in events if e.kind == EpisodeStarted.kind)
        need_calls = 14 + 2 * harness.critique.comparisons_per_version
        stopped = ""
        for ep in tqdm(range(config.episodes), desc="episodes", unit="ep", disable=not progress):
            if ep in done:
                continue
            if (
                ledger.remaining(budget.AGENT_CALLS) < need_calls
                or ledger.remaining(budget.EXTERNAL_FEEDBACK) < 2
            ):
                stopped = f"budget exhausted before episode {ep}: {ledger.report()}"
                break
            _episode(ctx, ep, attempts[ep])
        if not any(e.kind == "campaign_finished" for e in events):
            run.append("campaign_finished", {"stopped": stopped, "budgets": ledger.report()})
        run.commit()
    return out


def run_experiment(config: Config, out: Path, *, resume: bool = False) -> Path:
    """CLI entry point (``rsi-workbench run configs/discovery/<name>.yaml``)."""
    return run_campaign(config, out, resume=resume)


def _controls(recs: DiscoveryRecords) -> list[str]:
    return [
        h.hypothesis_id
        for h in recs.hypotheses
        if tabular.NOISE_GROUP in h.content.plan.spec.get("added", [])
    ]


def report(path: str | Path) -> str:
    """The campaign's tables: graph size and depth, operation shares, profiles first vs last episode."""
    import pandas as pd

    run = Run.open(path)
    recs = load_records(run)
    budgets = budget.BudgetLedger.open(None, {}).report()
    opened = run.events("budget_opened")
    if opened:
        led = budget.BudgetLedger({k: float(v) for k, v in opened[0].payload["budgets"].items()})
        for e in run.events("budget_spent"):
            led.spent[e.payload["budget"]] += float(e.payload["amount"])
        budgets = led.report()
    alloc = campaign_allocation(recs, budgets)
    prof = profile_table(recs)
    ops = operation_shares(recs)
    lines = [f"DiscoveryRSI campaign — {path}", ""]
    lines.append(
        f"research graph: {alloc['hypotheses']} hypothesis versions, {alloc['lineage_edges']} lineage edges, "
        f"{alloc['families']} families, max depth {alloc['max_depth']}, {alloc['directions']} directions, "
        f"{alloc['episodes']} episodes"
    )
    lines.append(
        "operation shares: " + ", ".join(f"{k} {v:.0%}" for k, v in alloc.get("operation_shares", {}).items())
    )
    if len(ops):
        half = max(1, len(ops) // 2)
        for name, part in (("first half", ops.iloc[:half]), ("second half", ops.iloc[half:])):
            if len(part):
                lines.append(
                    f"  {name} (episodes {int(part.episode.min()) + 1}-{int(part.episode.max()) + 1}): "
                    + ", ".join(
                        f"{op} {part[op].mean():.0%}" for op in ("evolve", "repair", "crossover", "restart")
                    )
                )
    if len(ops):
        letter = {"evolve": "E", "repair": "R", "crossover": "X", "restart": "S"}
        seq = "".join(letter[op] for _, r in ops.iterrows() for op in letter if r[op])
        lines.append(f"operation per episode (E evolve, R repair, X crossover, S restart): {seq}")
    lines.append(f"progress labels: {alloc['progress_labels']}")
    lines.append(f"executions: {alloc['executions']}; duplicate analyses: {alloc['duplicate_analyses']}")
    lines.append(f"critiques: {alloc['critiques']}; branch synthesis: {alloc['branch_synthesis']}")
    if "budget_use" in alloc:
        lines.append("budget use: " + ", ".join(f"{k} {v:.0%}" for k, v in alloc["budget_use"].items()))
    if len(prof):
        first, last = prof.episode.min(), prof.episode.max()
        f_mean = prof[prof.episode == first].weighted.mean()
        l_mean = prof[prof.episode == last].weighted.mean()
        lines += [
            "",
            f"mean weighted profile: first episode {f_mean:.2f} (n={int((prof.episode == first).sum())}), "
            f"last episode {l_mean:.2f} (n={int((prof.episode == last).sum())}), all {prof.weighted.mean():.2f}",
        ]
        n_ep = int(prof.episode.max()) + 1
        if n_ep >= 6:
            thirds = [(a * n_ep // 3, (a + 1) * n_ep // 3) for a in range(3)]
            lines.append(
                "mean weighted profile by episode third: "
                + ", ".join(
                    f"episodes {lo + 1}-{hi}: {prof[(prof.episode >= lo) & (prof.episode < hi)].weighted.mean():.2f}"
                    for lo, hi in thirds
                )
            )
        control = prof[prof.hypothesis_id.isin(_controls(recs))]
        if len(control):
            lines.append(
                f"noise control: weighted {control.weighted.mean():.2f} "
                f"(rank {int((prof.weighted < control.weighted.min()).sum()) + 1} of {len(prof)} from the bottom)"
            )
        lines.append("")
        cols = [
            "hypothesis_id",
            "operation",
            "direction",
            "verdict",
            "importance",
            "novelty",
            "evidence",
            "falsifiability",
            "data_solvability",
            "feasibility",
            "alternatives",
            "actionability",
            "weighted",
            "execution_ready",
        ]
        with pd.option_context("display.width", 250, "display.max_columns", 30, "display.max_rows", 500):
            lines.append("level 1 — hypothesis profiles (1–10; weights 20/20/15/10/10/10/10/5):")
            lines.append(prof[cols].round(2).to_string(index=False))
            lines += ["", "axis means by episode window (weights in brackets):"]
            lines.append(axis_means(recs).round(2).to_string())
            ps = path_scores(recs)
            if len(ps):
                lines += ["", "level 3 — development paths (weights 5/30/20/20/10/10/5):"]
                lines.append(ps.round(2).to_string(index=False))
    text = "\n".join(lines)
    Path(path, "report.txt").write_text(text + "\n")
    return text
