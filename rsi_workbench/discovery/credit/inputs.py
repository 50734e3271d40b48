"""Typed inputs of the credit pipeline: comparisons, assessments, hypothesis and trajectory nodes, records.

Adapters (:mod:`.from_records`) map a research graph's records onto these; every later stage
(eq. 2-9) is a pure function of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Role = Literal["lead", "generation", "evolution", "critique", "compiler", "progress"]
ROLES: tuple[Role, ...] = ("lead", "generation", "evolution", "critique", "compiler", "progress")
WORKER_ROLES: frozenset[str] = frozenset({"generation", "evolution"})  # may hold production edges
NEVER_SUPERVISED: frozenset[str] = frozenset({"critique", "compiler", "progress"})  # context/provenance only
Outcome = Literal["a", "b", "tie", "abstain"]
ProgressLabel = Literal["substantive_progress", "necessary_repair", "duplicate", "insufficient_evidence"]
PROGRESS_LABELS: tuple[str, ...] = (
    "substantive_progress",
    "necessary_repair",
    "duplicate",
    "insufficient_evidence",
)


@dataclass(frozen=True)
class Comparison:
    """One blinded Critique judgement between hypothesis versions ``a`` and ``b`` (record order matters)."""

    a: str
    b: str
    outcome: Outcome


@dataclass(frozen=True)
class Assessment:
    """Scientific assessment of one hypothesis version: validity, marginal duplicate, Progress label."""

    hypothesis: str
    valid: bool = True
    marginal_duplicate: bool = False
    progress: ProgressLabel | None = None  # ancestor-aware Progress judgement; None = not assessed


@dataclass(frozen=True)
class HypothesisNode:
    """A hypothesis version as the credit pipeline sees it: stratum, publication, families, evidence."""

    id: str
    domain: str = "default"
    round: int = 0
    episode: str = ""
    publisher: str | None = None  # agent id of the direct publisher
    created_at: float = 0.0
    proposal_sha256: str | None = None  # hash of the original proposal text
    support_files: Mapping[str, str] = field(default_factory=dict)  # path -> sha256
    local_family: str | None = None  # lineage family (defaults to the id)
    global_family: str | None = None  # scientific family (defaults to the local family)
    duplicate_key: str | None = None  # content key of a registration; repeats are suppressed

    @property
    def loc(self) -> str:
        return self.local_family or self.id

    @property
    def glob(self) -> str:
        return self.global_family or self.loc


@dataclass(frozen=True)
class TrajectoryNode:
    """A collected agent trajectory (the training unit): role, author, episode, domain, memory group."""

    id: str
    role: Role
    agent: str = ""
    episode: str = ""
    domain: str = "default"
    group: str = "default"  # shared-memory group for eq. 9 balance
    started_at: float = 0.0
    text_sha256s: frozenset[str] = frozenset()  # hashes of proposal texts it wrote
    files: Mapping[str, str] = field(default_factory=dict)  # path -> sha256 of files it wrote


@dataclass(frozen=True)
class Promotion:
    """An exact draft-revision promotion record: the draft written by ``draft_author`` became ``hypothesis``."""

    id: str
    hypothesis: str
    draft_author: str  # trajectory id
    promoted_by: str | None = None  # trajectory id of the promoting Lead, if any


@dataclass(frozen=True)
class Assignment:
    """A Lead work-assignment record; ``hypotheses`` are the versions the assigned work produced."""

    id: str
    hypotheses: frozenset[str]
    lead: str  # trajectory id


Basis = Literal[
    "direct_publication",
    "proposal_text",
    "draft_promotion",
    "support_file",
    "assignment",
    "promotion",
    "shared_episode",
    "lineage",
    "worker_call",
]


@dataclass(frozen=True)
class ContributionClaim:
    """A candidate contribution edge with the evidence it rests on (``ref``: record id or file path)."""

    trajectory: str
    hypothesis: str
    basis: Basis
    ref: str | None = None


@dataclass(frozen=True)
class ContributionEdge:
    """An admitted edge: ``kind`` is coordination (L_h) or production (P_h)."""

    trajectory: str
    hypothesis: str
    kind: Literal["coordination", "production"]
    basis: str
    ref: str | None = None
