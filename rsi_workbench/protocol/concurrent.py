"""A cycle's feedback rounds run as phases: proposals in flight together, predictions batched across
tasks, selected candidates evaluated in parallel — with the records of the sequential loop.

Within cycle k the pair (θ_k, φ_k) is fixed, so the tasks' proposals do not depend on one another;
only selection does, through the external-feedback budget the earlier tasks spent. The phases:

1. **propose** every active task in threads (:func:`~rsi_workbench.records.ordered.ordered_map`;
   a served model sees as many requests in flight as its block's ``concurrency`` admits), each
   task's appends (e.g. its ``model_call`` events) held in the task's buffer;
2. **predict** every task's valid candidates in one call where φ_k has ``predict_many``
   (:mod:`~rsi_workbench.protocol.batching`);
3. **choose ahead** on the budget left before the round, and **evaluate** each selected task in
   threads (its candidates in order until one solves it, then the audit), appends held per step;
4. **write in task order**: each task's held proposal events, then the selection decided again on
   the budget the earlier tasks really spent; when it equals the decision made ahead, the outcomes
   computed ahead are written, otherwise the selection is evaluated now. The events, their order and
   the table are those of the sequential loop (tests/protocol/test_concurrent_cycle.py).

``execution`` (:class:`~rsi_workbench.protocol.settings.ProtocolSettings`): ``auto`` (the default)
proposes in parallel when the policy declares ``concurrent_propose = True`` and evaluates in
parallel when the environment declares ``concurrent_evaluate = True`` (each a promise: safe to call
from threads, and no call depends on another task's call of the same cycle); ``sequential`` is the
one-task-after-another loop; ``concurrent`` is ``auto`` that refuses a policy without the
declaration. A policy may define ``before_concurrent_propose()``, called in the loop's thread before phase 1
(the model coder versions its prompt template there). ``execution_workers`` bounds the threads
(default 32; evaluations also at most the environment's ``evaluate_workers``, unset: the CPU
count; the model block's ``concurrency`` still bounds the requests in flight). The effective plan is in the run manifest
(``cycle_execution``), not in the events: sequential and concurrent runs have the same events.

Cycle 1's initial observations and the last cycle's final audits run in parallel as well when
evaluations do (in the pipeline each task's initial observation opens its own pipeline); both are
recorded in task order (:meth:`CycleExecution.cycle_rounds`, :meth:`CycleExecution.final_audits`).

Costs of the phases: an evaluation computed ahead for a decision that the true budget changes is
discarded (sandbox time, never budget); a kill mid-cycle loses the held events of that cycle, and
the resumed run redoes the cycle (its live model calls are made again, then recorded).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rsi_workbench.protocol.batching import predict_items
from rsi_workbench.protocol.feedback import Draft, FeedbackRound, Proposal, Ready
from rsi_workbench.protocol.selection import Selection
from rsi_workbench.protocol.spec import Prediction
from rsi_workbench.protocol.state import LoopState
from rsi_workbench.records.ordered import Deferred, current_slot, deferring, ordered_map

DEFAULT_WORKERS = 32


class CycleExecution(FeedbackRound):
    """The loop's feedback collaborator: the feedback rounds of one cycle, one task after another or
    as phases (module doc). Beyond :class:`FeedbackRound`'s parameters it reads ``execution`` and
    ``execution_workers`` (``ProtocolSettings``) and ``progress`` (a progress bar per cycle)."""

    def __init__(
        self,
        state: LoopState,
        selection: Selection,
        *,
        candidates: int = 4,
        max_rounds: int = 3,
        audit: bool = True,
        record_candidates: int | None = None,
        execution: str = "auto",
        execution_workers: int | None = None,
        progress: bool = False,
    ):
        super().__init__(
            state,
            selection,
            candidates=candidates,
            max_rounds=max_rounds,
            audit=audit,
            record_candidates=record_candidates,
        )
        self.execution, self.execution_workers, self.progress = execution, execution_workers, progress

    def execution_plan(self) -> dict[str, Any]:
        """The effective plan: ``{"mode", "propose": parallel?, "evaluate": parallel?, "workers": n,
        "evaluate_workers": m}``; evaluations (CPU-bound: sandboxes) run at most the environment's
        ``evaluate_workers`` (unset: the CPU count) at once."""
        mode = self.execution
        workers = int(self.execution_workers or DEFAULT_WORKERS)
        if mode == "sequential":
            return {
                "mode": "sequential",
                "propose": False,
                "evaluate": False,
                "workers": 1,
                "evaluate_workers": 1,
            }
        par_p = bool(getattr(self.state.policy, "concurrent_propose", False))
        par_e = bool(getattr(self.state.env, "concurrent_evaluate", False))
        if mode == "concurrent" and not par_p:
            raise ValueError(
                f"protocol execution: concurrent, but the policy {type(self.state.policy).__name__} does not declare "
                "concurrent_propose = True (safe to propose several tasks at once); use execution: auto or sequential"
            )
        phased = par_p or par_e
        cpu = int(getattr(self.state.env, "evaluate_workers", None) or os.cpu_count() or 1)
        return {
            "mode": "concurrent" if phased else "sequential",
            "propose": par_p,
            "evaluate": par_e,
            "workers": workers if phased else 1,
            "evaluate_workers": min(workers, cpu) if par_e else 1,
        }

    def cycle_rounds(
        self, k: int, states: dict[str, Any], done: dict[str, str], counts: dict[str, int]
    ) -> list[str]:
        """Cycle ``k``'s work before learning: in cycle 1 every task's initial observation (in task
        order), then the feedback rounds of the tasks still active; returns those tasks.

        With evaluations in parallel the initial observations run in parallel too, and, in the
        per-task pipeline, each task's proposal starts as soon as its own initial observation is
        back; they are still charged and recorded in task order before any round's events."""
        tasks = list(self.state.spec.tasks)
        plan = self.execution_plan()
        if k != 1:
            active = [t for t in tasks if t not in done]
            self._feedback_rounds(active, k, states, done, counts)
            return active
        if plan["mode"] == "sequential" or not plan["evaluate"] or len(tasks) < 2:
            for t in tasks:
                self._initial(t, k, states, done)
            active = [t for t in tasks if t not in done]
            self._feedback_rounds(active, k, states, done, counts)
            return active
        if self._pipelines(plan):
            self._record_plan(plan)
            self._before_propose(plan)
            return self._pipelined_rounds(tasks, k, states, done, counts, plan, opening=True)
        firsts, held = ordered_map(self.state.env.initial, tasks, int(plan["evaluate_workers"]))
        for t, buf, (state, obs) in zip(tasks, held, firsts, strict=True):
            buf.flush()
            self._record_initial(t, k, state, obs, states, done)
        active = [t for t in tasks if t not in done]
        self._feedback_rounds(active, k, states, done, counts)
        return active

    def final_audits(self, states: dict[str, Any]) -> list[dict[str, Any]]:
        """``env.final_audit`` of every task, in task order (in parallel when evaluations are)."""
        tasks = list(self.state.spec.tasks)
        plan = self.execution_plan()
        if plan["mode"] == "sequential" or not plan["evaluate"] or len(tasks) < 2:
            return [self.state.env.final_audit(t, states[t]) for t in tasks]
        audits, held = ordered_map(
            lambda t: self.state.env.final_audit(t, states[t]), tasks, int(plan["evaluate_workers"])
        )
        for buf in held:  # a final audit records nothing; whatever one appended, in task order
            buf.flush()
        return audits

    def _pipelines(self, plan: dict[str, Any]) -> bool:
        """Whether the cycle runs as one pipeline per task (both halves parallel, no predict_many)."""
        return (
            bool(plan["propose"] and plan["evaluate"])
            and getattr(self.state.predictor, "predict_many", None) is None
        )

    def _before_propose(self, plan: dict[str, Any]) -> None:
        """The policy's ``before_concurrent_propose()``, in the loop's thread, before a parallel phase
        (the model coder versions its prompt template there, not from a task's thread)."""
        before = getattr(self.state.policy, "before_concurrent_propose", None) if plan["propose"] else None
        if before is not None:
            before()

    def _record_plan(self, plan: dict[str, Any]) -> None:
        if self.state.records.manifest.get("cycle_execution") != plan:
            self.state.records.update_manifest(cycle_execution=plan)

    def _feedback_rounds(
        self,
        active: Sequence[str],
        k: int,
        states: dict[str, Any],
        done: dict[str, str],
        counts: dict[str, int],
    ) -> None:
        """Every active task's feedback round of cycle ``k``, in the declared execution."""
        plan = self.execution_plan()
        self._record_plan(plan)
        if plan["mode"] == "sequential" or len(active) < 2:
            for t in self._task_order(active, k):
                self._feedback_round(t, k, states, done, counts)
            return
        self._phased_rounds(list(active), k, states, done, counts, plan)

    def _task_order(self, items: Sequence[Any], k: int) -> Iterable[Any]:
        """The cycle's tasks (or their indices) in task order, with a progress bar when asked."""
        if not self.progress:
            return items
        from tqdm.auto import tqdm

        return tqdm(items, desc=f"cycle {k}: feedback round", unit="task", leave=False)

    def _phased_rounds(
        self,
        active: list[str],
        k: int,
        states: dict[str, Any],
        done: dict[str, str],
        counts: dict[str, int],
        plan: dict[str, Any],
    ) -> None:
        workers = int(plan["workers"])
        self._before_propose(plan)
        if self._pipelines(plan):
            self._pipelined_rounds(active, k, states, done, counts, plan)
            return
        drafts, held_propose = ordered_map(
            lambda t: self._draft(t, k, states[t]), active, workers if plan["propose"] else 1
        )
        props, held_predict = self._predict_drafts(drafts)
        ahead = [self._choose(p) for p in props]  # on the budget before the round (never below)
        todo = [j for j, d in enumerate(ahead) if d.outcome == "selected"]
        ran, held_eval = ordered_map(
            lambda j: self._run_selected(props[j], ahead[j]), todo, int(plan["evaluate_workers"])
        )
        ready: dict[int, Ready] = dict(zip(todo, ran, strict=True))
        outer = dict(zip(todo, held_eval, strict=True))  # appends outside the held steps (none expected)
        for j in self._task_order(range(len(active)), k):
            held_propose[j].flush()
            held_predict[j].flush()
            outer.get(j, Deferred()).flush()
            self._decide_and_evaluate(props[j], states, done, counts, ready.get(j))

    def _pipelined_rounds(
        self,
        tasks: list[str],
        k: int,
        states: dict[str, Any],
        done: dict[str, str],
        counts: dict[str, int],
        plan: dict[str, Any],
        opening: bool = False,
    ) -> list[str]:
        """The phases as one pipeline per task (φ_k without ``predict_many``): a task's prediction,
        ahead choice and evaluation start as soon as its own proposal is back, so the cycle's model
        time and sandbox time overlap instead of adding up. φ_k is still called one task at a time
        and in task order (a turnstile: a predictor need not be thread-safe, and one whose answers
        depend on call order gives the sequential answers; without φ_k no task waits for another); evaluations run at most
        ``evaluate_workers`` at once; the write in task order is the phases' (module doc).

        ``opening`` (cycle 1): ``tasks`` are all the tasks, each pipeline starts with the task's
        initial observation (held in its own buffer, charged and recorded in task order before any
        round's events), and a task solved by it proposes nothing. The ahead choices then see the
        budget before the initial observations were charged; phase 4 decides again on the true
        budget, as always. Returns the tasks that had a round."""
        turn = _Turnstile()
        slots = threading.BoundedSemaphore(max(1, int(plan["evaluate_workers"])))
        firsts: list[Deferred] = [Deferred() for _ in tasks]
        opened: dict[int, tuple[Any, Any]] = {}

        def one(j: int) -> tuple[Proposal, Ready | None] | None:
            t = tasks[j]
            try:
                if opening:
                    with slots, deferring(firsts[j]):
                        opened[j] = self.state.env.initial(t)
                    active_state, obs = opened[j]
                    if obs.solved:
                        turn.skip(j)
                        return None
                else:
                    active_state = states[t]
                d = self._draft(t, k, active_state)
            except BaseException:
                turn.skip(j)
                raise
            slot = current_slot()
            if slot is not None:  # no more lockstep requests from this item (batch_across_tasks)
                slot.group.leave(slot.index)
            predicted = None
            if self.state.predictor is None:
                turn.skip(j)
            else:
                with turn.at(j):
                    if d.valid_idx:
                        predicted = self.state.predictor.predict(
                            t, d.state, [d.actions[i] for i in d.valid_idx]
                        )
            prop = self._scored(d, predicted)
            dec = self._choose(prop)  # on the budget before the round, as the phases do
            if dec.outcome != "selected":
                return prop, None
            with slots:
                return prop, self._run_selected(prop, dec)

        out, held = ordered_map(one, list(range(len(tasks))), int(plan["workers"]))
        if opening:
            for j, t in enumerate(tasks):
                firsts[j].flush()
                state, obs = opened[j]
                self._record_initial(t, k, state, obs, states, done)
        ran = [j for j in range(len(tasks)) if out[j] is not None]
        for j in self._task_order(ran, k):
            held[j].flush()  # the task's proposal and prediction appends, in the order made
            res = out[j]
            assert res is not None
            prop, ready = res
            self._decide_and_evaluate(prop, states, done, counts, ready)
        return [tasks[j] for j in ran]

    def _predict_drafts(self, drafts: list[Draft]) -> tuple[list[Proposal], list[Deferred]]:
        """φ_k's predictions on every draft's valid candidates, batched across tasks."""
        held = [Deferred() for _ in drafts]
        predicted: list[list[Prediction] | None] = [None] * len(drafts)
        if self.state.predictor is not None:
            want = [j for j, d in enumerate(drafts) if d.valid_idx]
            items = [
                (drafts[j].task_id, drafts[j].state, [drafts[j].actions[i] for i in drafts[j].valid_idx])
                for j in want
            ]
            if items:
                preds, bufs = predict_items(self.state.predictor, items)
                for j, p, b in zip(want, preds, bufs, strict=True):
                    predicted[j], held[j] = p, b
        return [self._scored(d, p) for d, p in zip(drafts, predicted, strict=True)], held


class _Turnstile:
    """Lets item ``j`` through :meth:`at` only after items ``0..j-1`` went through (or skipped)."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._passed: set[int] = set()
        self._next = 0

    def _advance(self, j: int) -> None:
        with self._cv:
            self._passed.add(j)
            while self._next in self._passed:
                self._next += 1
            self._cv.notify_all()

    @contextmanager
    def at(self, j: int) -> Iterator[None]:
        with self._cv:
            self._cv.wait_for(lambda: self._next >= j)
        try:
            yield
        finally:
            self._advance(j)

    def skip(self, j: int) -> None:
        self._advance(j)
