"""The six-step cycle propose → predict → select → evaluate → learn → retain, as a resumable loop.

One **run** = one (method, seed) over a task batch; one **cycle** k = one feedback round over every
unfinished task, followed by the learn and retain decisions. ``Loop.step()`` runs exactly one cycle
and returns a :class:`CycleReport`; ``Loop.run(n)`` runs up to ``n``. Every step is appended as
events; at the end of a cycle the loop stores a snapshot artifact (task states, component
artifacts) and commits. Re-opening a run replays its events: the events of a cycle that was cut
off (SIGKILL mid-cycle) are superseded by the rerun of that cycle (:func:`effective_events`), so a
killed-and-resumed run yields the same effective records as an uninterrupted one for the same seed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from pydantic import Field, model_validator

from rsi_workbench.budget import EXTERNAL_FEEDBACK, UPDATE_COMPUTE, BudgetExceeded, BudgetLedger
from rsi_workbench.config import StrictModel
from rsi_workbench.protocol.decisions import (
    RULES,
    AdaptationCriteria,
    AdmissionCriteria,
    GateDecision,
    PairGateCriteria,
    PolicyGateCriteria,
    PolicyUpdateCriteria,
    PredictorGateCriteria,
    RegressionReliabilityCriteria,
    ReliabilityCriteria,
    ScoredCandidate,
    UtilitySpec,
    adaptation_trigger,
    admit_imagined,
    assemble,
    assert_disjoint,
    derive_rng,
    derive_seed,
    initial_design_select,
    observation_split,
    pair_gate,
    pair_gate_skipped,
    policy_gate,
    policy_trigger,
    predictor_gate,
    regression_reliability,
    reliability,
    retain,
    select,
    split_tasks,
    utility,
)
from rsi_workbench.protocol.metrics import METRICS_VERSION, brier, gaussian_nll, ranking_accuracy
from rsi_workbench.protocol.spec import (
    ImaginedRecord,
    Observation,
    PairRecord,
    Policy,
    Prediction,
    Predictor,
    TaskSpec,
)
from rsi_workbench.records import Event, Run


class GateSettings(StrictModel):
    policy: PolicyGateCriteria = Field(default_factory=PolicyGateCriteria)
    predictor: PredictorGateCriteria = Field(default_factory=PredictorGateCriteria)
    pair: PairGateCriteria = Field(default_factory=PairGateCriteria)


class ProtocolSettings(StrictModel):
    """Everything the loop's decisions read: constraints C_d, rules and declared thresholds."""

    k: int = Field(default=4, ge=1, description="candidates proposed per task per round")
    max_rounds: int = Field(default=3, ge=1, description="feedback rounds (cycles) per run")
    batch_size: int = Field(default=1, ge=1, description="candidates executed per task per round")
    rule: Literal["utility_argmax", "random_k", "info_gain"] = "utility_argmax"
    utility: UtilitySpec = Field(default_factory=UtilitySpec)
    admission: AdmissionCriteria = Field(default_factory=AdmissionCriteria)
    reliability: ReliabilityCriteria = Field(default_factory=ReliabilityCriteria)
    adaptation: AdaptationCriteria = Field(default_factory=AdaptationCriteria)
    policy_update: PolicyUpdateCriteria = Field(default_factory=PolicyUpdateCriteria)
    gates: GateSettings = Field(default_factory=GateSettings)
    gate_fraction: float = Field(
        default=0.3, ge=0.0, lt=1.0, description="share of tasks whose feedback is gate data"
    )
    gate_execution_cost: float = Field(
        default=1.0, ge=0.0, description="update-compute units per gate execution"
    )
    audit: bool = Field(
        default=True, description="execute every candidate offline on all tests (metrics only)"
    )
    rescore_history: bool = Field(
        default=False,
        description="re-score past inputs with the current predictor when reliability lacks its own predictions",
    )
    rescore_cost: float = Field(
        default=0.01, ge=0.0, description="update-compute units per re-scored record or gate prediction"
    )
    readout: Literal["classes", "gaussian"] = Field(
        default="classes",
        description="classes: per-unit class probabilities (Brier/ECE); gaussian: a [mean, std] per utility term",
    )
    regression_reliability: RegressionReliabilityCriteria = Field(
        default_factory=RegressionReliabilityCriteria,
        description="reliability criteria of a gaussian readout",
    )
    gate_data: Literal["tasks", "held_out_observations"] = Field(
        default="tasks",
        description=(
            "tasks: gate data is the feedback on a held-out share of tasks (gates may execute their "
            "candidates); held_out_observations: a held-out share of every task's own rounds "
            "(observation_split), gates only re-predict recorded observations and execute nothing"
        ),
    )
    initial_design: int = Field(
        default=0, ge=0, description="the first N cycles select uniformly at random (same for every method)"
    )
    record_candidates: int | None = Field(
        default=None,
        ge=1,
        description="record only this many best-ranked candidates (plus the selected) per proposal event",
    )
    metrics_version: Literal[1, 2] = Field(
        default=METRICS_VERSION,
        description="ECE-bin and ranking-tie rules of rsi_workbench.metrics (1: as recorded before versioning)",
    )

    @model_validator(mode="before")
    @classmethod
    def _score_follows_readout(cls, data: Any) -> Any:
        """A gaussian readout gates on Gaussian NLL unless a gate's score is set explicitly."""
        if isinstance(data, dict) and data.get("readout") == "gaussian":
            data = dict(data)
            gates = dict(data.get("gates") or {})
            for g in ("predictor", "pair"):
                sec = gates.get(g)
                sec = dict(sec) if isinstance(sec, dict) else ({} if sec is None else sec)
                if isinstance(sec, dict):
                    sec.setdefault("score", "gaussian_nll")
                gates[g] = sec
            data["gates"] = gates
        return data

    @model_validator(mode="after")
    def _check_modes(self) -> ProtocolSettings:
        if self.gate_data == "held_out_observations" and self.policy_update.enabled:
            raise ValueError(
                "policy_update.enabled needs gate executions of new proposals; "
                "gate_data: held_out_observations supports predictor updates only"
            )
        return self


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


def _sha(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclass
class _Group:
    """One proposal group: the candidates of one task at one state (gate data, audit, D_sim)."""

    task_id: str
    cycle: int
    state: dict[str, Any]
    signature: str
    actions: list[dict[str, Any]]


class Loop:
    """The retained-pair protocol over one task batch; construct with :meth:`open`."""

    def __init__(
        self, spec: TaskSpec, run: Run, settings: ProtocolSettings, seed: int, progress: bool = False
    ):
        self.spec, self.records, self.settings, self.seed, self.progress = spec, run, settings, seed, progress
        self.env = spec.environment
        self.rule = RULES[settings.rule]()
        self.held_out = settings.gate_data == "held_out_observations"
        if self.held_out:  # every task is split by rounds instead (observation_split)
            self.splits = {"update": list(spec.tasks), "gate": []}
        else:
            self.splits = split_tasks(list(spec.tasks), settings.gate_fraction, seed)
        self.split_of = {t: s for s, ts in self.splits.items() for t in ts}
        # the audit set is the metrics-only hidden outcomes: keyed by (task, "audit") it can never
        # coincide with update/gate feedback keys, and the assertion keeps it that way.
        if not self.held_out:
            assert_disjoint(
                update=[(t, "feedback") for t in self.splits["update"]],
                gate=[(t, "feedback") for t in self.splits["gate"]],
                audit=[(t, "audit") for t in spec.tasks],
            )
        self.k = 0
        self.states: dict[str, Any] = {}
        self.done: dict[str, str] = {}
        self.history: list[PairRecord] = []
        self.groups: list[_Group] = []
        self.imagined: list[ImaginedRecord] = []
        self.gate_cache: dict[str, Observation] = {}
        self.policy: Policy = spec.policy
        self.predictor: Predictor | None = spec.predictor
        self.policy_sha = ""
        self.predictor_sha: str | None = None
        self.finished = False
        self.ledger: BudgetLedger

    def split(self, t: str, k: int) -> str:
        """The split ("update" | "gate") of task ``t``'s feedback in cycle ``k``."""
        return observation_split(k, self.settings.gate_fraction) if self.held_out else self.split_of[t]

    def units(self, t: str, pred: Prediction, obs: Observation) -> list[tuple[Any, ...]]:
        """Scored units of one prediction–observation pair: (task, version, probs, label) for a class
        readout, (task, version, mean, std, y) per utility term for a gaussian one."""
        if self.settings.readout == "gaussian":
            return [
                (t, pred.version, float(ms[0]), float(ms[1]), float(obs.utility_terms[term]))
                for term, ms in pred.gaussian.items()
                if term in obs.utility_terms
            ]
        return [(t, pred.version, pr, lab) for pr, lab in zip(pred.probs, obs.labels, strict=False)]

    def score(self, units: Sequence[tuple[Any, ...]]) -> float | None:
        """The readout's proper score over units (5-class Brier, or Gaussian NLL)."""
        if self.settings.readout == "gaussian":
            return gaussian_nll([(u[2], u[3], u[4]) for u in units])
        return brier([u[2] for u in units], [u[3] for u in units])

    @property
    def score_name(self) -> str:
        return "gaussian_nll" if self.settings.readout == "gaussian" else "brier"

    # -- construction / resume ----------------------------------------------------------------
    @classmethod
    def open(
        cls, spec: TaskSpec, run: Run, settings: ProtocolSettings, *, seed: int, progress: bool = False
    ) -> Loop:
        """Start a new loop on ``run`` or resume it from its events."""
        loop = cls(spec, run, settings, seed, progress)
        evs = effective_events(run)
        opened = [e for e in evs if e.kind == "loop_opened"]
        header = {
            "spec": spec.name,
            "seed": seed,
            "tasks": list(spec.tasks),
            "settings": settings.model_dump(mode="json"),
            "splits": loop.splits,
            "budgets": spec.budgets,
        }
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
            snap = self.records.artifacts.get_json(finished[-1].payload["snapshot"])
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
                self.groups.append(_Group(p["task_id"], p["cycle"], p["state"], p["signature"], p["actions"]))
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

    def _store_components(self, policy: Policy, predictor: Predictor | None) -> None:
        """Store components as artifacts and reload them, so fresh and resumed runs use identical objects."""
        self.policy_sha = self.records.artifacts.put(policy.to_bytes(), name=f"policy-{policy.version}")
        self.predictor_sha = (
            self.records.artifacts.put(predictor.to_bytes(), name=f"predictor-{predictor.version}")
            if predictor
            else None
        )
        self._load_components(self.policy_sha, self.predictor_sha)

    def _load_components(self, pol_sha: str, pred_sha: str | None) -> None:
        self.policy_sha, self.predictor_sha = pol_sha, pred_sha
        self.policy = self.spec.load_policy(self.records.artifacts.get(pol_sha))
        if pred_sha is not None:
            if self.spec.load_predictor is None:
                raise ValueError("the task spec has a predictor but no load_predictor")
            self.predictor = self.spec.load_predictor(self.records.artifacts.get(pred_sha))
        else:
            self.predictor = None

    # -- the cycle ------------------------------------------------------------------------------
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
        if k == 1:
            for t in self.spec.tasks:
                self._initial(t, k, states, done)
        active = [t for t in self.spec.tasks if t not in done]
        counts = {"executed": 0, "refused": 0}
        it: Sequence[str] = active
        if self.progress:
            from tqdm.auto import tqdm

            it = tqdm(active, desc=f"cycle {k}: feedback round", unit="task", leave=False)
        for t in it:
            self._feedback_round(t, k, states, done, counts)
        learn = self._learn_and_retain(k)
        self.states, self.done = states, done
        finished = k >= self.settings.max_rounds or not self.active_tasks()
        if finished:
            for t in self.spec.tasks:
                self.records.append(
                    "final_audit",
                    {
                        "task_id": t,
                        "split": self.split_of[t],
                        "stop": done.get(t, "max_rounds"),
                        **self.env.final_audit(t, states[t]),
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
        sha = self.records.artifacts.put_json(snap, name=f"snapshot-cycle{k}.json")
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
        self.records.append("cycle_finished", {"snapshot": sha, "report": asdict(rep)}, cycle=k)
        self.records.commit()
        self.k, self.finished = k, finished
        return rep

    def _initial(self, t: str, k: int, states: dict[str, Any], done: dict[str, str]) -> None:
        state, obs = self.env.initial(t)
        self.ledger.spend(
            EXTERNAL_FEEDBACK, obs.cost, reason="online test call (initial program)", cycle=k, task_id=t
        )
        self.records.append(
            "initial_observation",
            {
                "task_id": t,
                "split": self.split(t, k),
                "signature": self.env.signature(t, state),
                "observation": obs.to_json(),
            },
            cycle=k,
        )
        states[t] = state
        if obs.solved:
            done[t] = "solved"

    def _feedback_round(
        self, t: str, k: int, states: dict[str, Any], done: dict[str, str], counts: dict[str, int]
    ) -> None:
        s = self.settings
        split = self.split(t, k)
        state = states[t]
        state_json = self.env.dump_state(state)
        sig = self.env.signature(t, state)
        actions = self.policy.propose(t, state, s.k, derive_rng(self.seed, "propose", k, t))
        validity = [self.spec.verifier.validate(t, state, a) for a in actions]
        valid_idx = [i for i, (ok, _) in enumerate(validity) if ok]
        preds: dict[int, Prediction] = {}
        if self.predictor is not None and valid_idx:
            predicted = self.predictor.predict(t, state, [actions[i] for i in valid_idx])
            preds = dict(zip(valid_idx, predicted, strict=True))
        scored: list[ScoredCandidate] = []
        utils: dict[int, float | None] = {}
        for i, (ok, why) in enumerate(validity):
            pi = preds.get(i)
            utils[i] = utility(pi.utility_terms, s.utility, pi.uncertainty) if pi else None
            scored.append(ScoredCandidate(i, ok, why, utils[i], pi.uncertainty if pi else None, 1.0))
        budget = self.ledger.remaining(EXTERNAL_FEEDBACK)
        if k <= s.initial_design:
            dec = initial_design_select(
                scored, seed=self.seed, cycle=k, task_id=t, budget_remaining=budget, batch_size=s.batch_size
            )
        else:
            dec = select(
                scored,
                self.rule,
                budget_remaining=budget,
                rng=derive_rng(self.seed, "select", k, t),
                batch_size=s.batch_size,
            )
        # which candidates the records keep: all of them, or the best-ranked few plus the selected
        recorded = list(range(len(actions)))
        if s.record_candidates is not None and len(actions) > s.record_candidates:
            keep = set(dec.order[: s.record_candidates]) | set(dec.selected)
            recorded = sorted(keep)
        slot = {i: n for n, i in enumerate(recorded)}
        action_json = [self.env.dump_action(actions[i]) for i in recorded]
        cands: list[dict[str, Any]] = []
        admitted: list[int] = []
        for i in recorded:
            ok, why = validity[i]
            pi = preds.get(i)
            adm = admit_imagined(
                ok, utils[i], pi.uncertainty if pi else None, pi.evidence if pi else "none", s.admission
            )
            if adm.admitted and split == "update":
                admitted.append(i)
            cands.append(
                {
                    "index": i,
                    "slot": slot[i],
                    "valid": ok,
                    "reason": why,
                    "utility": utils[i],
                    "prediction": pi.to_json() if pi else None,
                    "admitted": adm.admitted and split == "update",
                    "admission": adm.to_event(),
                }
            )
        self.records.append(
            "proposal",
            {
                "task_id": t,
                "cycle": k,
                "split": split,
                "signature": sig,
                "state": state_json,
                "actions": action_json,
                "candidates": cands,
                "n_candidates": len(actions),
                "n_recorded": len(recorded),
                "policy_version": self.policy.version,
            },
            cycle=k,
        )
        self.groups.append(_Group(t, k, state_json, sig, action_json))
        for i in admitted:
            self.imagined.append(ImaginedRecord(t, k, state_json, action_json[slot[i]], preds[i]))
        sel_event = dec.to_event()
        if len(recorded) < len(actions):
            sel_event["candidates"] = [c for c in sel_event["candidates"] if c["index"] in slot]
            sel_event["order"] = [i for i in sel_event["order"] if i in slot]
            sel_event["n_candidates"] = len(actions)
        if k <= s.initial_design:
            sel_event["initial_design"] = True
        self.records.append("selection", {"task_id": t, **sel_event}, cycle=k)
        if dec.outcome != "selected":
            counts["refused"] += 1
            done[t] = dec.outcome
            return
        for i in dec.selected:
            obs = self.env.evaluate(t, state, actions[i])
            self.ledger.spend(EXTERNAL_FEEDBACK, obs.cost, reason="online test call", cycle=k, task_id=t)
            pair = PairRecord(
                t,
                k,
                state_json,
                action_json[slot[i]],
                preds.get(i),
                obs,
                self.policy.version,
                self.predictor.version if self.predictor else None,
                split,
            )
            self.history.append(pair)
            if pair.split == "gate" and not self.held_out:
                self.gate_cache.setdefault(self._gate_key(t, state_json, action_json[slot[i]]), obs)
            self.records.append("observation", {"task_id": t, "index": i, "pair": pair.to_json()}, cycle=k)
            counts["executed"] += 1
            state = self.env.advance(t, state, actions[i], obs)
            if obs.solved:
                done[t] = "solved"
                break
        states[t] = state
        if t not in done and k >= s.max_rounds:
            done[t] = "max_rounds"
        if s.audit:
            outs = self.env.audit(t, self.env.load_state(state_json), actions)
            self.records.append(
                "audit",
                {"task_id": t, "split": split, "metrics_only": True, "outcomes": outs},
                cycle=k,
            )

    # -- learn and retain ---------------------------------------------------------------------
    def _gate_key(self, t: str, state: dict[str, Any], action: dict[str, Any]) -> str:
        return _sha([t, self.env.signature(t, self.env.load_state(state)), action])

    def _gate_observe(self, t: str, state_json: dict[str, Any], action: Any, k: int) -> Observation:
        """Gate-data execution (E0), charged to update compute, cached by (task, signature, action)."""
        aj = self.env.dump_action(action)
        key = self._gate_key(t, state_json, aj)
        if key not in self.gate_cache:
            self.ledger.spend(
                UPDATE_COMPUTE, self.settings.gate_execution_cost, reason="gate execution", cycle=k, task_id=t
            )
            obs = self.env.evaluate(t, self.env.load_state(state_json), action)
            self.gate_cache[key] = obs
            self.records.append(
                "gate_execution", {"task_id": t, "key": key, "observation": obs.to_json()}, cycle=k
            )
        return self.gate_cache[key]

    def _observed_utility(self, obs: Observation) -> float:
        return utility(obs.utility_terms, self.settings.utility)

    def _predictor_metrics(self, predictor: Predictor, k: int) -> tuple[dict[str, float | None], int]:
        """Proper score and ranking accuracy of ``predictor`` on gate groups (candidates of gate tasks),
        or on the held-out observations when ``gate_data`` is ``held_out_observations``."""
        if self.held_out:
            return self._held_out_metrics(predictor, k)
        probs: list[list[float]] = []
        labels: list[int] = []
        groups = []
        for g in (g for g in self.groups if self.split_of[g.task_id] == "gate" and g.actions):
            state = self.env.load_state(g.state)
            acts = [self.env.load_action(a) for a in g.actions]
            preds = predictor.predict(g.task_id, state, acts)
            grp = []
            for a, p in zip(acts, preds, strict=True):
                obs = self._gate_observe(g.task_id, g.state, a, k)
                probs.extend(p.probs)
                labels.extend(obs.labels)
                grp.append(
                    (
                        utility(p.utility_terms, self.settings.utility, p.uncertainty),
                        self._observed_utility(obs),
                    )
                )
            groups.append(grp)
        ra = ranking_accuracy(groups, version=self.settings.metrics_version)
        return {"brier": brier(probs, labels), "ranking_accuracy": ra}, len(groups)

    def _held_out(self) -> list[PairRecord]:
        return [p for p in self.history if p.split == "gate"]

    def _held_out_predictions(self, predictor: Predictor, k: int) -> list[tuple[PairRecord, Prediction]]:
        """``predictor``'s predictions on every held-out observation's recorded (state, action),
        charged to update compute (``rescore_cost`` each); nothing is executed."""
        recs = self._held_out()
        if recs:
            self.ledger.spend(
                UPDATE_COMPUTE, self.settings.rescore_cost * len(recs), reason="gate evaluation", cycle=k
            )
        return [
            (
                p,
                predictor.predict(p.task_id, self.env.load_state(p.state), [self.env.load_action(p.action)])[
                    0
                ],
            )
            for p in recs
        ]

    def _held_out_metrics(self, predictor: Predictor, k: int) -> tuple[dict[str, float | None], int]:
        pairs = self._held_out_predictions(predictor, k)
        units = [u for p, pred in pairs for u in self.units(p.task_id, pred, p.observation)]
        by_task: dict[str, list[tuple[float, float]]] = {}
        for p, pred in pairs:
            by_task.setdefault(p.task_id, []).append(
                (
                    utility(pred.utility_terms, self.settings.utility, pred.uncertainty),
                    self._observed_utility(p.observation),
                )
            )
        return {
            self.score_name: self.score(units),
            "ranking_accuracy": ranking_accuracy(
                list(by_task.values()), version=self.settings.metrics_version
            ),
        }, len(pairs)

    def _held_out_pair_metrics(
        self, predictor: Predictor | None, k: int
    ) -> tuple[dict[str, float | None], list[str]]:
        """A pair's decisions on the held-out observations: per task, the observed utility of the
        held-out condition the pair's selection rule ranks first, plus the predictor's score."""
        recs = self._held_out()
        sigs = [self.env.signature(p.task_id, self.env.load_state(p.state)) for p in recs]
        pairs = self._held_out_predictions(predictor, k) if predictor is not None else []
        utils, units = [], []
        for t in dict.fromkeys(p.task_id for p in recs):
            mine = [(i, p) for i, p in enumerate(recs) if p.task_id == t]
            if pairs:
                scored = []
                for i, p in mine:
                    pred = pairs[i][1]
                    units += self.units(t, pred, p.observation)
                    u = utility(pred.utility_terms, self.settings.utility, pred.uncertainty)
                    scored.append(ScoredCandidate(i, True, "", u, pred.uncertainty))
            else:
                scored = [ScoredCandidate(i, True) for i, _ in mine]
            dec = select(
                scored, self.rule, budget_remaining=float("inf"), rng=derive_rng(self.seed, "select", k, t)
            )
            utils.append(self._observed_utility(recs[dec.selected[0]].observation) if dec.selected else 0.0)
        return {
            "utility": sum(utils) / len(utils) if utils else None,
            self.score_name: self.score(units),
        }, sigs

    def _gate_units(self, k: int) -> list[_Group]:
        return [g for g in self.groups if g.cycle == k and self.split_of[g.task_id] == "gate" and g.actions]

    def _policy_utility(self, policy: Policy, k: int) -> tuple[dict[str, float | None], int]:
        units = self._gate_units(k)
        best = []
        for g in units:
            state = self.env.load_state(g.state)
            acts = policy.propose(
                g.task_id, state, self.settings.k, derive_rng(self.seed, "propose", k, g.task_id)
            )
            best.append(
                max(
                    (self._observed_utility(self._gate_observe(g.task_id, g.state, a, k)) for a in acts),
                    default=0.0,
                )
            )
        return {"utility": sum(best) / len(best) if best else None}, len(units)

    def _pair_metrics(
        self, policy: Policy, predictor: Predictor | None, k: int
    ) -> tuple[dict[str, float | None], list[str]]:
        """Decision utility and predictor fit of one (θ, φ) pair on the compatibility units of cycle k."""
        if self.held_out:
            return self._held_out_pair_metrics(predictor, k)
        utils, probs, labels, sigs = [], [], [], []
        for g in self._gate_units(k):
            state = self.env.load_state(g.state)
            sigs.append(self.env.signature(g.task_id, state))
            acts = policy.propose(
                g.task_id, state, self.settings.k, derive_rng(self.seed, "propose", k, g.task_id)
            )
            obs = [self._gate_observe(g.task_id, g.state, a, k) for a in acts]
            preds = predictor.predict(g.task_id, state, acts) if predictor else []
            if preds:
                scored = [
                    ScoredCandidate(
                        i,
                        True,
                        "",
                        utility(p.utility_terms, self.settings.utility, p.uncertainty),
                        p.uncertainty,
                    )
                    for i, p in enumerate(preds)
                ]
            else:
                scored = [ScoredCandidate(i, True) for i in range(len(acts))]
            dec = select(
                scored,
                self.rule,
                budget_remaining=float("inf"),
                rng=derive_rng(self.seed, "select", k, g.task_id),
            )
            utils.append(self._observed_utility(obs[dec.selected[0]]) if dec.selected else 0.0)
            for p, o in zip(preds, obs, strict=False):
                probs.extend(p.probs)
                labels.extend(o.labels)
        return {"utility": sum(utils) / len(utils) if utils else None, "brier": brier(probs, labels)}, sigs

    def _rescore(self, records: Sequence[PairRecord], k: int) -> list[tuple[Any, ...]]:
        """Predictions of the current version recomputed on recorded inputs (eq. 10's attribution),
        charged to update compute; skipped when the budget cannot cover it."""
        assert self.predictor is not None
        v = self.predictor.version
        stale = [p for p in records if p.prediction is None or p.prediction.version != v]
        cost = self.settings.rescore_cost * len(stale)
        if not stale or not self.ledger.can_spend(UPDATE_COMPUTE, cost):
            return []
        self.ledger.spend(UPDATE_COMPUTE, cost, reason="history re-scoring", cycle=k)
        out = []
        for p in stale:
            pred = self.predictor.predict(
                p.task_id, self.env.load_state(p.state), [self.env.load_action(p.action)]
            )[0]
            out += self.units(p.task_id, pred, p.observation)
        self.records.append(
            "history_rescored", {"version": v, "records": len(stale), "units": len(out)}, cycle=k
        )
        return out

    def _learn_and_retain(self, k: int) -> dict[str, Any]:
        s = self.settings
        upd = [p for p in self.history if p.split == "update"]
        # the update, gate and audit data are disjoint by task and use; asserted every cycle
        if self.held_out:
            assert_disjoint(
                update={(p.task_id, p.cycle, _sha(p.action)) for p in upd},
                gate={(p.task_id, p.cycle, _sha(p.action)) for p in self._held_out()},
                audit={(t, "audit", "") for t in self.spec.tasks},
            )
        else:
            assert_disjoint(
                update={(p.task_id, "feedback") for p in upd},
                gate={(g.task_id, "feedback") for g in self.groups if self.split_of[g.task_id] == "gate"},
                audit={(t, "audit") for t in self.spec.tasks},
            )
        out: dict[str, Any] = {
            "reliability": None,
            "adaptation_triggered": False,
            "policy_update_triggered": False,
        }
        # policy path (eq. 9)
        pt = policy_trigger(len(upd), self.ledger.remaining(UPDATE_COMPUTE), s.policy_update)
        self.records.append("policy_trigger", pt.to_event(), cycle=k)
        proposed_policy: Policy | None = None
        if pt.triggered:
            self.ledger.spend(UPDATE_COMPUTE, s.policy_update.cost, reason="policy update", cycle=k)
            sim = [r for r in self.imagined if self.split_of[r.task_id] == "update"]
            proposed_policy = self.policy.update(upd, sim, seed=derive_seed(self.seed, "policy_update", k))
            self.records.append(
                "policy_proposed",
                {
                    "from": self.policy.version,
                    "to": proposed_policy.version,
                    "records": len(upd),
                    "imagined": len(sim),
                },
                cycle=k,
            )
        out["policy_update_triggered"] = pt.triggered
        # predictor path (eq. 10–12)
        proposed_predictor: Predictor | None = None
        trig_on = False
        if self.predictor is not None:
            units = [
                u
                for p in upd
                if p.prediction is not None
                for u in self.units(p.task_id, p.prediction, p.observation)
            ]
            if s.rescore_history:
                units += self._rescore(upd, k)
            if s.readout == "gaussian":
                verdict = regression_reliability(units, self.predictor.version, s.regression_reliability)
                n_adapt = len(upd)
            else:
                verdict = reliability(
                    units, self.predictor.version, s.reliability, metrics_version=s.metrics_version
                )
                n_adapt = sum(len(p.observation.labels) for p in upd)
            self.records.append("reliability", verdict.to_event(), cycle=k)
            out["reliability"] = verdict.verdict
            cost = self.predictor.adapt_cost(n_adapt)
            trig = adaptation_trigger(
                verdict.verdict, n_adapt, self.ledger.remaining(UPDATE_COMPUTE), cost, s.adaptation
            )
            self.records.append("adaptation_trigger", trig.to_event(), cycle=k)
            trig_on = trig.triggered
            if trig.triggered:
                self.ledger.spend(UPDATE_COMPUTE, cost, reason="adaptation", cycle=k)
                proposed_predictor = self.predictor.adapt(upd, seed=derive_seed(self.seed, "adapt", k))
                self.records.append(
                    "predictor_proposed",
                    {
                        "from": self.predictor.version,
                        "to": proposed_predictor.version,
                        "records": len(upd),
                        "units": n_adapt,
                    },
                    cycle=k,
                )
        out["adaptation_triggered"] = trig_on
        # component gates (eq. 13–14)
        gates: dict[str, Any] = {}
        g_pi = g_w = None
        if proposed_policy is not None:
            try:
                cur, n = self._policy_utility(self.policy, k)
                new, _ = self._policy_utility(proposed_policy, k)
                gd = policy_gate(cur, new, s.gates.policy, n)
            except BudgetExceeded as e:
                gd = GateDecision(
                    "policy", False, False, {}, {}, s.gates.policy.model_dump(), [f"update budget: {e}"]
                )
            self.records.append(
                "gate", {**gd.to_event(), "from": self.policy.version, "to": proposed_policy.version}, cycle=k
            )
            g_pi, gates["policy"] = gd.passed, gd.passed
        if proposed_predictor is not None and self.predictor is not None:
            try:
                cur, n = self._predictor_metrics(self.predictor, k)
                new, _ = self._predictor_metrics(proposed_predictor, k)
                gd = predictor_gate(cur, new, s.gates.predictor, n)
            except BudgetExceeded as e:
                gd = GateDecision(
                    "predictor", False, False, {}, {}, s.gates.predictor.model_dump(), [f"update budget: {e}"]
                )
            self.records.append(
                "gate",
                {**gd.to_event(), "from": self.predictor.version, "to": proposed_predictor.version},
                cycle=k,
            )
            g_w, gates["predictor"] = gd.passed, gd.passed
        asm = assemble(pt.triggered, g_pi, trig_on, g_w)
        self.records.append("assembly", asm.to_event(), cycle=k)
        bar_policy = proposed_policy if asm.policy_changed and proposed_policy is not None else self.policy
        bar_pred = proposed_predictor if asm.predictor_changed else self.predictor
        # pair gate (eq. 17)
        if not asm.anything_changed:
            pg = pair_gate_skipped()
        else:
            try:
                cur_m, sig_c = self._pair_metrics(self.policy, self.predictor, k)
                new_m, sig_a = self._pair_metrics(bar_policy, bar_pred, k)
                pg = pair_gate(cur_m, new_m, s.gates.pair, len(sig_c), sig_c == sig_a)
            except BudgetExceeded as e:
                pg = GateDecision(
                    "pair", False, False, {}, {}, s.gates.pair.model_dump(), [f"update budget: {e}"]
                )
        self.records.append("gate", pg.to_event(), cycle=k)
        gates["pair"] = "skipped" if pg.skipped else pg.passed
        # retention (eq. 18) with asymmetric rollback
        cur_v = (self.policy.version, self.predictor.version if self.predictor else None)
        bar_v = (bar_policy.version, bar_pred.version if bar_pred else None)
        rd = retain(
            cur_v,
            bar_v,
            pg,
            (
                proposed_policy.version if proposed_policy else None,
                proposed_predictor.version if proposed_predictor else None,
            ),
        )
        self.records.append("retain", rd.to_event(), cycle=k)
        if pg.passed and asm.anything_changed:
            self._store_components(bar_policy, bar_pred)
        out["gates"] = gates
        return out
