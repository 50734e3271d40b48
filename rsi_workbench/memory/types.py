"""The plain data RSIAgent's roles exchange: projects, evidence, verifier reports, attempts.

The verifier sees only :class:`Evidence` (requirements, final state, execution results), never an
attempt's ``private`` transcript nor the memory. :class:`InfraFailure` marks a failure of the
machinery (browser crash, sandbox fault, model transport error): it is never a lesson and never a
PASS/FAIL. :class:`ProjectRejected` is the environment refusing an instruction it cannot run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

VerdictKind = Literal["PASS", "FAIL", "UNVERIFIED"]
Phase = Literal["broad", "deep"]
MemoryAccess = Literal["read_only", "none"]  # what the curriculum sees of the memory

VERDICTS: tuple[VerdictKind, ...] = ("PASS", "FAIL", "UNVERIFIED")


@dataclass(frozen=True)
class Project:
    """A practice project authored by the curriculum, or a known target (``is_target``)."""

    id: str  # [a-z0-9][a-z0-9_-]{0,63}
    instruction: str  # free text; the environment decides whether it can run it
    is_target: bool = False


@dataclass(frozen=True)
class Evidence:
    """What the verifier may see: the visible requirements, the final state and execution results."""

    requirements: str
    final_state: Mapping[str, Any]
    execution: Mapping[str, Any]


@dataclass(frozen=True)
class VerifierReport:
    """A grounded verdict with human-readable evidence lines and machine-readable per-check results."""

    verdict: VerdictKind
    evidence: tuple[str, ...]
    checks: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")


@dataclass(frozen=True)
class Attempt:
    """One actor attempt at a project in one workspace; ``private`` never reaches the verifier."""

    project: Project
    evidence: Evidence
    private: Mapping[str, Any]
    calls: int = 0  # model calls / search steps spent (budget accounting)


class InfraFailure(RuntimeError):
    """Infrastructure failed (browser, sandbox, model transport): never a lesson, never PASS/FAIL.

    The engine retries a branch at most twice, then stops the run with status ``infra`` (resumable).
    """


class ProjectRejected(ValueError):
    """The environment cannot run this instruction: the project fails with this reason."""
