"""Gate data: the executions and metrics the component and pair gates compare (eq. 13–14, 17), on
held-out tasks (gate executions, charged to update compute and cached) or on held-out rounds of every
task (re-predicting recorded observations, executing nothing).

Eq. 7 holds on the gate paths too: a candidate V_d finds invalid (e.g. an LLM sample that does not
parse, lacks the entry point or changes the signature) is removed before it is predicted, ranked or
executed, and recorded with its reason in a ``gate_invalid`` event.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rsi_workbench.budget import UPDATE_COMPUTE
from rsi_workbench.protocol.metrics import METRICS_VERSION, brier, ranking_accuracy
from rsi_workbench.protocol.prequential import (
    observation_id,
    plan_gate_predictions,
)
from rsi_workbench.protocol.seeds import derive_rng
from rsi_workbench.protocol.selection import ScoredCandidate, Selection
from rsi_workbench.protocol.spec import (
    Observation,
    PairRecord,
    Policy,
    Prediction,
    Predictor,
)
from rsi_workbench.protocol.state import LoopState, ProposalGroup, Readout


class GateData:
    """Metrics of a policy, a predictor or a (policy, predictor) pair on the cycle's gate data: what
    :class:`~rsi_workbench.protocol.retention.Retention`'s gates compare.

    Composed of the loop's ``state``, its ``selection`` (a pair's decisions are its rule's picks) and
    the ``readout`` (scores and utilities); the settings it reads are its parameters: ``candidates``
    (``ProtocolSettings.k``), ``gate_execution_cost``, ``rescore_cost`` and ``metrics_version``."""

    def __init__(
        self,
        state: LoopState,
        selection: Selection,
        readout: Readout,
        *,
        candidates: int = 4,
        gate_execution_cost: float = 1.0,
        rescore_cost: float = 0.01,
        metrics_version: int = METRICS_VERSION,
    ):
        self.state, self.selection, self.readout = state, selection, readout
        self.candidates, self.gate_execution_cost = candidates, gate_execution_cost
        self.rescore_cost, self.metrics_version = rescore_cost, metrics_version

    def _gate_observe(self, t: str, state_json: dict[str, Any], action: Any, k: int) -> Observation:
        """Gate-data execution (E0), charged to update compute, cached by (task, signature, action)."""
        aj = self.state.env.dump_action(action)
        key = self.state.gate_key(t, state_json, aj)
        if key not in self.state.gate_cache:
            self.state.ledger.spend(
                UPDATE_COMPUTE, self.gate_execution_cost, reason="gate execution", cycle=k, task_id=t
            )
            obs = self.state.env.evaluate(t, self.state.env.load_state(state_json), action)
            self.state.gate_cache[key] = obs
            self.state.records.append(
                "gate_execution", {"task_id": t, "key": key, "observation": obs.to_json()}, cycle=k
            )
        return self.state.gate_cache[key]

    def _gate_valid(self, t: str, state: Any, acts: Sequence[Any], k: int, path: str) -> list[int]:
        """Indices of the actions V_d finds valid (eq. 7: the rest are never predicted, ranked or
        executed here); the invalid ones are recorded, with their reasons, as ``gate_invalid``."""
        checks = [self.state.spec.verifier.validate(t, state, a) for a in acts]
        bad = [{"index": i, "reason": why} for i, (ok, why) in enumerate(checks) if not ok]
        if bad:
            self.state.records.append(
                "gate_invalid",
                {"task_id": t, "path": path, "n_candidates": len(acts), "invalid": bad, "executed": False},
                cycle=k,
            )
        return [i for i, (ok, _) in enumerate(checks) if ok]

    def predictor_metrics(self, predictor: Predictor, k: int) -> tuple[dict[str, float | None], int]:
        """Proper score and ranking accuracy of ``predictor`` on gate groups (candidates of gate tasks),
        or on the held-out observations when ``gate_data`` is ``held_out_observations``."""
        if self.state.held_out:
            return self._held_out_metrics(predictor, k)
        probs: list[list[float]] = []
        labels: list[int] = []
        units: list[tuple[Any, ...]] = []
        groups = []
        for g in (g for g in self.state.groups if self.state.split_of[g.task_id] == "gate" and g.actions):
            state = self.state.env.load_state(g.state)
            acts = [self.state.env.load_action(a) for a in g.actions]
            path = f"predictor gate ({predictor.version})"
            acts = [acts[i] for i in self._gate_valid(g.task_id, state, acts, k, path)]
            if not acts:
                continue
            preds = predictor.predict(g.task_id, state, acts)
            grp = []
            for a, p in zip(acts, preds, strict=True):
                obs = self._gate_observe(g.task_id, g.state, a, k)
                if self.readout.kind == "binary":
                    units += self.readout.units(g.task_id, p, obs)
                probs.extend(p.probs)
                labels.extend(obs.labels)
                grp.append(
                    (
                        self.readout.predicted_utility(p),
                        self.readout.observed_utility(obs),
                    )
                )
            groups.append(grp)
        ra = ranking_accuracy(groups, version=self.metrics_version)
        if self.readout.kind == "binary":  # a unit: one (task, candidate) prediction with its outcome
            return {"brier": self.readout.score(units), "ranking_accuracy": ra}, len(units)
        return {"brier": brier(probs, labels), "ranking_accuracy": ra}, len(groups)

    def _prequential_predictions(self, predictor: Predictor, k: int) -> list[tuple[PairRecord, Prediction]]:
        """``predictor`` on the window G_k: its admissible recorded predictions (made before each
        observation arrived), else re-predicted (charged ``rescore_cost`` each); asserts that no
        window observation trained it."""
        recs = self.state.held_out_records(k)
        plan = plan_gate_predictions(recs, self.state.version_record(predictor.version))
        if plan.repredict:
            self.state.ledger.spend(
                UPDATE_COMPUTE,
                self.rescore_cost * len(plan.repredict),
                reason="gate evaluation",
                cycle=k,
            )
        self.state.gate_plans[predictor.version] = plan
        out = []
        for p in recs:
            pred = plan.recorded.get(observation_id(p))
            if pred is None:
                pred = predictor.predict(
                    p.task_id, self.state.env.load_state(p.state), [self.state.env.load_action(p.action)]
                )[0]
            out.append((p, pred))
        return out

    def gate_data_note(self, *versions: str) -> dict[str, Any]:
        """Prequential gates only: the window and, per version, how many of its predictions were
        recorded before the observation arrived, re-predicted, or refused (made after it)."""
        if not self.state.prequential:
            return {}
        plans = {v: self.state.gate_plans[v] for v in versions if v in self.state.gate_plans}
        return {
            "gate_data": {
                "rule": "prequential",
                "window": [observation_id(p) for p in self.state.held_out_records(self.state.k + 1)],
                "recorded": {v: len(pl.recorded) for v, pl in plans.items()},
                "repredicted": {v: len(pl.repredict) for v, pl in plans.items()},
                "refused": {v: pl.refused for v, pl in plans.items()},
            }
        }

    def _held_out_predictions(self, predictor: Predictor, k: int) -> list[tuple[PairRecord, Prediction]]:
        """``predictor``'s predictions on every held-out observation's recorded (state, action),
        charged to update compute (``rescore_cost`` each); nothing is executed."""
        if self.state.prequential:
            return self._prequential_predictions(predictor, k)
        recs = self.state.held_out_records()
        if recs:
            self.state.ledger.spend(
                UPDATE_COMPUTE, self.rescore_cost * len(recs), reason="gate evaluation", cycle=k
            )
        return [
            (
                p,
                predictor.predict(
                    p.task_id, self.state.env.load_state(p.state), [self.state.env.load_action(p.action)]
                )[0],
            )
            for p in recs
        ]

    def _held_out_metrics(self, predictor: Predictor, k: int) -> tuple[dict[str, float | None], int]:
        pairs = self._held_out_predictions(predictor, k)
        units = [u for p, pred in pairs for u in self.readout.units(p.task_id, pred, p.observation)]
        by_task: dict[str, list[tuple[float, float]]] = {}
        for p, pred in pairs:
            by_task.setdefault(p.task_id, []).append(
                (
                    self.readout.predicted_utility(pred),
                    self.readout.observed_utility(p.observation),
                )
            )
        return {
            self.readout.score_name: self.readout.score(units),
            "ranking_accuracy": ranking_accuracy(list(by_task.values()), version=self.metrics_version),
        }, len(pairs)

    def _held_out_pair_metrics(
        self, predictor: Predictor | None, k: int
    ) -> tuple[dict[str, float | None], list[str]]:
        """A pair's decisions on the held-out observations: per task, the observed utility of the
        held-out condition the pair's selection rule ranks first, plus the predictor's score."""
        recs = self.state.held_out_records(k)
        sigs = [self.state.env.signature(p.task_id, self.state.env.load_state(p.state)) for p in recs]
        pairs = self._held_out_predictions(predictor, k) if predictor is not None else []
        utils, units = [], []
        for t in dict.fromkeys(p.task_id for p in recs):
            mine = [(i, p) for i, p in enumerate(recs) if p.task_id == t]
            if pairs:
                scored = []
                for i, p in mine:
                    pred = pairs[i][1]
                    units += self.readout.units(t, pred, p.observation)
                    u = self.readout.predicted_utility(pred)
                    scored.append(ScoredCandidate(i, True, "", u, pred.uncertainty))
            else:
                scored = [ScoredCandidate(i, True) for i, _ in mine]
            dec = self.selection.rank_unbounded(scored, seed=self.state.seed, cycle=k, task_id=t)
            utils.append(
                self.readout.observed_utility(recs[dec.selected[0]].observation) if dec.selected else 0.0
            )
        out: dict[str, float | None] = {
            "utility": sum(utils) / len(utils) if utils else None,
            self.readout.score_name: self.readout.score(units),
        }
        if self.readout.kind == "binary":  # what the pair gate saw: scored (task, candidate) units
            out["n_units"] = float(len(units))
        return out, sigs

    def _gate_units(self, k: int) -> list[ProposalGroup]:
        return [
            g
            for g in self.state.groups
            if g.cycle == k and self.state.split_of[g.task_id] == "gate" and g.actions
        ]

    def policy_utility(
        self, policy: Policy, k: int, *, actions_to_best: bool = False
    ) -> tuple[dict[str, float | None], int]:
        """Mean best observed utility of the policy's proposals per gate unit; with
        ``actions_to_best`` also the mean 1-based position of the first proposal attaining it."""
        units = self._gate_units(k)
        best: list[float] = []
        first: list[int] = []
        for g in units:
            state = self.state.env.load_state(g.state)
            acts = policy.propose(
                g.task_id, state, self.candidates, derive_rng(self.state.seed, "propose", k, g.task_id)
            )
            path = f"policy gate ({policy.version})"
            acts = [acts[i] for i in self._gate_valid(g.task_id, state, acts, k, path)]
            utils = [
                self.readout.observed_utility(self._gate_observe(g.task_id, g.state, a, k)) for a in acts
            ]
            b = max(utils, default=0.0)
            best.append(b)
            first.append(1 + utils.index(b) if utils else 1 + self.candidates)
        out: dict[str, float | None] = {"utility": sum(best) / len(best) if best else None}
        if actions_to_best:
            out["actions_to_best"] = sum(first) / len(first) if first else None
        return out, len(units)

    def pair_metrics(
        self, policy: Policy, predictor: Predictor | None, k: int
    ) -> tuple[dict[str, float | None], list[str]]:
        """Decision utility and predictor fit of one (θ, φ) pair on the compatibility units of cycle k."""
        if self.state.held_out:
            return self._held_out_pair_metrics(predictor, k)
        utils, probs, labels, sigs = [], [], [], []
        units: list[tuple[Any, ...]] = []
        for g in self._gate_units(k):
            state = self.state.env.load_state(g.state)
            sigs.append(self.state.env.signature(g.task_id, state))
            acts = policy.propose(
                g.task_id, state, self.candidates, derive_rng(self.state.seed, "propose", k, g.task_id)
            )
            path = f"pair gate ({policy.version}, {predictor.version if predictor else None})"
            acts = [acts[i] for i in self._gate_valid(g.task_id, state, acts, k, path)]
            obs = [self._gate_observe(g.task_id, g.state, a, k) for a in acts]
            preds = predictor.predict(g.task_id, state, acts) if predictor and acts else []
            if preds:
                scored = [
                    ScoredCandidate(
                        i,
                        True,
                        "",
                        self.readout.predicted_utility(p),
                        p.uncertainty,
                    )
                    for i, p in enumerate(preds)
                ]
            else:
                scored = [ScoredCandidate(i, True) for i in range(len(acts))]
            dec = self.selection.rank_unbounded(scored, seed=self.state.seed, cycle=k, task_id=g.task_id)
            utils.append(self.readout.observed_utility(obs[dec.selected[0]]) if dec.selected else 0.0)
            for p, o in zip(preds, obs, strict=False):
                if self.readout.kind == "binary":
                    units += self.readout.units(g.task_id, p, o)
                probs.extend(p.probs)
                labels.extend(o.labels)
        score = self.readout.score(units) if self.readout.kind == "binary" else brier(probs, labels)
        out: dict[str, float | None] = {"utility": sum(utils) / len(utils) if utils else None, "brier": score}
        if self.readout.kind == "binary":  # what the pair gate saw: scored (task, candidate) units
            out["n_units"] = float(len(units))
        return out, sigs
