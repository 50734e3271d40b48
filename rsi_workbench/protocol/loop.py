"""The six-step cycle propose → predict → select → evaluate → learn → retain, as a resumable loop.

One **run** = one (method, seed) over a task batch; one **cycle** k = one feedback round over every
unfinished task, followed by the learn and retain decisions. ``Loop.step()`` runs exactly one cycle
and returns a :class:`CycleReport`; ``Loop.run(n)`` runs up to ``n``. Every step is appended as
events; at the end of a cycle the loop records a snapshot (task states, component artifacts) —
in full as an artifact, or as the change since the previous cycle's (:mod:`~rsi_workbench.protocol.snapshot`)
— and commits. Re-opening a run replays its events: the events of a cycle that was cut
off (SIGKILL mid-cycle) are superseded by the rerun of that cycle (:func:`effective_events`), so a
killed-and-resumed run yields the same effective records as an uninterrupted one for the same seed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from rsi_workbench.budget import EXTERNAL_FEEDBACK, UPDATE_COMPUTE, BudgetLedger
from rsi_workbench.plugins import object_path
from rsi_workbench.protocol.concurrent import CycleExecution
from rsi_workbench.protocol.gate_data import GateData
from rsi_workbench.protocol.learning import Learning
from rsi_workbench.protocol.retention import Retention
from rsi_workbench.protocol.selection import Selection, SelectionRule, resolve_rule, rule_provenance
from rsi_workbench.protocol.settings import GateSettings, ProtocolSettings
from rsi_workbench.protocol.snapshot import restore as restore_snapshot
from rsi_workbench.protocol.spec import (
    ImaginedRecord,
    Observation,
    PairRecord,
    Policy,
    Prediction,
    Predictor,
    TaskSpec,
)
from rsi_workbench.protocol.state import LoopState, ProposalGroup, Readout
from rsi_workbench.records import Event, Run

__all__ = [
    "Collaborators",
    "CycleReport",
    "GateSettings",
    "Loop",
    "ProtocolSettings",
    "compose",
    "effective_events",
]


@dataclass
class CycleReport:
    """What one cycle did (also derivable from its events)."""

    cycle: int
    active: int
    executed: int
    solved: int
    refused: int
    external_spent: float
    update_spent: float
    reliability: str | None
    adaptation_triggered: bool
    policy_update_triggered: bool
    gates: dict[str, Any] = field(default_factory=dict)
    policy_version: str = ""
    predictor_version: str | None = None
    finished: bool = False


def effective_events(run: Run) -> list[Event]:
    """The run's events with every cut-off cycle attempt removed (a rerun of cycle k supersedes
    earlier ``cycle=k`` events); the log itself stays append-only."""
    kept: list[Event] = []
    for ev in run.events():
        if ev.kind == "cycle_started":
            kept = [e for e in kept if e.cycle != ev.cycle]
        kept.append(ev)
    return kept


@dataclass
class Collaborators:
    """The parts a :class:`Loop` is composed of, each given the settings its decisions read.

    ``selection`` (:class:`~rsi_workbench.protocol.selection.Selection`) picks what spends external
    feedback; ``feedback`` (:class:`~rsi_workbench.protocol.concurrent.CycleExecution`) runs a
    cycle's feedback rounds; ``learning`` (:class:`~rsi_workbench.protocol.learning.Learning`)
    proposes new components from update data; ``retention``
    (:class:`~rsi_workbench.protocol.retention.Retention`) gates and retains the pair, measuring
    with its ``measure`` (:class:`~rsi_workbench.protocol.gate_data.GateData`). Replace one
    (e.g. ``dataclasses.replace(compose(...), selection=...)``) to change one decision's strategy."""

    selection: Selection
    feedback: CycleExecution
    learning: Learning
    retention: Retention


def compose(
    state: LoopState,
    settings: ProtocolSettings,
    *,
    rule: SelectionRule | str | None = None,
    progress: bool = False,
) -> Collaborators:
    """The default collaborators over ``state``, each handed the settings fields it reads.

    This is where a declared threshold leaves the settings object: e.g. ``settings.gates`` becomes
    :class:`~rsi_workbench.protocol.retention.Retention`'s ``gates``, which hands ``gates.pair`` to
    :func:`~rsi_workbench.protocol.gates.pair_gate` as an argument."""
    s = settings
    readout = Readout(s.readout, s.utility, s.binary_reliability.term)
    selection = Selection(
        resolve_rule(rule if rule is not None else s.rule),
        utility_spec=s.utility,
        admission=s.admission,
        batch_size=s.batch_size,
        initial_design=s.initial_design,
    )
    feedback = CycleExecution(
        state,
        selection,
        candidates=s.k,
        max_rounds=s.max_rounds,
        audit=s.audit,
        record_candidates=s.record_candidates,
        execution=s.execution,
        execution_workers=s.execution_workers,
        progress=progress,
    )
    learning = Learning(
        state,
        readout,
        policy_update=s.policy_update,
        reliability=s.reliability,
        regression_reliability=s.regression_reliability,
        binary_reliability=s.binary_reliability,
        adaptation=s.adaptation,
        rescore_history=s.rescore_history,
        rescore_cost=s.rescore_cost,
        metrics_version=s.metrics_version,
    )
    measure = GateData(
        state,
        selection,
        readout,
        candidates=s.k,
        gate_execution_cost=s.gate_execution_cost,
        rescore_cost=s.rescore_cost,
        metrics_version=s.metrics_version,
    )
    retention = Retention(state, measure, gates=s.gates)
    return Collaborators(selection, feedback, learning, retention)


class Loop:
    """The retained-pair protocol over one task batch; construct with :meth:`open`.

    A loop is its ``state`` (:class:`~rsi_workbench.protocol.state.LoopState`: splits, records H_k,
    the current pair, the ledger) and the :class:`Collaborators` that decide over it; it only
    sequences them (:meth:`step`) and writes the cycle's snapshot."""

    def __init__(
        self,
        state: LoopState,
        parts: Collaborators,
        *,
        max_rounds: int,
        settings: ProtocolSettings | None = None,
    ):
        self.state, self.parts, self.max_rounds = state, parts, max_rounds
        self.settings = settings

    # the state and parts a caller reads (experiments read these of an open loop)
    @property
    def spec(self) -> TaskSpec:
        return self.state.spec

    @property
    def records(self) -> Run:
        return self.state.records

    @property
    def seed(self) -> int:
        return self.state.seed

    @property
    def k(self) -> int:
        """The last finished cycle (0 before the first)."""
        return self.state.k

    @property
    def finished(self) -> bool:
        return self.state.finished

    @property
    def states(self) -> dict[str, Any]:
        return self.state.states

    @property
    def done(self) -> dict[str, str]:
        return self.state.done

    @property
    def history(self) -> list[PairRecord]:
        return self.state.history

    @property
    def splits(self) -> dict[str, list[str]]:
        return self.state.splits

    @property
    def split_of(self) -> dict[str, str]:
        return self.state.split_of

    @property
    def policy(self) -> Policy:
        return self.state.policy

    @property
    def predictor(self) -> Predictor | None:
        return self.state.predictor

    @property
    def ledger(self) -> BudgetLedger:
        return self.state.ledger

    @property
    def rule(self) -> SelectionRule:
        """The selection rule (the ``selection`` collaborator's)."""
        return self.parts.selection.rule

    @rule.setter
    def rule(self, rule: SelectionRule | str) -> None:
        self.parts.selection.rule = resolve_rule(rule)

    def execution_plan(self) -> dict[str, Any]:
        """The effective plan of the feedback rounds (:meth:`CycleExecution.execution_plan`)."""
        return self.parts.feedback.execution_plan()

    @classmethod
    def open(
        cls,
        spec: TaskSpec,
        run: Run,
        settings: ProtocolSettings,
        *,
        seed: int,
        progress: bool = False,
        rule: SelectionRule | str | None = None,
        parts: Callable[[LoopState, ProtocolSettings], Collaborators] | None = None,
    ) -> Loop:
        """Start a new loop on ``run`` or resume it from its events.

        ``rule``: the selection rule as an object (or a name / import path), instead of
        ``settings.rule``. ``loop_opened`` records what was used (``components``: the import path of
        the environment, policy, predictor, verifier and rule classes); a resume with another rule
        class is refused. ``parts``: a function ``(state, settings) -> Collaborators`` that composes
        the loop instead of :func:`compose` (a strategy of one's own for one decision).
        """
        state = LoopState(
            spec,
            run,
            seed,
            gate_data=settings.gate_data,
            gate_fraction=settings.gate_fraction,
            gate_window=settings.gate_window,
        )
        if parts is None:
            collab = compose(state, settings, rule=rule, progress=progress)
        else:
            collab = parts(state, settings)
            if rule is not None:
                collab.selection.rule = resolve_rule(rule)
        loop = cls(state, collab, max_rounds=settings.max_rounds, settings=settings)
        evs = effective_events(run)
        opened = [e for e in evs if e.kind == "loop_opened"]
        components = {
            "environment": object_path(spec.environment),
            "policy": object_path(spec.policy),
            "predictor": object_path(spec.predictor) if spec.predictor is not None else None,
            "verifier": object_path(spec.verifier),
            "selection_rule": rule_provenance(loop.rule),
        }
        header = {
            "spec": spec.name,
            "seed": seed,
            "tasks": list(spec.tasks),
            "settings": settings.model_dump(mode="json"),
            "splits": state.splits,
            "budgets": spec.budgets,
            "components": components,
        }
        was = opened[0].payload.get("components", components)["selection_rule"] if opened else None
        if was is not None and was != components["selection_rule"]:
            raise ValueError(
                f"run {run.path} was opened with selection rule {was}, not "
                f"{components['selection_rule']}; refusing to resume"
            )
        if not opened:
            state.store_components(spec.policy, spec.predictor)
            run.append(
                "loop_opened",
                {
                    **header,
                    "policy_version": state.policy.version,
                    "predictor_version": state.predictor.version if state.predictor else None,
                    "policy_artifact": state.policy_sha,
                    "predictor_artifact": state.predictor_sha,
                },
            )
            state.ledger = BudgetLedger.open(run, spec.budgets)
            run.commit()
            return loop
        if opened[0].payload["seed"] != seed or opened[0].payload["tasks"] != list(spec.tasks):
            raise ValueError(f"run {run.path} was opened with another seed or task batch; refusing to resume")
        loop._restore(evs, opened[0])
        return loop

    def _restore(self, evs: list[Event], opened: Event) -> None:
        done_k = max((e.cycle or 0 for e in evs if e.kind == "cycle_finished"), default=0)
        cut = [e for e in evs if e.cycle is not None and e.cycle > done_k]
        evs = [e for e in evs if e.cycle is None or e.cycle <= done_k]  # a cut-off attempt is void
        budgets = {k: float(v) for k, v in self.state.spec.budgets.items()}
        self.state.ledger = BudgetLedger(budgets, run=self.state.records)
        for e in evs:
            if e.kind == "budget_spent":
                self.state.ledger.spent[e.payload["budget"]] += float(e.payload["amount"])
        finished = [e for e in evs if e.kind == "cycle_finished"]
        pol_sha, pred_sha = opened.payload["policy_artifact"], opened.payload["predictor_artifact"]
        if finished:
            snap, self.state.snapshots = restore_snapshot(self.state.records.artifacts, finished)
            self.state.k = snap["cycle"]
            self.state.states = {t: self.state.env.load_state(s) for t, s in snap["states"].items()}
            self.state.done = dict(snap["done"])
            self.state.finished = bool(snap["finished"])
            pol_sha, pred_sha = snap["policy_artifact"], snap["predictor_artifact"]
        self.state.load_components(pol_sha, pred_sha)
        for e in evs:
            if e.kind == "observation":
                self.state.history.append(PairRecord.from_json(e.payload["pair"]))
            elif e.kind == "proposal":
                p = e.payload
                self.state.groups.append(
                    ProposalGroup(p["task_id"], p["cycle"], p["state"], p["signature"], p["actions"])
                )
                for c in p["candidates"]:
                    if c.get("admitted"):
                        self.state.imagined.append(
                            ImaginedRecord(
                                p["task_id"],
                                p["cycle"],
                                p["state"],
                                p["actions"][c.get("slot", c["index"])],
                                Prediction.from_json(c["prediction"]),
                            )
                        )
            elif e.kind == "predictor_proposed":
                self.state.note_version(e.payload, e.cycle or 0)
            elif e.kind == "gate_execution":
                self.state.gate_cache[e.payload["key"]] = Observation.from_json(e.payload["observation"])
        for pr in self.state.history:
            if pr.split == "gate":
                self.state.gate_cache.setdefault(
                    self.state.gate_key(pr.task_id, pr.state, pr.action), pr.observation
                )
        if cut:
            self.state.records.append(
                "cycle_attempt_discarded",
                {"cycle": done_k + 1, "events": len(cut), "last_kind": cut[-1].kind},
            )

    def _learn_and_retain(self, k: int) -> dict[str, Any]:
        """Learn on update data (eq. 9–12), then gate, assemble and retain a pair (eq. 13–18)."""
        upd = self.state.update_records(k)
        self.state.assert_disjoint_data(upd, k)
        u_pi, proposed_policy = self.parts.learning.policy_path(k, upd)
        verdict, u_w, proposed_predictor = self.parts.learning.predictor_path(k, upd)
        gates = self.parts.retention.gate_and_retain(k, u_pi, proposed_policy, u_w, proposed_predictor)
        return {
            "reliability": verdict,
            "adaptation_triggered": u_w,
            "policy_update_triggered": u_pi,
            "gates": gates,
        }

    def active_tasks(self) -> list[str]:
        return [t for t in self.state.spec.tasks if t not in self.state.done]

    def run(self, n: int | None = None) -> list[CycleReport]:
        """Step until the loop is finished or ``n`` cycles have run; returns their reports."""
        out: list[CycleReport] = []
        while not self.state.finished and (n is None or len(out) < n):
            out.append(self.step())
        return out

    def step(self) -> CycleReport:
        """Run exactly one cycle k: a feedback round over every unfinished task, then learn and retain."""
        if self.state.finished:
            raise RuntimeError("the loop is finished; nothing left to step")
        k = self.state.k + 1
        ext0, upd0 = (
            self.state.ledger.spent.get(EXTERNAL_FEEDBACK, 0.0),
            self.state.ledger.spent.get(UPDATE_COMPUTE, 0.0),
        )
        self.state.records.append(
            "cycle_started",
            {
                "cycle": k,
                "policy_version": self.state.policy.version,
                "predictor_version": self.state.predictor.version if self.state.predictor else None,
            },
            cycle=k,
        )
        states = dict(self.state.states)
        done = dict(self.state.done)
        counts = {"executed": 0, "refused": 0}
        # cycle 1 opens with every task's initial observation; then the feedback rounds of the
        # active tasks, sequential or phased: the same records
        active = self.parts.feedback.cycle_rounds(k, states, done, counts)
        learn = self._learn_and_retain(k)
        self.state.states, self.state.done = states, done
        finished = k >= self.max_rounds or not self.active_tasks()
        if finished:
            for t, audit in zip(self.state.spec.tasks, self.parts.feedback.final_audits(states), strict=True):
                self.state.records.append(
                    "final_audit",
                    {
                        "task_id": t,
                        "split": self.state.split_of[t],
                        "stop": done.get(t, "max_rounds"),
                        **audit,
                        "metrics_only": True,
                    },
                    cycle=k,
                )
        snap = {
            "cycle": k,
            "states": {t: self.state.env.dump_state(s) for t, s in states.items()},
            "done": done,
            "finished": finished,
            "policy_artifact": self.state.policy_sha,
            "predictor_artifact": self.state.predictor_sha,
        }
        snap_ref = self.state.snapshots.store(snap, k)
        rep = CycleReport(
            cycle=k,
            active=len(active),
            executed=counts["executed"],
            solved=sum(1 for r in done.values() if r == "solved"),
            refused=counts["refused"],
            external_spent=self.state.ledger.spent.get(EXTERNAL_FEEDBACK, 0.0) - ext0,
            update_spent=self.state.ledger.spent.get(UPDATE_COMPUTE, 0.0) - upd0,
            policy_version=self.state.policy.version,
            predictor_version=self.state.predictor.version if self.state.predictor else None,
            finished=finished,
            **learn,
        )
        self.state.records.append("cycle_finished", {**snap_ref, "report": asdict(rep)}, cycle=k)
        self.state.records.commit()
        self.state.k, self.state.finished = k, finished
        return rep
