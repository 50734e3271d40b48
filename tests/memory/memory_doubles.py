"""Hand-built test doubles for the memory engine (no model, no browser, no sandbox).

The double world: a project's instruction names a *family* (its first word, e.g. ``alpha``); each
family has a hidden answer (the family reversed). A practice workspace lets an actor discover the
answer by probing (a few search steps); a target or evaluation workspace does not, so a target is
solved only from memory. The actor double stores a verified answer as ``procedures/<family>.txt``
and a failure as ``lessons/<project>.txt``: memory genuinely helps, and a run without memory fails.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rsi_workbench.memory import (
    Attempt,
    CurriculumRequest,
    Evidence,
    InfraFailure,
    MemoryTree,
    Project,
    ProjectRejected,
    VerifierReport,
)


def family(instruction: str) -> str:
    return instruction.split()[0]


def answer_of(fam: str) -> str:
    return fam[::-1]


@dataclass
class WorkspaceDouble:
    project: Project
    seed: int
    purpose: str
    answer: str | None = None
    closed: bool = False

    def probe(self) -> str:
        if self.purpose != "practice":
            raise PermissionError("only practice workspaces can be probed")
        return answer_of(family(self.project.instruction))

    def close(self) -> None:
        self.closed = True


@dataclass
class FamilyEnvDouble:
    """Targets ``alpha`` and ``beta`` by default; ``infra`` maps project id -> open() calls that fail."""

    target_families: Sequence[str] = ("alpha", "beta")
    host_only: Sequence[str] = ()
    infra: dict[str, int] = field(default_factory=dict)
    name: str = "family-double"
    opened: list[tuple[str, int, str]] = field(default_factory=list)
    scored: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def targets(self) -> list[Project]:
        return [Project(id=f"t-{f}", instruction=f"{f} target task") for f in self.target_families]

    def open(self, project: Project, *, seed: int, purpose: str) -> WorkspaceDouble:
        if purpose == "practice":
            assert seed % 2 == 1, "practice seeds are disjoint from target seeds"
        if project.instruction.startswith("reject"):
            raise ProjectRejected(f"cannot run {project.instruction!r}")
        with self.lock:
            if self.infra.get(project.id, 0) > 0:
                self.infra[project.id] -= 1
                raise InfraFailure(f"browser crashed opening {project.id}")
            self.opened.append((project.id, seed, purpose))
        return WorkspaceDouble(project, seed, purpose)

    def host_only_texts(self) -> list[str]:
        return list(self.host_only)

    def official_score(self, workspace: WorkspaceDouble) -> float:
        self.scored.append(workspace.project.id)
        return 1.0 if workspace.answer == answer_of(family(workspace.project.instruction)) else 0.0


class RecordingActorDouble:
    """Solves from memory, else probes (practice only); distils verified answers and failures.

    Hooks (all optional, for the tests): ``on_attempt(actor, project, workspace, memory)`` before acting,
    ``on_distil(actor, canonical)`` before distilling; ``log`` collects what every actor did.
    """

    def __init__(self, log: list[tuple[Any, ...]] | None = None, **hooks: Callable[..., Any]):
        self.log = log if log is not None else []
        self.hooks = hooks
        self.history: list[str] = []

    def attempt(
        self, project: Project, workspace: Any, memory: MemoryTree, feedback: VerifierReport | None
    ) -> Attempt:
        if "on_attempt" in self.hooks:
            self.hooks["on_attempt"](self, project, workspace, memory)
        fam = family(project.instruction)
        path = f"procedures/{fam}.txt"
        calls = 0
        if path in memory.files:
            ans, source = memory.read_text(path), "memory"
        elif workspace.purpose == "practice":
            ans, source, calls = workspace.probe(), "search", 3
        else:
            ans, source = "?", "guess"
        workspace.answer = ans
        self.history.append(f"{project.id}:{source}")
        self.log.append(("attempt", project.id, memory.tree_hash(), workspace.purpose))
        ev = Evidence(
            requirements=project.instruction, final_state={"answer": ans}, execution={"steps": calls}
        )
        return Attempt(
            project=project,
            evidence=ev,
            private={"source": source, "history": list(self.history)},
            calls=calls,
        )

    def distil(self, attempt: Attempt, report: VerifierReport, canonical: MemoryTree) -> MemoryTree:
        if "on_distil" in self.hooks:
            self.hooks["on_distil"](self, canonical)
        self.log.append(("distil", attempt.project.id, canonical.tree_hash()))
        fam = family(attempt.project.instruction)
        if report.verdict == "PASS":
            return canonical.with_changes(
                {f"procedures/{fam}.txt": str(attempt.evidence.final_state["answer"])}
            )
        return canonical.with_changes(
            {f"lessons/{attempt.project.id}.txt": f"{fam}: guessing fails; practise first"}
        )

    def summarise_failure(self, attempt: Attempt, report: VerifierReport) -> str:
        return f"{attempt.project.id} failed: {'; '.join(report.evidence)}"


class AnswerVerifierDouble:
    """Checks the visible requirement (the answer for the instruction's family); UNVERIFIED for ``fuzzy``."""

    def __init__(self, infra_on: dict[str, int] | None = None):
        self.seen: list[Evidence] = []
        self.infra_on = infra_on or {}

    def verify(self, project: Project, evidence: Evidence) -> VerifierReport:
        self.seen.append(evidence)
        if self.infra_on.get(project.id, 0) > 0:
            self.infra_on[project.id] -= 1
            raise InfraFailure("verifier model transport error")
        fam = family(project.instruction)
        if fam == "fuzzy":
            return VerifierReport("UNVERIFIED", ("no visible requirement to check",))
        ok = evidence.final_state.get("answer") == answer_of(fam)
        return VerifierReport(
            "PASS" if ok else "FAIL", (f"answer {evidence.final_state.get('answer')!r}",), {"answer": ok}
        )


def handoff(decision: str = "WAVE", *ids_and_instructions: tuple[str, str], rationale: str = "r") -> str:
    projects = [{"id": i, "instruction": s} for i, s in ids_and_instructions]
    return json.dumps({"decision": decision, "rationale": rationale, "projects": projects})


class ScriptedCurriculumDouble:
    """Scripted handoffs. ``broad[k]`` answers BRS wave ``k + 1`` (BRS waves are numbered first, so a
    resumed run gets the same answer for the same wave); ``deep`` answers DRS turns in order (or, as a
    dict, by wave number). A missing entry answers SATURATED. Records every request it saw."""

    def __init__(self, broad: Sequence[str] = (), deep: Sequence[str] | dict[int, str] = ()):
        self.broad = list(broad)
        self.deep = deep if isinstance(deep, dict) else list(deep)
        self.requests: list[CurriculumRequest] = []

    def author(self, request: CurriculumRequest) -> str:
        self.requests.append(request)
        if request.phase == "broad":
            k = request.wave - 1
            return self.broad[k] if k < len(self.broad) else handoff("SATURATED")
        if isinstance(self.deep, dict):
            return self.deep.get(request.wave, handoff("SATURATED"))
        return self.deep.pop(0) if self.deep else handoff("SATURATED")


def practice_waves(*waves: Sequence[str]) -> list[str]:
    """One WAVE handoff per argument, each a list of families to practise (ids made unique)."""
    out = []
    for w, fams in enumerate(waves, 1):
        out.append(handoff("WAVE", *((f"w{w}-{i}-{f}", f"{f} drill {i}") for i, f in enumerate(fams))))
    return out
