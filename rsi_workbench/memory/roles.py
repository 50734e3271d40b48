"""The three RSIAgent roles and the environment, as small protocols the engine talks to.

Environments and built-in roles (MiniWoB++, code repair) live in the domains and model roles in
:mod:`rsi_workbench.memory.llm_roles`; the engine only sees these shapes. The verifier never sees
an attempt's private transcript nor the memory; the curriculum sees a temporary copy of the memory
(or none) and past outcomes without hidden scores; ``official_score`` is called by the engine only
in frozen evaluation and recursion-curve probes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from rsi_workbench.memory.tree import MemoryTree
from rsi_workbench.memory.types import Attempt, Evidence, Phase, Project, VerdictKind, VerifierReport

Purpose = Literal["practice", "target", "evaluation"]


@runtime_checkable
class Workspace(Protocol):
    """One fresh, isolated environment instance for one project."""

    def close(self) -> None: ...


@runtime_checkable
class Environment(Protocol):
    """An environment binding: known targets, fresh workspaces, the host-only audit corpus, scoring."""

    name: str

    def targets(self) -> Sequence[Project]: ...

    def open(self, project: Project, *, seed: int, purpose: Purpose) -> Workspace:
        """A fresh workspace; raises ProjectRejected (bad instruction) or InfraFailure."""
        ...

    def host_only_texts(self) -> Sequence[str]:
        """The audit corpus (e.g. the target seeds' exact utterances): never shown to any role."""
        ...

    def official_score(self, workspace: Workspace) -> float:
        """s_i in [0, 1]; only the engine calls it, only in frozen evaluation and curve probes."""
        ...


@runtime_checkable
class Actor(Protocol):
    """Acts through executable programs with the memory; distils verified experience into memory."""

    def attempt(
        self, project: Project, workspace: Workspace, memory: MemoryTree, feedback: VerifierReport | None
    ) -> Attempt: ...

    def distil(self, attempt: Attempt, report: VerifierReport, canonical: MemoryTree) -> MemoryTree:
        """Distil then reconcile against the CURRENT canonical memory: the candidate memory."""
        ...

    def summarise_failure(self, attempt: Attempt, report: VerifierReport) -> str: ...


@runtime_checkable
class Verifier(Protocol):
    """Judges evidence only; cannot see or write memory."""

    def verify(self, project: Project, evidence: Evidence) -> VerifierReport: ...


@dataclass(frozen=True)
class OutcomeSummary:
    """What the curriculum may know of a past project: no hidden scores."""

    project_id: str
    instruction: str
    verdict: VerdictKind | None  # None: the project failed without a verdict (rejected, budget)
    phase: Phase
    wave: int
    outcome: str = ""  # terminal outcome: "PASS" | "FAIL" | "UNVERIFIED" | "rejected"
    evidence: tuple[str, ...] = ()  # the verifier's evidence lines of the last cycle
    is_target: bool = False  # a DRS target test (its verdict, never its hidden score)


@dataclass(frozen=True)
class CurriculumRequest:
    """Everything the curriculum sees when it authors a handoff."""

    phase: Phase
    wave: int
    targets: tuple[Project, ...]
    memory: MemoryTree | None  # a temporary copy (None when access is "none")
    results: tuple[OutcomeSummary, ...]
    failure_summary: str | None = None  # DRS: the actor's summary of the last target failure
    target_passed: bool | None = None  # DRS: contrast practice after a PASS


@runtime_checkable
class Curriculum(Protocol):
    """Authors practice; the engine validates its raw handoff text (:func:`parse_handoff`)."""

    def author(self, request: CurriculumRequest) -> str: ...
