"""Adapter: a research graph's typed records (``discovery.records``) -> the credit pipeline's inputs."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping

from rsi_workbench.discovery.credit.inputs import (
    Assessment,
    Assignment,
    Comparison,
    ContributionClaim,
    HypothesisNode,
    Promotion,
    TrajectoryNode,
)
from rsi_workbench.discovery.credit.pipeline import CreditRecords
from rsi_workbench.discovery.records import DiscoveryRecords, HypothesisVersion, RoleTurn


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


def credit_records_from(
    recs: DiscoveryRecords,
    *,
    group: str = "campaign",
    global_family: Callable[[HypothesisVersion], str] | None = None,
) -> CreditRecords:
    """Map a run's typed records onto the credit pipeline's inputs.

    Hypothesis versions become nodes (local family = lineage family; global family = the research
    direction unless given; duplicate key = the compiled task's fingerprint, so a re-registered
    identical analysis is suppressed); role turns become trajectories (all in one shared-memory
    ``group``); critiques become comparisons in record order; profiles and Progress labels become
    assessments; contribution records become claims, one per piece of evidence they carry.
    """
    hyps = hypothesis_nodes(recs, global_family)
    trajs = trajectory_nodes(recs, group)
    promotions = promotion_records(recs)
    assignments = assignment_records(recs, promotions)
    claims = contribution_claims(recs, hyps)
    comparisons = [Comparison(c.a, c.b, c.outcome) for c in recs.critiques]
    return CreditRecords(hyps, trajs, comparisons, assessments_from(recs), claims, promotions, assignments)


def hypothesis_nodes(
    recs: DiscoveryRecords, global_family: Callable[[HypothesisVersion], str] | None = None
) -> dict[str, HypothesisNode]:
    """Hypothesis versions as credit nodes, with the support files their publisher wrote or read."""
    gfam = global_family or (lambda h: f"{h.domain}/{h.direction}")
    drafts = {d.draft_id: d for d in recs.drafts}
    fingerprint: dict[str, str] = {}
    for task in recs.tasks:
        fingerprint.setdefault(task.hypothesis_id, task.fingerprint)
    sources = {s.source_id: s for s in recs.sources}
    support: dict[str, dict[str, str]] = defaultdict(dict)
    for link in recs.support_links:
        src = sources.get(link.source_id)
        if link.relation == "supporting_file" and src is not None and src.path and src.sha256:
            support[link.hypothesis_id][src.path] = src.sha256
    read: dict[str, dict[str, str]] = defaultdict(dict)  # trajectory -> files it read (tool observations)
    for t in recs.turns:
        for m in t.messages_in:
            if m.get("role") == "tool":
                for f in _files_in(m.get("content", "")):
                    read[t.trajectory_id][f["path"]] = f["sha256"]
    hyps: dict[str, HypothesisNode] = {}
    for h in recs.hypotheses:
        draft = drafts.get(h.draft_id)
        if draft is not None:
            support[h.hypothesis_id].setdefault(draft.path, draft.sha256)
        support[h.hypothesis_id].update(read.get(h.publisher, {}))
        hyps[h.hypothesis_id] = HypothesisNode(
            h.hypothesis_id,
            domain=h.domain,
            round=h.round,
            episode=str(h.episode),
            publisher=h.publisher,
            created_at=h.created_at,
            proposal_sha256=_sha(draft.proposal_text) if draft is not None else None,
            support_files=dict(support[h.hypothesis_id]),
            local_family=h.family,
            global_family=gfam(h),
            duplicate_key=fingerprint.get(h.hypothesis_id),
        )
    return hyps


def trajectory_nodes(recs: DiscoveryRecords, group: str = "campaign") -> dict[str, TrajectoryNode]:
    """Role trajectories as credit nodes, with the proposal texts and files each one wrote."""
    episode_domain: dict[int, str] = {}
    for h in recs.hypotheses:
        episode_domain.setdefault(h.episode, h.domain)
    texts: dict[str, set[str]] = defaultdict(set)
    files: dict[str, dict[str, str]] = defaultdict(dict)
    for d in recs.drafts:
        texts[d.author].add(_sha(d.proposal_text))
        files[d.author][d.path] = d.sha256
    publisher_of = {h.hypothesis_id: h.publisher for h in recs.hypotheses}
    for e in recs.executions:  # outputs of an executed hypothesis are files its publisher's work produced
        if e.hypothesis_id in publisher_of:
            for sha in e.outputs.values():
                files[publisher_of[e.hypothesis_id]][f"artifacts/{sha}"] = sha
    first_turn: dict[str, RoleTurn] = {}
    for t in recs.turns:
        first_turn.setdefault(t.trajectory_id, t)
    return {
        tid: TrajectoryNode(
            tid,
            t.role,
            agent=tid,
            episode=str(t.episode),
            domain=episode_domain.get(t.episode, "default"),
            group=group,
            started_at=float("-inf"),  # turns carry no clock; a trajectory exists before what it publishes
            text_sha256s=frozenset(texts.get(tid, ())),
            files=dict(files.get(tid, {})),
        )
        for tid, t in first_turn.items()
    }


def promotion_records(recs: DiscoveryRecords) -> dict[str, Promotion]:
    """Draft promotions whose draft hash matches the recorded draft (the others prove nothing)."""
    drafts = {d.draft_id: d for d in recs.drafts}
    return {
        p.promotion_id: Promotion(p.promotion_id, p.hypothesis_id, drafts[p.draft_id].author, p.promoted_by)
        for p in recs.promotions
        if p.draft_id in drafts and drafts[p.draft_id].sha256 == p.draft_sha256
    }


def assignment_records(recs: DiscoveryRecords, promotions: Mapping[str, Promotion]) -> dict[str, Assignment]:
    """Lead assignments with the hypotheses the assigned worker published or had promoted."""
    produced: dict[str, set[str]] = defaultdict(set)  # worker trajectory -> hypotheses it produced
    for h in recs.hypotheses:
        produced[h.publisher].add(h.hypothesis_id)
    for p in promotions.values():
        produced[p.draft_author].add(p.hypothesis)
    return {
        a.assignment_id: Assignment(a.assignment_id, frozenset(produced.get(a.worker, ())), a.lead)
        for a in recs.assignments
    }


def contribution_claims(
    recs: DiscoveryRecords, hyps: Mapping[str, HypothesisNode]
) -> list[ContributionClaim]:
    """One claim per piece of evidence a contribution record carries (admission is decided later)."""
    claims: list[ContributionClaim] = []
    for c in recs.contributions:
        ev = c.evidence
        tid, hid = c.trajectory_id, c.hypothesis_id
        if c.contribution == "publish":
            claims.append(ContributionClaim(tid, hid, "direct_publication"))
        if ev.proposal_text is not None:
            claims.append(ContributionClaim(tid, hid, "proposal_text", _sha(ev.proposal_text)))
        for pid in ev.promotion_ids:
            claims.append(
                ContributionClaim(tid, hid, "promotion" if c.role == "lead" else "draft_promotion", pid)
            )
        for f in ev.support_files:
            node = hyps.get(hid)
            ok = node is not None and node.support_files.get(f.get("path", "")) == f.get("sha256")
            claims.append(ContributionClaim(tid, hid, "support_file", f.get("path") if ok else None))
        if ev.assignment_id is not None:
            claims.append(ContributionClaim(tid, hid, "assignment", ev.assignment_id))
        if c.contribution == "coordinate" and ev.assignment_id is None and not ev.promotion_ids:
            claims.append(ContributionClaim(tid, hid, "shared_episode"))
    return claims


def assessments_from(recs: DiscoveryRecords) -> list[Assessment]:
    """A valid assessment per profiled version, then one per Progress label (duplicate marks it marginal)."""
    assessed: dict[str, Assessment] = {}
    for prof in recs.profiles:
        assessed[prof.hypothesis_id] = Assessment(prof.hypothesis_id, valid=True)
    out = list(assessed.values())
    for pl in recs.progress:
        out.append(
            Assessment(
                pl.hypothesis_id, valid=True, marginal_duplicate=pl.label == "duplicate", progress=pl.label
            )
        )
    return out


def _files_in(content: str) -> list[dict[str, str]]:
    """``{"path", "sha256"}`` file references inside a JSON tool observation (any depth)."""
    import json

    try:
        obj = json.loads(content)
    except (ValueError, TypeError):
        return []
    out: list[dict[str, str]] = []
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            if isinstance(x.get("path"), str) and isinstance(x.get("sha256"), str):
                out.append({"path": x["path"], "sha256": x["sha256"]})
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return out
