"""Typed DiscoveryRSI records: hypotheses (c, π, d, a), linked records, role-tagged transcripts.

Definition 1 of the paper: a hypothesis is H = (c, π, d, a) — claim, investigation plan, decision
criteria fixed before results, alternatives. Each *version* is one node of the research graph;
parent links carry lineage (revision: one parent, crossover: several, scientific restart: none).
Sources, drafts, promotions, assessments, contributions and execution events are *linked records*:
they point at hypotheses but never create lineage. Every record is one append-only event in the
run; :func:`load_records` rebuilds them (only from completed episode attempts, so a crash
mid-episode leaves no half-written state behind).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from rsi_workbench.records import Event, EventPayload, Run

if TYPE_CHECKING:
    import pandas as pd

Operation = Literal["evolve", "repair", "crossover", "restart"]
OPERATIONS: tuple[str, ...] = ("evolve", "repair", "crossover", "restart")
Role = Literal["lead", "generation", "evolution", "critique", "progress", "compiler"]
ROLES: tuple[str, ...] = ("lead", "generation", "evolution", "critique", "progress", "compiler")
ProgressLabelName = Literal["substantive_progress", "necessary_repair", "duplicate", "insufficient_evidence"]
PROGRESS_LABELS: tuple[str, ...] = (
    "substantive_progress",
    "necessary_repair",
    "duplicate",
    "insufficient_evidence",
)
CritiqueOutcome = Literal["a", "b", "tie", "abstain"]


class InvalidHypothesis(ValueError):
    """A hypothesis lacks a component of (c, π, d, a) or a required field; the message names it."""


# -- Definition 1: H = (c, π, d, a) -------------------------------------------------------------
class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @field_validator("*", mode="after")
    @classmethod
    def _non_empty(cls, v: Any, info: Any) -> Any:
        if isinstance(v, str) and not v.strip():
            raise ValueError(f"{info.field_name} must not be empty")
        return v


class Claim(_Part):
    """c: the claim — system or population, scope, observable, and the scientific uncertainty."""

    population: str
    scope: str
    observable: str
    uncertainty: str
    statement: str


class Plan(_Part):
    """π: investigation plan — data or measurements, comparison, controls, analysis, dependencies.

    ``spec`` is the machine-readable plan a domain compiles (for tabular: dataset, outcome,
    baseline and added feature groups); ``dependencies`` names data the plan needs, available or not.
    """

    data: list[str] = Field(min_length=1)
    comparison: str
    controls: list[str] = Field(min_length=1)
    analysis: str
    dependencies: list[str] = Field(default_factory=list)
    spec: dict[str, Any] = Field(default_factory=dict)


class DecisionCriteria(_Part):
    """d: fixed before results — which outcomes support, weaken, or leave the claim inconclusive.

    ``metric`` and ``threshold`` make the criteria decidable by a machine: supports if the
    interval's lower bound exceeds the threshold, weakens if its upper bound falls below it.
    """

    supports: str
    weakens: str
    inconclusive: str
    metric: str
    threshold: float
    interval: float = Field(default=0.95, gt=0.5, lt=1.0)


class Alternatives(_Part):
    """a: competing explanations, confounders, measurement limits, and discriminating comparisons."""

    competing: list[str] = Field(min_length=1)
    confounders: list[str] = Field(min_length=1)
    measurement_limits: list[str] = Field(min_length=1)
    discriminating: list[str] = Field(min_length=1)


class HypothesisContent(BaseModel):
    """(c, π, d, a); every component is required — a missing one raises :class:`InvalidHypothesis`."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    claim: Claim
    plan: Plan
    criteria: DecisionCriteria
    alternatives: Alternatives


def validate_hypothesis(data: dict[str, Any] | HypothesisContent) -> HypothesisContent:
    """Validate (c, π, d, a); the error names every missing or empty component and field."""
    if isinstance(data, HypothesisContent):
        return data
    try:
        return HypothesisContent.model_validate(data)
    except ValidationError as e:
        names = {"claim": "claim (c)", "plan": "plan (π)", "criteria": "decision criteria (d)"}
        names["alternatives"] = "alternatives (a)"
        parts = []
        for err in e.errors(include_url=False):
            loc = [str(x) for x in err["loc"]]
            head = names.get(loc[0], loc[0]) if loc else "<root>"
            rest = ".".join(loc[1:])
            what = "missing" if err["type"] == "missing" else err["msg"]
            parts.append(f"{head}{'.' + rest if rest else ''}: {what}")
        raise InvalidHypothesis("invalid hypothesis: " + "; ".join(parts)) from None


# -- research-graph nodes -----------------------------------------------------------------------
class HypothesisVersion(EventPayload):
    """One versioned node of the research graph (evaluation unit), distinct from the actions behind it."""

    kind: ClassVar[str] = "hypothesis_version"
    hypothesis_id: str
    family: str  # local lineage family: the restart root this version descends from (first parent)
    version: int  # depth below the family root (0 for a restart)
    parents: list[str]
    operation: Operation
    episode: int
    round: int
    domain: str
    direction: str
    content: HypothesisContent
    publisher: str  # trajectory id of the role turn that published it
    created_at: float
    draft_id: str

    @model_validator(mode="after")
    def _parents_match_operation(self) -> HypothesisVersion:
        check_parents(self.operation, self.parents)
        return self


def check_parents(operation: str, parents: list[str]) -> None:
    """Lineage rule: restart has no parent, evolve/repair one, crossover at least two (distinct)."""
    if operation == "restart" and parents:
        raise ValueError("a scientific restart has no parents")
    if operation in ("evolve", "repair") and len(parents) != 1:
        raise ValueError(f"{operation} revises exactly one parent, got {len(parents)}")
    if operation == "crossover" and len(parents) < 2:
        raise ValueError(f"crossover merges at least two parents, got {len(parents)}")
    if len(set(parents)) != len(parents):
        raise ValueError("parents must be distinct")


# -- linked records -----------------------------------------------------------------------------
class SourceRecord(EventPayload):
    """A source or data item (dataset, split file, documentation) — content hash and path."""

    kind: ClassVar[str] = "source"
    source_id: str
    source_kind: Literal["dataset", "artifact", "documentation", "dependency"]
    name: str
    sha256: str | None = None
    path: str | None = None
    available: bool = True
    detail: str = ""


class SupportLink(EventPayload):
    """A source supports a hypothesis. Many hypotheses may share one source; this is *not* lineage."""

    kind: ClassVar[str] = "support_link"
    hypothesis_id: str
    source_id: str
    relation: Literal["uses_data", "uses_split", "cites", "supporting_file"] = "uses_data"


class Draft(EventPayload):
    """A proposal or revision draft written by a role, stored as an artifact (hash + path)."""

    kind: ClassVar[str] = "draft"
    draft_id: str
    author: str  # trajectory id
    role: Role
    episode: int
    sha256: str
    path: str
    proposal_text: str
    created_at: float


class DraftPromotion(EventPayload):
    """An exact draft revision promoted to a hypothesis version (evidence for contribution edges)."""

    kind: ClassVar[str] = "draft_promotion"
    promotion_id: str
    draft_id: str
    draft_sha256: str
    hypothesis_id: str
    promoted_by: str  # trajectory id (the Lead's)
    episode: int


class CritiquePreference(EventPayload):
    """A blinded pairwise critique: preference for a or b, a tie, or an abstention (no update)."""

    kind: ClassVar[str] = "critique"
    comparison_id: str
    a: str
    b: str
    outcome: CritiqueOutcome
    episode: int
    round: int
    domain: str
    critic: str  # trajectory id
    rubric: dict[str, Any] = Field(default_factory=dict)
    reason: str = ""


class ProgressLabel(EventPayload):
    """Ancestor-aware Progress: what a revision contributed relative to its true predecessor(s)."""

    kind: ClassVar[str] = "progress"
    hypothesis_id: str
    predecessors: list[str]
    label: ProgressLabelName
    episode: int
    judge: str  # trajectory id
    reasons: list[str] = Field(default_factory=list)
    delta_profile: float | None = None


class ProfileAssessment(EventPayload):
    """DFM-Bench level 1: eight-axis profile (1–10) and weighted score, from recorded evidence only."""

    kind: ClassVar[str] = "profile"
    hypothesis_id: str
    episode: int
    axes: dict[str, float]
    weighted: float
    execution_ready: bool  # passed every execution check — kept separate from scientific value
    inputs: dict[str, Any] = Field(default_factory=dict)  # the rubric inputs the axes were computed from


class ContributionEvidence(BaseModel):
    """What evidences a contribution edge (the credit issue decides which edges it admits)."""

    model_config = ConfigDict(extra="forbid")
    publisher: str | None = None
    episode: int | None = None
    created_at: float | None = None
    proposal_text: str | None = None
    promotion_ids: list[str] = Field(default_factory=list)
    support_files: list[dict[str, str]] = Field(default_factory=list)  # {"path", "sha256"}
    assignment_id: str | None = None


class Contribution(EventPayload):
    """A trajectory's claimed contribution to a hypothesis version, with its evidence."""

    kind: ClassVar[str] = "contribution"
    hypothesis_id: str
    trajectory_id: str
    role: Role
    contribution: Literal["publish", "support", "coordinate"]
    evidence: ContributionEvidence


class LeadAssignment(EventPayload):
    """The Lead assigns work (direction, parents, operation) to a worker trajectory."""

    kind: ClassVar[str] = "lead_assignment"
    assignment_id: str
    lead: str  # trajectory id
    worker: str  # trajectory id
    role: Role
    episode: int
    operation: Operation
    parents: list[str]
    direction: str


class CompiledTask(EventPayload):
    """Compiler output: an executable investigation (inputs, environment, outputs, checks, dependencies)."""

    kind: ClassVar[str] = "compiled_task"
    task_id: str
    hypothesis_id: str
    episode: int
    inputs: dict[str, Any]
    environment: dict[str, str]
    required_outputs: list[str]
    checks: list[str]
    dependencies: list[dict[str, Any]]  # {"name", "kind", "available", "reason"} — never dropped
    fingerprint: str  # hash of the executable content (same analysis → same fingerprint)
    executable: bool


class ExecutionEvent(EventPayload):
    """One execution of a compiled task: status, outputs (by hash), checks, and analysis results."""

    kind: ClassVar[str] = "execution"
    task_id: str
    hypothesis_id: str
    episode: int
    status: Literal["ok", "failed", "blocked"]
    outputs: dict[str, str] = Field(default_factory=dict)  # required output name -> artifact sha256
    checks: dict[str, bool] = Field(default_factory=dict)
    results: dict[str, Any] = Field(default_factory=dict)
    error: str = ""
    seconds: float = 0.0


class RoleTurn(EventPayload):
    """A role-tagged transcript turn: messages in, one message or tool call out (the training unit)."""

    kind: ClassVar[str] = "role_turn"
    trajectory_id: str
    role: Role
    episode: int
    round: int
    turn: int
    messages_in: list[dict[str, Any]]  # agents.Message as dicts: role, content, tool_call
    output: dict[str, Any]
    failed: bool = False
    hypothesis_ids: list[str] = Field(default_factory=list)
    model: str = "builtin"


class LeadDecisionRecord(EventPayload):
    """The Lead's decision for an episode, with the validator's verdict (and a fallback if invalid)."""

    kind: ClassVar[str] = "lead_decision"
    episode: int
    trajectory_id: str
    direction: str
    operation: str  # an invalid decision may name anything; valid ones are one of OPERATIONS
    parents: list[str]
    valid: bool
    error: str = ""
    fallback: bool = False
    lead: str = "builtin"


class EpisodeStarted(EventPayload):
    kind: ClassVar[str] = "episode_started"
    episode: int
    attempt: int
    harness_version: str


class EpisodeFinished(EventPayload):
    kind: ClassVar[str] = "episode_finished"
    episode: int
    attempt: int
    operations: dict[str, int]
    hypotheses: list[str]


RECORD_TYPES: tuple[type[EventPayload], ...] = (
    HypothesisVersion,
    SourceRecord,
    SupportLink,
    Draft,
    DraftPromotion,
    CritiquePreference,
    ProgressLabel,
    ProfileAssessment,
    Contribution,
    LeadAssignment,
    CompiledTask,
    ExecutionEvent,
    RoleTurn,
    LeadDecisionRecord,
)
EVENT_KINDS: dict[str, type[EventPayload]] = {t.kind: t for t in RECORD_TYPES}


# -- loading ------------------------------------------------------------------------------------
def completed_events(events: Iterable[Event]) -> list[Event]:
    """Events of completed episode attempts only (plus episode-less ones), in log order.

    An episode's events between ``episode_started`` and ``episode_finished`` count once finished;
    an attempt cut short by a crash (no ``episode_finished``) is dropped, and its re-run counts.
    """
    kept: list[Event] = []
    pending: dict[int, list[Event]] = {}
    for ev in events:
        if ev.kind == EpisodeStarted.kind:
            pending[int(ev.payload["episode"])] = [ev]
        elif ev.kind == EpisodeFinished.kind:
            ep = int(ev.payload["episode"])
            kept.extend(pending.pop(ep, []))
            kept.append(ev)
        elif ev.cycle is not None and ev.kind in EVENT_KINDS and int(ev.cycle) in pending:
            pending[int(ev.cycle)].append(ev)
        elif ev.cycle is None or ev.kind not in EVENT_KINDS:
            kept.append(ev)
    return kept


@dataclass
class DiscoveryRecords:
    """Every typed record of a run (completed episodes only), grouped by type."""

    hypotheses: list[HypothesisVersion] = field(default_factory=list)
    sources: list[SourceRecord] = field(default_factory=list)
    support_links: list[SupportLink] = field(default_factory=list)
    drafts: list[Draft] = field(default_factory=list)
    promotions: list[DraftPromotion] = field(default_factory=list)
    critiques: list[CritiquePreference] = field(default_factory=list)
    progress: list[ProgressLabel] = field(default_factory=list)
    profiles: list[ProfileAssessment] = field(default_factory=list)
    contributions: list[Contribution] = field(default_factory=list)
    assignments: list[LeadAssignment] = field(default_factory=list)
    tasks: list[CompiledTask] = field(default_factory=list)
    executions: list[ExecutionEvent] = field(default_factory=list)
    turns: list[RoleTurn] = field(default_factory=list)
    lead_decisions: list[LeadDecisionRecord] = field(default_factory=list)
    episodes: list[EpisodeFinished] = field(default_factory=list)

    _FIELD_OF: ClassVar[dict[str, str]] = {
        "hypothesis_version": "hypotheses",
        "source": "sources",
        "support_link": "support_links",
        "draft": "drafts",
        "draft_promotion": "promotions",
        "critique": "critiques",
        "progress": "progress",
        "profile": "profiles",
        "contribution": "contributions",
        "lead_assignment": "assignments",
        "compiled_task": "tasks",
        "execution": "executions",
        "role_turn": "turns",
        "lead_decision": "lead_decisions",
        "episode_finished": "episodes",
    }

    def add(self, rec: EventPayload) -> None:
        getattr(self, self._FIELD_OF[type(rec).kind]).append(rec)

    def hypothesis(self, hid: str) -> HypothesisVersion:
        for h in self.hypotheses:
            if h.hypothesis_id == hid:
                return h
        raise KeyError(f"no hypothesis version {hid!r}")


def _run(run: Run | str | os.PathLike[str]) -> Run:
    return run if isinstance(run, Run) else Run.open(Path(run))


def load_records(run: Run | str | os.PathLike[str]) -> DiscoveryRecords:
    """Rebuild every typed record of a discovery run from its events (completed episodes only)."""
    r = _run(run)
    out = DiscoveryRecords()
    for ev in completed_events(r.events()):
        t = EVENT_KINDS.get(ev.kind)
        if t is not None:
            out.add(t.from_event(ev))
        elif ev.kind == EpisodeFinished.kind:
            out.add(EpisodeFinished.from_event(ev))
    return out


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


P = TypeVar("P", bound=EventPayload)


def load_typed(run: Run | str | os.PathLike[str], record: type[P]) -> list[P]:
    """Typed records of one kind, e.g. ``load_typed(run, CritiquePreference)``."""
    r = _run(run)
    return [record.from_event(e) for e in completed_events(r.events()) if e.kind == record.kind]


def records_frame(
    run: Run | str | os.PathLike[str], record: type[EventPayload], *, flatten: bool = True
) -> pd.DataFrame:
    """Records of one kind as a DataFrame plus ``seq``/``cycle``; nested fields flattened with ``.``."""
    import pandas as pd

    r = _run(run)
    rows = []
    for e in completed_events(r.events()):
        if e.kind == record.kind:
            rows.append({"seq": e.seq, "cycle": e.cycle, **record.from_event(e).model_dump(mode="json")})
    if not rows:
        return pd.DataFrame(columns=["seq", "cycle", *record.model_fields])
    return pd.json_normalize(rows) if flatten else pd.DataFrame(rows)


def hypotheses_frame(run: Run | str | os.PathLike[str]) -> pd.DataFrame:
    """One row per hypothesis version: id, family, version, parents, operation, episode, round, content.*"""
    return records_frame(run, HypothesisVersion)


def transcripts_frame(run: Run | str | os.PathLike[str]) -> pd.DataFrame:
    """Role-tagged transcript turns: trajectory, role, episode, turn, ``messages_in`` and ``output``
    (message dicts), ``failed``, plus ``output_content`` and ``tool_name`` for quick filtering."""
    df = records_frame(run, RoleTurn, flatten=False)
    df["output_content"] = [o.get("content", "") if isinstance(o, dict) else "" for o in df["output"]]
    df["tool_name"] = [
        (o.get("tool_call") or {}).get("name") if isinstance(o, dict) else None for o in df["output"]
    ]
    return df
