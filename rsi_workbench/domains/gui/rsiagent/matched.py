"""Matched learning budgets, the verifier audit and fresh-instance evaluation.

- :class:`LearningActor` wraps an arm's actor: at most ``cap`` learning episodes (practice projects
  and DRS target tests; frozen evaluation is never counted) in the whole arm, shared by its branches.
  A branch that would start past the cap is :class:`~rsi_workbench.memory.ProjectRejected` ("the
  learning-episode budget ... is spent": no episode, no memory change); a branch already running
  whose next cycle would pass it repeats its last attempt without playing (the verifier judges the
  same evidence again, so the branch ends on what it actually did). ``spent`` counts the attempts
  delegated to the actor (the engine's count of learning episodes: an attempt where the actor had no
  untried candidate plays no browser episode but counts), so every arm spends at most ``cap``; on
  resume it starts from the committed units' attempts. A second budget, ``calls``, counts the
  verifier calls of learning attempts (one per delegated attempt, and one per repeated attempt that
  played nothing) against their own cap (``learning_verifier_calls``), so arms can be matched on
  what they spend, episodes and verifier calls, not only on the episode cap.
- :class:`AuditingVerifier` wraps the verifier: after every learning episode it records the verdict
  beside MiniWoB++'s raw reward of that episode (``verifier_audit`` events, host-only: no role reads
  the run's events). :func:`audit_summary` keeps the events of committed units only and returns the
  confusion counts and the agreement rate (PASS iff raw reward 1, over PASS/FAIL verdicts).
- :func:`fresh_evaluation` scores the frozen memory on ``n`` fresh instances of each target's page
  (seeds from :func:`~.miniwob.fresh_seeds`, asserted disjoint from every target, practice and page
  check seed), one fresh actor per instance, one attempt, no learning (``fresh_evaluation`` events;
  instances already recorded are skipped on resume).
- :func:`matched_roles` and :func:`matched_payload` apply these to one arm of an ``rsiagent``
  experiment and collect its spend, audit and fresh scores for the experiment's ``arm_finished`` event.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from rsi_workbench.memory import Attempt, InfraFailure, MemoryTree, Project, ProjectRejected, VerifierReport
from rsi_workbench.memory.ledger import WAVE_COMMITTED, WAVE_STARTED
from rsi_workbench.records import Run

from .miniwob import (
    CHECK_BASE,
    FRESH_BASE,
    SPAN,
    TARGET_BASE,
    MiniwobEnvironment,
    MiniwobWorkspace,
    fresh_seeds,
    pop_last_episode,
)

AUDIT = "verifier_audit"
FRESH = "fresh_evaluation"
LEARNING_PURPOSES = ("practice", "target")


class LearningBudget:
    """A thread-safe count of learning episodes against a cap (None: no cap)."""

    def __init__(self, cap: int | None, spent: int = 0) -> None:
        self.cap, self.spent = cap, spent if cap is None else min(cap, spent)
        self.calls: LearningBudget | None = None  # the verifier-call budget beside an episode budget
        self._lock = threading.Lock()

    def reserve(self) -> bool:
        with self._lock:
            if self.cap is not None and self.spent >= self.cap:
                return False
            self.spent += 1
            return True

    def release(self) -> None:
        with self._lock:
            self.spent -= 1


def committed_attempts(run: Run) -> int:
    """Attempts of the run's committed units (what a resumed budget starts from)."""
    return sum(int(e.payload.get("episodes", 0)) for e in run.events(WAVE_COMMITTED))


class LearningActor:
    """An actor under a shared learning budget that also clears the thread's last-episode record."""

    def __init__(self, inner: Any, budget: LearningBudget, calls: LearningBudget | None = None) -> None:
        self.inner, self.budget = inner, budget
        self.calls = calls if calls is not None else LearningBudget(None)
        self._last: dict[str, Attempt] = {}

    def attempt(
        self, project: Project, workspace: Any, memory: MemoryTree, feedback: VerifierReport | None
    ) -> Attempt:
        """Delegate one attempt, counted against the budget when it is a learning episode."""
        pop_last_episode()
        if getattr(workspace, "purpose", None) not in LEARNING_PURPOSES:
            return self.inner.attempt(project, workspace, memory, feedback)  # type: ignore[no-any-return]
        if not self.budget.reserve():
            return self._exhausted(project, feedback, f"learning-episode budget ({self.budget.cap})")
        if not self.calls.reserve():
            self.budget.release()
            return self._exhausted(project, feedback, f"verifier-call budget ({self.calls.cap})")
        try:
            att: Attempt = self.inner.attempt(project, workspace, memory, feedback)
        except (InfraFailure, ProjectRejected):
            self.budget.release()
            self.calls.release()
            raise
        self._last[project.id] = att
        return att

    def _exhausted(self, project: Project, feedback: VerifierReport | None, what: str) -> Attempt:
        if feedback is None or project.id not in self._last:
            raise ProjectRejected(f"the {what} is spent")
        with self.calls._lock:  # the verifier judges the repeated attempt again: a call, no episode
            self.calls.spent += 1
        return self._last[project.id]  # no episode: the branch ends on what it did

    def distil(self, attempt: Attempt, report: VerifierReport, canonical: MemoryTree) -> MemoryTree:
        """The inner actor's distil."""
        return self.inner.distil(attempt, report, canonical)  # type: ignore[no-any-return]

    def summarise_failure(self, attempt: Attempt, report: VerifierReport) -> str:
        """The inner actor's failure summary."""
        return self.inner.summarise_failure(attempt, report)  # type: ignore[no-any-return]


class AuditingVerifier:
    """The verifier, with each learning episode's verdict recorded beside the page's raw reward."""

    def __init__(self, inner: Any, run: Run) -> None:
        self.inner, self.run = inner, run

    def verify(self, project: Project, evidence: Any) -> VerifierReport:
        """The inner verdict; a ``verifier_audit`` event when a learning episode was just played."""
        ep = pop_last_episode()
        report: VerifierReport = self.inner.verify(project, evidence)
        if ep is not None and ep["purpose"] in LEARNING_PURPOSES:
            raw = ep["raw_reward"]
            success = raw is not None and float(raw) >= 1.0
            self.run.append(
                AUDIT,
                {
                    "project_id": project.id,
                    "purpose": ep["purpose"],
                    "page": ep["page"],
                    "seed": ep["seed"],
                    "verdict": report.verdict,
                    "raw_reward": raw,
                    "success": success,
                    "agree": None
                    if report.verdict == "UNVERIFIED"
                    else (report.verdict == "PASS") == success,
                    "hidden_from_agents": True,
                },
            )
        return report


def audit_events(run: Run) -> list[dict[str, Any]]:
    """The audit records of committed units (a unit's events lie between its start and commit)."""
    committed = {int(e.payload["wave_key"]) for e in run.events(WAVE_COMMITTED)}
    out, key = [], None
    for e in run.events():
        if e.kind == WAVE_STARTED:
            key = e.seq
        elif e.kind == AUDIT and key in committed:
            out.append(dict(e.payload))
    return out


def audit_summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Confusion counts (verdict x page success) per purpose and the agreement rate over PASS/FAIL."""
    out: dict[str, Any] = {}
    for purpose in (*LEARNING_PURPOSES, "all"):
        rs = [r for r in records if purpose == "all" or r["purpose"] == purpose]
        c = Counter(f"{r['verdict']}/{'success' if r['success'] else 'failure'}" for r in rs)
        decided = [r for r in rs if r["agree"] is not None]
        out[purpose] = {
            "episodes": len(rs),
            "confusion": dict(sorted(c.items())),
            "decided": len(decided),
            "agree": sum(bool(r["agree"]) for r in decided),
            "agreement": (sum(bool(r["agree"]) for r in decided) / len(decided)) if decided else None,
        }
    return out


def check_fresh_disjoint(env: MiniwobEnvironment, seeds: list[int], all_target_seeds: set[int]) -> None:
    """Fresh seeds lie in their own range, apart from every target, practice and page-check seed."""
    bad = [s for s in seeds if not FRESH_BASE <= s < FRESH_BASE + SPAN]
    clash = set(seeds) & (set(env.target_seeds) | all_target_seeds)
    if bad or clash or len(set(seeds)) != len(seeds):
        raise AssertionError(
            f"fresh seeds must be distinct and disjoint: out of range {bad}, targets {clash}"
        )
    for base in (0, TARGET_BASE, CHECK_BASE):
        assert not any(base <= s < base + SPAN for s in seeds), "fresh seeds overlap another range"


def fresh_evaluation(
    run: Run,
    env: MiniwobEnvironment,
    memory: MemoryTree,
    actor_factory: Callable[[], Any],
    *,
    seed: int,
    n: int,
    all_target_seeds: set[int],
) -> dict[str, list[float]]:
    """Score the frozen ``memory`` on ``n`` fresh instances per target page; per page the scores."""
    done = {(e.payload["page"], int(e.payload["seed"])): e.payload for e in run.events(FRESH)}
    frozen = memory.tree_hash()
    targets = env.target_pages()
    out: dict[str, list[float]] = {}
    for tid, (page, t_seed) in targets.items():
        seeds = fresh_seeds(env.salt, seed, page, n)
        check_fresh_disjoint(env, seeds, all_target_seeds)
        todo = [s for s in seeds if (page, s) not in done]
        if todo:
            ws = MiniwobWorkspace(page, t_seed, "evaluation", env.limits, env.episodes)
            try:
                target_utterance = ws.observe().utterance
                for s in todo:
                    ws.seed, ws._raw_reward = s, None
                    actor = actor_factory()
                    att = actor.attempt(Project(tid, f"page: {page}", is_target=True), ws, memory, None)
                    score = env.official_score(ws) if att.calls else 0.0
                    if memory.tree_hash() != frozen:
                        raise AssertionError(f"fresh evaluation of {tid} changed the frozen memory")
                    rec = {
                        "target": tid,
                        "page": page,
                        "seed": s,
                        "score": score,
                        "frozen": frozen,
                        "same_utterance_as_target": att.evidence.requirements == target_utterance,
                        "source": att.private.get("source"),
                    }
                    run.append(FRESH, rec)
                    done[(page, s)] = rec
            finally:
                ws.close()
            run.commit()
        out[tid] = [float(done[(page, s)]["score"]) for s in seeds]
    return out


def matched_roles(config: Any, sub: Run, env: Any, actor_factory: Any, verifier: Any) -> tuple[Any, ...]:
    """(env, actor factory, verifier, budget): an ``rsiagent`` arm's actor under the shared learning
    budgets (``learning_episodes``, ``learning_verifier_calls``) and its verifier audited (``audit``)."""
    budget = LearningBudget(config.learning_episodes, committed_attempts(sub))
    calls = LearningBudget(config.learning_verifier_calls, committed_attempts(sub))
    inner = actor_factory

    def factory() -> Any:
        return LearningActor(inner(), budget, calls)

    budget.calls = calls
    return env, factory, AuditingVerifier(verifier, sub) if config.audit else verifier, budget


def matched_payload(config: Any, sub: Run, env: Any, res: Any, budget: Any, seed: int) -> dict[str, Any]:
    """Spent learning episodes, the verifier audit and the fresh-instance scores of a finished arm."""
    out: dict[str, Any] = {"learning_episodes_cap": config.learning_episodes}
    if budget is not None:
        out["learning_episodes_spent"] = budget.spent
        calls = budget.calls
        out["spend"] = {
            "learning_episodes": budget.spent,
            "verifier_calls": calls.spent if calls is not None else None,
            "verifier_calls_cap": config.learning_verifier_calls,
            "browser_episodes": dict(getattr(env, "episodes", {})),
        }
    if config.audit:
        out["audit"] = audit_summary(audit_events(sub))
    if config.fresh_instances and res.status == "done":
        from .actor import BuiltinActor
        from .miniwob import target_seed_for

        e = config.environment
        others = {
            target_seed_for(env.salt, t.page, i, s, vary_template=e.vary_template)
            for s in config.seeds
            for t in e.targets
            for i in range(t.count)
        }
        fresh = fresh_evaluation(
            sub, env, res.memory, BuiltinActor, seed=seed, n=config.fresh_instances, all_target_seeds=others
        )
        out["fresh"] = fresh
        out["fresh_n"] = config.fresh_instances
    return out
