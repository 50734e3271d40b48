"""The worker stage: Generation (restart) or Evolution (evolve / repair / crossover) publishes drafts.

The Lead assigns the work (a recorded :class:`LeadAssignment`); the worker acts through three tools —
inspect a direction's data, read a hypothesis version with its results, publish a draft — each a
recorded turn of its session; the Lead then promotes each valid draft to a hypothesis version and
the contributions behind it (publication, coordination, support files read) are recorded with
their evidence, which is all hypothesis credit may later rest on.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rsi_workbench.agents import Candidate
from rsi_workbench.discovery.episode.context import EpisodeContext, executions_by_hypothesis, record_session
from rsi_workbench.discovery.graph import ResearchGraph
from rsi_workbench.discovery.lead import LeadDecision, format_lead_decision
from rsi_workbench.discovery.records import (
    Contribution,
    ContributionEvidence,
    DiscoveryRecords,
    Draft,
    DraftPromotion,
    ExecutionEvent,
    HypothesisVersion,
    InvalidHypothesis,
    LeadAssignment,
    validate_hypothesis,
)
from rsi_workbench.discovery.roles import Session, ToolError


@dataclass
class WorkerTools:
    """The worker's tools; keeps the drafts it published and the metrics files it read (evidence)."""

    ctx: EpisodeContext
    ep: int
    worker: str
    role: str
    recs: DiscoveryRecords
    graph: ResearchGraph
    drafts: dict[str, Draft] = field(default_factory=dict)
    read_files: list[tuple[str, dict[str, str]]] = field(default_factory=list)  # (parent publisher, file)
    executions: dict[str, ExecutionEvent] = field(init=False)

    def __post_init__(self) -> None:
        self.executions = executions_by_hypothesis(self.recs)

    def as_dict(self) -> dict[str, Callable[..., Any]]:
        return {
            "inspect_data": self.inspect_data,
            "read_hypothesis": self.read_hypothesis,
            "publish_draft": self.publish_draft,
        }

    def inspect_data(self, direction: str, groups: list[str]) -> dict[str, Any]:
        return self.ctx.domain.inspect_data(direction, groups)

    def read_hypothesis(self, hypothesis_id: str) -> dict[str, Any]:
        h = self.graph.nodes.get(hypothesis_id)
        if h is None:
            raise ToolError(f"no hypothesis {hypothesis_id!r}")
        e = self.executions.get(hypothesis_id)
        out: dict[str, Any] = {
            "hypothesis_id": hypothesis_id,
            "statement": h.content.claim.statement,
            "spec": h.content.plan.spec,
            "status": e.status if e else None,
            "results": e.results if e else {},
            "defects": self.ctx.domain.defects(h, e.status if e else None),
        }
        if e and "metrics.json" in e.outputs:
            sha = e.outputs["metrics.json"]
            f = {"path": f"artifacts/{sha}", "sha256": sha}
            out["metrics_file"] = f
            self.read_files.append((h.publisher, f))
        return out

    def publish_draft(self, content: dict[str, Any], note: str) -> dict[str, Any]:
        try:
            validate_hypothesis(content)
            self.ctx.domain.validate_plan(content["plan"]["spec"])
        except InvalidHypothesis as e:
            raise ToolError(str(e)) from None
        except (ValueError, KeyError) as e:
            raise ToolError(f"invalid plan.spec: {e}") from None
        run = self.ctx.run
        sha = run.artifacts.put_json(content, name="draft.json")
        draft = Draft(
            draft_id=f"d{self.ep:03d}-{len(self.drafts)}",
            author=self.worker,
            role=self.role,  # type: ignore[arg-type]
            episode=self.ep,
            sha256=sha,
            path=f"artifacts/{sha}",
            proposal_text=json.dumps(content, sort_keys=True),
            created_at=time.time(),
        )
        run.append(draft, cycle=self.ep)
        self.drafts[draft.draft_id] = draft
        return {"draft_id": draft.draft_id, "sha256": sha, "note": note}


def work(
    ctx: EpisodeContext,
    ep: int,
    dec: LeadDecision,
    lead_traj: str,
    recs: DiscoveryRecords,
    graph: ResearchGraph,
    rng: random.Random,
) -> tuple[list[HypothesisVersion], str]:
    """The worker (Generation for a restart, Evolution otherwise) publishes drafts; the Lead promotes them."""
    role = "generation" if dec.operation == "restart" else "evolution"
    worker = f"e{ep:03d}-{role}"
    assignment_id = f"a{ep:03d}"
    ctx.run.append(
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
    tools = WorkerTools(ctx, ep, worker, role, recs, graph)
    prompt = f"Lead assignment {assignment_id}: {format_lead_decision(dec)}"
    sess = Session(worker, role, prompt, tools=tools.as_dict())
    cands = _propose(ctx, sess, dec, recs, graph, ep, rng)
    new = promote(ctx, ep, dec, lead_traj, assignment_id, tools, cands)
    record_session(ctx, sess, ep, [h.hypothesis_id for h in new])
    return new, worker


def _propose(
    ctx: EpisodeContext,
    sess: Session,
    dec: LeadDecision,
    recs: DiscoveryRecords,
    graph: ResearchGraph,
    ep: int,
    rng: random.Random,
) -> list[Candidate]:
    """Hand the worker its context (the engine's keys plus the domain's) and let it propose."""
    domain_context = ctx.domain.worker_context(sess.role, dec, recs, graph, ep)
    if sess.role == "generation":
        context = {
            "session": sess,
            "direction": dec.direction,
            "unavailable_rate": ctx.harness.roles.unavailable_rate,
            **domain_context,
        }
        return ctx.generation.propose(context, 1, rng)
    context = {"session": sess, "operation": dec.operation, "parents": list(dec.parents), **domain_context}
    return ctx.evolution.propose(context, 1, rng)


def promote(
    ctx: EpisodeContext,
    ep: int,
    dec: LeadDecision,
    lead_traj: str,
    assignment_id: str,
    tools: WorkerTools,
    cands: list[Candidate],
) -> list[HypothesisVersion]:
    """The Lead promotes each valid draft to a hypothesis version, with its contributions and sources."""
    run, graph = ctx.run, tools.graph
    new: list[HypothesisVersion] = []
    for i, cand in enumerate(cands):
        draft_ref = cand.meta.get("draft") or {}
        if "draft_id" not in draft_ref:
            continue  # publishing failed (invalid hypothesis): a recorded failed action, no node
        draft = tools.drafts[draft_ref["draft_id"]]
        content = validate_hypothesis(json.loads(draft.proposal_text))
        hid = f"h{ep:03d}-{i}"
        parents = list(dec.parents)
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
            family=graph.nodes[parents[0]].family if parents else hid,
            version=1 + max((graph.nodes[p].version for p in parents), default=-1),
            parents=parents,
            operation=dec.operation,  # type: ignore[arg-type]
            episode=ep,
            round=ctx.config.round,
            domain=ctx.domain.name,
            direction=dec.direction,
            content=content,
            publisher=tools.worker,
            created_at=draft.created_at,
            draft_id=draft.draft_id,
        )
        run.append(h, cycle=ep)
        graph.add(h)
        new.append(h)
        _record_contributions(ctx, h, draft, pid, lead_traj, assignment_id, tools)
        ctx.domain.link_sources(run, tools.recs, h, ep)
    return new


def _record_contributions(
    ctx: EpisodeContext,
    h: HypothesisVersion,
    draft: Draft,
    pid: str,
    lead_traj: str,
    assignment_id: str,
    tools: WorkerTools,
) -> None:
    """Publication by the worker, coordination by the Lead, support by the publishers of files read."""
    ep, hid, worker = h.episode, h.hypothesis_id, tools.worker
    ctx.run.append(
        Contribution(
            hypothesis_id=hid,
            trajectory_id=worker,
            role=tools.role,  # type: ignore[arg-type]
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
    ctx.run.append(
        Contribution(
            hypothesis_id=hid,
            trajectory_id=lead_traj,
            role="lead",
            contribution="coordinate",
            evidence=ContributionEvidence(episode=ep, assignment_id=assignment_id, promotion_ids=[pid]),
        ),
        cycle=ep,
    )
    for publisher, f in tools.read_files:
        ctx.run.append(
            Contribution(
                hypothesis_id=hid,
                trajectory_id=publisher,
                role="generation" if "-generation" in publisher else "evolution",
                contribution="support",
                evidence=ContributionEvidence(support_files=[f]),
            ),
            cycle=ep,
        )
