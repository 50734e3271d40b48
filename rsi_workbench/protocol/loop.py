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

from dataclasses import asdict, dataclass, field
from typing import Any

from rsi_workbench.budget import EXTERNAL_FEEDBACK, UPDATE_COMPUTE, BudgetLedger
from rsi_workbench.plugins import object_path
from rsi_workbench.protocol.concurrent import CycleExecution
from rsi_workbench.protocol.learning import Learning
from rsi_workbench.protocol.retention import Retention
from rsi_workbench.protocol.selection import SelectionRule, resolve_rule, rule_provenance
from rsi_workbench.protocol.settings import GateSettings, ProtocolSettings
from rsi_workbench.protocol.snapshot import restore as restore_snapshot
from rsi_workbench.protocol.spec import (
    ImaginedRecord,
    Observation,
    PairRecord,
    Prediction,
    TaskSpec,
)
from rsi_workbench.protocol.state import ProposalGroup
from rsi_workbench.records import Event, Run

__all__ = ["CycleReport", "GateSettings", "Loop", "ProtocolSettings", "effective_events"]


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


class Loop(CycleExecution, Learning, Retention):
    """The retained-pair protocol over one task batch; construct with :meth:`open`."""

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
    ) -> Loop:
        """Start a new loop on ``run`` or resume it from its events.

        ``rule``: the selection rule as an object (or a name / import path), instead of
        ``settings.rule``. ``loop_opened`` records what was used (``components``: the import path of
        the environment, policy, predictor, verifier and rule classes); a resume with another rule
        class is refused.
        """
        loop = cls(spec, run, settings, seed, progress)
        if rule is not None:
            loop.rule = resolve_rule(rule)
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
            "splits": loop.splits,
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
            loop._store_components(spec.policy, spec.predictor)
            run.append(
                "loop_opened",
                {
                    **header,
                    "policy_version": loop.policy.version,
                    "predictor_version": loop.predictor.version if loop.predictor else None,
                    "policy_artifact": loop.policy_sha,
                    "predictor_artifact": loop.predictor_sha,
                },
            )
            loop.ledger = BudgetLedger.open(run, spec.budgets)
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
        budgets = {k: float(v) for k, v in self.spec.budgets.items()}
        self.ledger = BudgetLedger(budgets, run=self.records)
        for e in evs:
            if e.kind == "budget_spent":
                self.ledger.spent[e.payload["budget"]] += float(e.payload["amount"])
        finished = [e for e in evs if e.kind == "cycle_finished"]
        pol_sha, pred_sha = opened.payload["policy_artifact"], opened.payload["predictor_artifact"]
        if finished:
            snap, self.snapshots = restore_snapshot(self.records.artifacts, finished)
            self.k = snap["cycle"]
            self.states = {t: self.env.load_state(s) for t, s in snap["states"].items()}
            self.done = dict(snap["done"])
            self.finished = bool(snap["finished"])
            pol_sha, pred_sha = snap["policy_artifact"], snap["predictor_artifact"]
        self._load_components(pol_sha, pred_sha)
        for e in evs:
            if e.kind == "observation":
                self.history.append(PairRecord.from_json(e.payload["pair"]))
            elif e.kind == "proposal":
                p = e.payload
                self.groups.append(
                    ProposalGroup(p["task_id"], p["cycle"], p["state"], p["signature"], p["actions"])
                )
                for c in p["candidates"]:
                    if c.get("admitted"):
                        self.imagined.append(
                            ImaginedRecord(
                                p["task_id"],
                                p["cycle"],
                                p["state"],
                                p["actions"][c.get("slot", c["index"])],
                                Prediction.from_json(c["prediction"]),
                            )
                        )
            elif e.kind == "predictor_proposed":
                self.note_version(e.payload, e.cycle or 0)
            elif e.kind == "gate_execution":
                self.gate_cache[e.payload["key"]] = Observation.from_json(e.payload["observation"])
        for pr in self.history:
            if pr.split == "gate":
                self.gate_cache.setdefault(self._gate_key(pr.task_id, pr.state, pr.action), pr.observation)
        if cut:
            self.records.append(
                "cycle_attempt_discarded",
                {"cycle": done_k + 1, "events": len(cut), "last_kind": cut[-1].kind},
            )

    def _learn_and_retain(self, k: int) -> dict[str, Any]:
        """Learn on update data (eq. 9–12), then gate, assemble and retain a pair (eq. 13–18)."""
        upd = self._update_records(k)
        self._assert_disjoint_data(upd, k)
        u_pi, proposed_policy = self._policy_path(k, upd)
        verdict, u_w, proposed_predictor = self._predictor_path(k, upd)
        gates = self._gate_and_retain(k, u_pi, proposed_policy, u_w, proposed_predictor)
        return {
            "reliability": verdict,
            "adaptation_triggered": u_w,
            "policy_update_triggered": u_pi,
            "gates": gates,
        }

    def active_tasks(self) -> list[str]:
        return [t for t in self.spec.tasks if t not in self.done]

    def run(self, n: int | None = None) -> list[CycleReport]:
        """Step until the loop is finished or ``n`` cycles have run; returns their reports."""
        out: list[CycleReport] = []
        while not self.finished and (n is None or len(out) < n):
            out.append(self.step())
        return out

    def step(self) -> CycleReport:
        """Run exactly one cycle k: a feedback round over every unfinished task, then learn and retain."""
        if self.finished:
            raise RuntimeError("the loop is finished; nothing left to step")
        k = self.k + 1
        ext0, upd0 = self.ledger.spent.get(EXTERNAL_FEEDBACK, 0.0), self.ledger.spent.get(UPDATE_COMPUTE, 0.0)
        self.records.append(
            "cycle_started",
            {
                "cycle": k,
                "policy_version": self.policy.version,
                "predictor_version": self.predictor.version if self.predictor else None,
            },
            cycle=k,
        )
        states = dict(self.states)
        done = dict(self.done)
        counts = {"executed": 0, "refused": 0}
        # cycle 1 opens with every task's initial observation; then the feedback rounds of the
        # active tasks, sequential or phased: the same records
        active = self._cycle_rounds(k, states, done, counts)
        learn = self._learn_and_retain(k)
        self.states, self.done = states, done
        finished = k >= self.settings.max_rounds or not self.active_tasks()
        if finished:
            for t, audit in zip(self.spec.tasks, self._final_audits(states), strict=True):
                self.records.append(
                    "final_audit",
                    {
                        "task_id": t,
                        "split": self.split_of[t],
                        "stop": done.get(t, "max_rounds"),
                        **audit,
                        "metrics_only": True,
                    },
                    cycle=k,
                )
        snap = {
            "cycle": k,
            "states": {t: self.env.dump_state(s) for t, s in states.items()},
            "done": done,
            "finished": finished,
            "policy_artifact": self.policy_sha,
            "predictor_artifact": self.predictor_sha,
        }
        snap_ref = self.snapshots.store(snap, k)
        rep = CycleReport(
            cycle=k,
            active=len(active),
            executed=counts["executed"],
            solved=sum(1 for r in done.values() if r == "solved"),
            refused=counts["refused"],
            external_spent=self.ledger.spent.get(EXTERNAL_FEEDBACK, 0.0) - ext0,
            update_spent=self.ledger.spent.get(UPDATE_COMPUTE, 0.0) - upd0,
            policy_version=self.policy.version,
            predictor_version=self.predictor.version if self.predictor else None,
            finished=finished,
            **learn,
        )
        self.records.append("cycle_finished", {**snap_ref, "report": asdict(rep)}, cycle=k)
        self.records.commit()
        self.k, self.finished = k, finished
        return rep
