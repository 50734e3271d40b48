"""Code repair as an RSIAgent environment: the memory room is not GUI-specific.

- **Targets**: a few HumanEvalFix tasks; the actor sees the specification, the buggy program and its
  public tests; ``official_score`` = the fraction of **hidden** tests the final program passes, run
  in the sandbox. Hidden tests live only in this environment (host-only: never in a workspace, an
  evidence record or a prompt) and are the audit corpus (:meth:`CodeRepairEnv.host_only_texts`).
- **Practice**: other HumanEvalFix tasks (a pool disjoint from the targets, asserted). A practice
  instruction names a pool task (``repair Python/26``) or a bug type of the pool (``practice an
  operator misuse bug``; the task is then drawn by seed); anything else, and any target, is rejected.
- **Built-in actor** (:class:`RecipeRepairActor`): the SBFL + mutation search of the domain's
  ``MutationCoder`` under a budget of executed candidates, with memory used for real: a verified fix
  stores its mutation recipe (``procedures/<operator>.json``: verified fixes, failed uses, examples)
  and later attempts try stored recipes first, best first; a failed attempt leaves a lesson
  (``lessons/<project>.json``: the candidates already tried) that a retry skips. Reconcile edits or
  deletes entries the evidence contradicts (a recipe that keeps failing, a lesson of a solved task).
- **Built-in verifier** (:class:`PublicTestVerifier`): re-runs the **public** tests on the final
  program in the sandbox (never the actor's reported results, never hidden tests): PASS when all
  pass, FAIL naming the failing ones, UNVERIFIED when there is no program or no public test.
- **Built-in curriculum** (:class:`RepairCurriculum`): waves of unseen pool tasks; in the deep phase
  one unseen pool task per turn after a target failure (SATURATED after a target PASS).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field

from rsi_workbench.config import StrictModel
from rsi_workbench.domains.code_repair import MutationCoder, RepairFeedback, RepairTask, Sandbox
from rsi_workbench.domains.code_repair.llm_coder import check_answer, feedback_text
from rsi_workbench.domains.code_repair.sandbox import SandboxUnavailable, Status, TestOutcome
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

Purpose = Literal["practice", "target", "evaluation"]
# single-edit fixable tasks (the buggy program is one mutation away from the reference) where the
# operator-restricted search ranks the fix far above the plain search (scan in the module's tests
# notes): targets fixed by off_by_one / drop_operand edits, a pool whose bugs share those operators
DEFAULT_TARGETS = ("Python/43", "Python/69", "Python/108", "Python/111")
DEFAULT_PRACTICE = (
    "Python/15",
    "Python/41",
    "Python/14",
    "Python/23",
    "Python/2",
    "Python/83",
    "Python/100",
    "Python/26",
)
_TASK_ID = re.compile(r"\bpython[/_-](\d{1,3})\b", re.I)


class CodeRepairSettings(StrictModel):
    """The code-repair environment (``environment: {kind: code_repair, ...}``)."""

    kind: Literal["code_repair"] = "code_repair"
    targets: list[str] = Field(default_factory=lambda: list(DEFAULT_TARGETS), min_length=1)
    practice: list[str] = Field(default_factory=lambda: list(DEFAULT_PRACTICE), min_length=1)
    budget: int = Field(default=12, ge=1, le=200, description="candidate programs the built-in actor runs")
    per_recipe: int = Field(default=5, ge=1, le=50, description="candidates tried per stored recipe")
    max_recipes: int = Field(default=2, ge=0, le=20, description="stored recipes tried before searching")
    wave_size: int = Field(default=2, ge=1, le=16, description="projects per built-in curriculum wave")


def project_id(task_id: str) -> str:
    """``Python/20`` -> ``python-20`` (a project id)."""
    return re.sub(r"[^a-z0-9_-]+", "-", task_id.lower()).strip("-")


def render_test(test: Any, entry_point: str) -> str:
    """A public test as one readable line (io: the call and its expected value; assert: the code)."""
    if test.kind == "io":
        return f"{entry_point}({', '.join(repr(a) for a in test.args or [])}) == {test.expected!r}"
    return " ".join(str(test.code or "").split())


# ------------------------------------------------------------------------------------- workspace
@dataclass
class RepairWorkspace:
    """One task's fresh workspace: the visible spec, the buggy program, the PUBLIC tests, a sandbox.

    Hidden tests are not here (the environment keeps them under ``key``). ``submit`` sets the final
    program the verifier and the official score judge; ``run_public`` executes a candidate."""

    key: str
    project: Project
    purpose: Purpose
    seed: int
    spec: str
    program: str
    entry_point: str
    public_tests: tuple[Any, ...]
    sandbox: Sandbox
    final_program: str | None = None
    executions: int = 0
    closed: bool = False
    answer_format: str = "Answer with the whole repaired function in one ```python code block."

    @property
    def task_id(self) -> str:  # MutationCoder caches coverage per (program, task_id)
        return self.key

    def run_public(self, program: str, *, trace: bool = False) -> list[TestOutcome]:
        """The public tests on ``program`` in the sandbox; a sandbox fault is an InfraFailure."""
        if self.closed:
            raise RuntimeError(f"workspace {self.key} is closed")
        try:
            outs = self.sandbox.run_suite(program, self.public_tests, self.entry_point, trace=trace)
        except SandboxUnavailable as e:
            raise InfraFailure(f"sandbox unavailable: {e}") from e
        self.executions += 1
        return outs

    def submit(self, program: str) -> None:
        self.final_program = program

    def evidence(self, execution: Mapping[str, Any]) -> Evidence:
        """What the verifier sees, built here (not by the actor): requirements, final program, public tests."""
        tests = "\n".join(f"- {render_test(t, self.entry_point)}" for t in self.public_tests)
        req = f"{self.project.instruction}\n\nSpecification:\n{self.spec.strip()}\n\nPublic tests:\n{tests}"
        return Evidence(
            requirements=req,
            final_state={"program": self.final_program or self.program, "entry_point": self.entry_point},
            execution={
                "public_tests": [t.model_dump(mode="json") for t in self.public_tests],
                **execution,
            },
        )

    # the text interface of a model actor (llm_roles.LLMActor)
    def observe(self) -> str:
        fb = RepairFeedback(self.program, tuple(self.run_public(self.program)))
        return (
            f"Specification:\n{self.spec.strip()}\n\nProgram:\n```python\n{self.program.rstrip()}\n```\n\n"
            + feedback_text(self, fb)
        )

    def act(self, answer: str) -> tuple[Evidence, dict[str, Any]]:
        """Run a model's answer: the repaired function spliced into the program, then the public tests."""
        program, reason = check_answer(answer, self, self.program)
        if program is None or reason:
            self.submit(self.program)
            return self.evidence({"invalid_answer": reason}), {"invalid": reason}
        self.submit(program)
        outs = self.run_public(program)
        res = [{"test": o.test_id, "status": o.status.value} for o in outs]
        return self.evidence({"actor_public_results": res}), {"program": program}

    def close(self) -> None:
        self.closed = True


# ------------------------------------------------------------------------------------- environment
class CodeRepairEnv:
    """HumanEvalFix targets judged on hidden tests, practice on a disjoint pool (module doc)."""

    name = "code_repair"
    text_workspaces = True  # workspaces offer observe/act to a model actor

    def __init__(
        self,
        settings: CodeRepairSettings | None = None,
        *,
        tasks: Sequence[RepairTask] | None = None,
        sandbox: Sandbox | None = None,
    ):
        from rsi_workbench.domains.code_repair import load_humanevalfix

        self.settings = settings or CodeRepairSettings()
        by_id = {t.task_id: t for t in (tasks if tasks is not None else load_humanevalfix())}
        names = [*self.settings.targets, *self.settings.practice]
        missing = [t for t in names if t not in by_id]
        if missing:
            raise ValueError(f"code_repair: unknown task ids {missing}")
        overlap = set(self.settings.targets) & set(self.settings.practice)
        assert not overlap, f"practice tasks must be disjoint from targets: {sorted(overlap)}"
        self._targets = {project_id(t): by_id[t] for t in self.settings.targets}
        self._practice = {t: by_id[t] for t in self.settings.practice}
        self.sandbox = sandbox or Sandbox()  # the choke point: ``required`` refuses a weaker plan here
        self._hidden: dict[str, RepairTask] = {}  # workspace key -> task (host-only)
        self._seeds: dict[str, set[int]] = {"practice": set(), "target": set()}
        self._opened = 0
        self._lock = threading.Lock()  # branches open workspaces from several threads

    def sandbox_isolation(self) -> Any:
        """The sandbox's :class:`~rsi_workbench.sandbox.IsolationGrant` (what the arm records), or None
        for a sandbox test double without one."""
        return getattr(self.sandbox, "grant", None)

    def targets(self) -> list[Project]:
        return [
            Project(
                pid,
                f"Repair the program of HumanEvalFix task {t.task_id} (entry point {t.entry_point}).",
                True,
            )
            for pid, t in self._targets.items()
        ]

    @property
    def accepts(self) -> str:
        """What practice instructions this environment runs (told to a model curriculum)."""
        pool = ", ".join(sorted(self._practice))
        return f"'repair <task>' for a pool task ({pool}) or 'practise a <bug type> bug' ({', '.join(self.bug_types())})"

    def bug_types(self) -> list[str]:
        """The bug types of the practice pool (what a practice instruction may ask for)."""
        return sorted(
            {str(t.meta.get("bug_type")) for t in self._practice.values() if t.meta.get("bug_type")}
        )

    def resolve(self, project: Project, seed: int) -> RepairTask:
        """The task a project runs: a target by id, or the pool task its instruction names."""
        if project.is_target:
            if project.id not in self._targets:
                raise ProjectRejected(f"{project.id!r} is not a target of this environment")
            return self._targets[project.id]
        m = _TASK_ID.search(project.instruction)
        if m:
            tid = f"Python/{int(m.group(1))}"
            if project_id(tid) in self._targets:
                raise ProjectRejected(f"{tid} is a target: practice runs only on pool tasks")
            if tid not in self._practice:
                raise ProjectRejected(f"{tid} is not in the practice pool {sorted(self._practice)}")
            return self._practice[tid]
        text = project.instruction.lower()
        for bug in self.bug_types():
            if bug in text:
                pool = sorted(t for t, x in self._practice.items() if x.meta.get("bug_type") == bug)
                return self._practice[random.Random(f"{seed}:{bug}").choice(pool)]
        raise ProjectRejected(
            "a practice instruction names a pool task (e.g. 'repair Python/26') or a bug type "
            f"({', '.join(self.bug_types())}); got {project.instruction[:120]!r}"
        )

    def open(self, project: Project, *, seed: int, purpose: Purpose) -> RepairWorkspace:
        side = "practice" if purpose == "practice" else "target"
        other = self._seeds["target" if side == "practice" else "practice"]
        assert seed not in other, f"seed {seed} used for both practice and targets (must be disjoint)"
        task = self.resolve(project, seed)
        with self._lock:
            self._seeds[side].add(seed)
            self._opened += 1
            key = f"{project.id}#{self._opened}"
            self._hidden[key] = task
        return RepairWorkspace(
            key=key,
            project=project,
            purpose=purpose,
            seed=seed,
            spec=task.prompt,
            program=task.program,
            entry_point=task.entry_point,
            public_tests=tuple(task.public_tests),
            sandbox=self.sandbox,
        )

    def host_only_texts(self) -> list[str]:
        """The targets' hidden tests, as text: the audit corpus, never shown to any role."""
        return [render_test(h, t.entry_point) for t in self._targets.values() for h in t.hidden_tests]

    def official_score(self, workspace: Any) -> float:
        """The fraction of the task's hidden tests the workspace's final program passes (engine only)."""
        task = self._hidden[workspace.key]
        program = workspace.final_program or workspace.program
        try:
            outs = self.sandbox.run_suite(program, task.hidden_tests, task.entry_point)
        except SandboxUnavailable as e:
            raise InfraFailure(f"sandbox unavailable: {e}") from e
        return sum(o.status == Status.AC for o in outs) / len(outs)


# ------------------------------------------------------------------------------------- verifier
@dataclass
class PublicTestVerifier:
    """Re-runs the public tests named in the evidence on its final program (module doc)."""

    sandbox: Sandbox | None = None
    name: str = "public-tests"

    def verify(self, project: Project, evidence: Evidence) -> VerifierReport:
        program = evidence.final_state.get("program")
        ep = evidence.final_state.get("entry_point")
        tests = list(evidence.execution.get("public_tests") or [])
        if not program or not ep or not tests:
            why = "no final program" if not program or not ep else "no public tests to check"
            return VerifierReport("UNVERIFIED", (why,), {"checked": 0})
        from rsi_workbench.domains.code_repair.tasks import TestCase

        cases = [TestCase.model_validate(t) for t in tests]
        self.sandbox = self.sandbox or Sandbox()
        try:
            outs = self.sandbox.run_suite(str(program), cases, str(ep))
        except SandboxUnavailable as e:
            raise InfraFailure(f"sandbox unavailable: {e}") from e
        failing = [o for o in outs if o.status != Status.AC]
        checks = {o.test_id: o.status.value for o in outs}
        if not failing:
            return VerifierReport(
                "PASS", (f"all {len(outs)} public tests pass on the final program",), checks
            )
        lines = [f"{len(failing)} of {len(outs)} public tests fail"]
        lines += [f"{o.test_id}: {o.status.value} {' '.join(o.message.split())[:160]}" for o in failing[:5]]
        return VerifierReport("FAIL", tuple(lines), checks)


# ------------------------------------------------------------------------------------- actor
def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _load_json(memory: MemoryTree, path: str) -> dict[str, Any]:
    try:
        data = json.loads(memory.read_text(path))
    except (KeyError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _dump(data: Mapping[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def recipes(memory: MemoryTree) -> list[tuple[str, int, int]]:
    """Stored mutation recipes ``(operator, verified fixes, failed uses)``, most verified first."""
    out = []
    for path in memory:
        if path.startswith("procedures/") and path.endswith(".json"):
            d = _load_json(memory, path)
            if isinstance(d.get("operator"), str):
                out.append((d["operator"], int(d.get("verified_fixes", 0)), int(d.get("failed_uses", 0))))
    return sorted(out, key=lambda r: (-r[1], r[2], r[0]))


@dataclass
class RecipeRepairActor:
    """Mutation search that tries verified recipes from memory first and skips a lesson's candidates."""

    budget: int = 12
    per_recipe: int = 5
    max_recipes: int = 2
    examples_kept: int = 5
    name: str = "recipe-repair"
    _coders: dict[tuple[str, ...], MutationCoder] = field(default_factory=dict, repr=False)

    def _coder(self, ws: RepairWorkspace, ops: tuple[str, ...]) -> MutationCoder:
        if ops not in self._coders:
            self._coders[ops] = (
                MutationCoder(sandbox=ws.sandbox, operators=ops) if ops else MutationCoder(ws.sandbox)
            )
        return self._coders[ops]

    def attempt(
        self, project: Project, workspace: Any, memory: MemoryTree, feedback: VerifierReport | None
    ) -> Attempt:
        ws: RepairWorkspace = workspace
        base = ws.program
        outs = ws.run_public(base, trace=True)
        fb = RepairFeedback(base, tuple(outs))
        skip = set(_load_json(memory, f"lessons/{project.id}.json").get("tried", []))
        tried: list[dict[str, Any]] = []
        best = (sum(o.passed for o in outs), base)
        plan: list[tuple[tuple[str, ...], int, str]] = [
            ((op,), self.per_recipe, "memory") for op, _, _ in recipes(memory)[: self.max_recipes]
        ]
        plan.append(((), self.budget, "search"))
        fixed = best[0] == len(outs)
        for ops, k, source in plan:
            if fixed or len(tried) >= self.budget:
                break
            # one rng stream per plan step: the search draws the same candidates with or without memory
            rng = random.Random(f"{ws.seed}:{project.id}:{source}:{','.join(ops)}")
            cands = self._coder(ws, ops).propose(ws, base, fb, k + len(skip) + len(tried), rng)
            for c in cands:
                if fixed or len(tried) >= self.budget or _sha(c.program) in skip:
                    continue
                if any(t["sha"] == _sha(c.program) for t in tried):
                    continue
                passed = sum(o.passed for o in ws.run_public(c.program))
                tried.append(
                    {
                        "operators": c.meta["operators"],
                        "edits": c.meta["edits"],
                        "sha": _sha(c.program),
                        "passed": passed,
                        "source": source,
                    }
                )
                if passed > best[0]:
                    best = (passed, c.program)
                fixed = passed == len(outs)
        ws.submit(best[1])
        fix = tried[-1] if fixed and tried else None
        private = {
            "tried": tried,
            "fix": fix,
            "recipes": [r[0] for r in recipes(memory)[: self.max_recipes]],
            "n_public": len(outs),
            "skipped": len(skip),
        }
        ev = ws.evidence({"candidates_executed": len(tried)})
        return Attempt(project, ev, private, calls=len(tried))

    def distil(self, attempt: Attempt, report: VerifierReport, canonical: MemoryTree) -> MemoryTree:
        """PASS: the fix's recipe gains a verified fix; FAIL: a lesson of the tried candidates;
        reconcile: recipes tried without fixing gain a failed use and are deleted once their failures
        outweigh their fixes (2f > 2 + 2v... i.e. f > 2v + 2); a lesson of a now-solved task is deleted."""
        if report.verdict == "UNVERIFIED":
            return canonical
        p = attempt.private
        pid = attempt.project.id
        writes: dict[str, str] = {}
        deletes: list[str] = []
        fix = p.get("fix") if report.verdict == "PASS" else None
        if fix is not None:
            for op in fix["operators"]:
                path = f"procedures/{op}.json"
                d = _load_json(canonical, path) or {"operator": op, "verified_fixes": 0, "failed_uses": 0}
                d["verified_fixes"] = int(d.get("verified_fixes", 0)) + 1
                ex = [*d.get("examples", []), {"project": pid, "edit": "; ".join(fix["edits"])}]
                d["examples"] = ex[-self.examples_kept :]
                writes[path] = _dump(d)
            deletes.append(f"lessons/{pid}.json")
        elif report.verdict == "FAIL":
            path = f"lessons/{pid}.json"
            old = _load_json(canonical, path)
            shas = sorted({*old.get("tried", []), *(t["sha"] for t in p.get("tried", []))})
            writes[path] = _dump(
                {"project": pid, "verdict": "FAIL", "tried": shas, "evidence": list(report.evidence[:3])}
            )
        used = {
            op
            for t in p.get("tried", [])
            if t["source"] == "memory" and t is not fix
            for op in t["operators"]
        }
        for op in sorted(used - set(fix["operators"] if fix else ())):
            path = f"procedures/{op}.json"
            d = json.loads(writes[path]) if path in writes else _load_json(canonical, path)
            if not d:
                continue
            d["failed_uses"] = int(d.get("failed_uses", 0)) + 1
            if d["failed_uses"] > 2 * int(d.get("verified_fixes", 0)) + 2:
                deletes.append(path)  # the evidence contradicts the recipe: forget it
                writes.pop(path, None)
            else:
                writes[path] = _dump(d)
        return canonical.with_changes(writes, deletes)

    def summarise_failure(self, attempt: Attempt, report: VerifierReport) -> str:
        tried = attempt.private.get("tried", [])
        ops = sorted({op for t in tried for op in t["operators"]})
        return (
            f"{report.verdict} on {attempt.project.id}: {'; '.join(report.evidence[:3])}; "
            f"{len(tried)} candidates tried (operators {', '.join(ops) or 'none'})"
        )


# ------------------------------------------------------------------------------------- curriculum
@dataclass
class RepairCurriculum:
    """Broad: waves of unseen pool tasks until the pool is spent (SATURATED); deep: one unseen pool
    task per turn after a target failure, STALLED when none is left, SATURATED after a PASS."""

    env: CodeRepairEnv
    wave_size: int = 2
    max_waves: int = 3

    def author(self, request: CurriculumRequest) -> str:
        done = {r.instruction for r in request.results}
        unseen = [t for t in self.env._practice if f"repair {t}" not in done]
        if request.phase == "broad":
            if not unseen or request.wave >= self.max_waves:
                return json.dumps(
                    {"decision": "SATURATED", "rationale": "practice pool spent", "projects": []}
                )
            pick = unseen[: self.wave_size]
            why = f"wave {request.wave}: pool tasks exercising common bug patterns"
        else:
            if request.target_passed:
                return json.dumps({"decision": "SATURATED", "rationale": "target passes", "projects": []})
            if not unseen:
                return json.dumps({"decision": "STALLED", "rationale": "no unseen pool task", "projects": []})
            pick = unseen[:1]
            why = "deep: another pool task to learn a recipe for the failing target"
        projects = [{"id": f"practice-{project_id(t)}", "instruction": f"repair {t}"} for t in pick]
        return json.dumps({"decision": "WAVE", "rationale": why, "projects": projects})


def build_code_repair_arm(settings: CodeRepairSettings, seed: int) -> tuple[Any, Any, Any, Any]:
    """(environment, actor factory, verifier, curriculum) of one experiment seed: the built-in roles
    (the tasks are fixed; ``seed`` reaches the actor through the engine's workspace seeds)."""
    env = CodeRepairEnv(settings)
    s = settings

    def actor_factory() -> RecipeRepairActor:
        return RecipeRepairActor(budget=s.budget, per_recipe=s.per_recipe, max_recipes=s.max_recipes)

    return env, actor_factory, PublicTestVerifier(env.sandbox), RepairCurriculum(env, wave_size=s.wave_size)
