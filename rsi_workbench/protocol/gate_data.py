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
from rsi_workbench.protocol.metrics import brier, ranking_accuracy
from rsi_workbench.protocol.prequential import (
    VersionRecord,
    observation_id,
    plan_gate_predictions,
    prequential_split,
)
from rsi_workbench.protocol.seeds import derive_rng
from rsi_workbench.protocol.selection import ScoredCandidate, select, utility
from rsi_workbench.protocol.spec import (
    Observation,
    PairRecord,
    Policy,
    Prediction,
    Predictor,
)
from rsi_workbench.protocol.state import LoopState, ProposalGroup


class GateData(LoopState):
    """Metrics of a policy, a predictor or a (policy, predictor) pair on the cycle's gate data."""

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

    def _gate_valid(self, t: str, state: Any, acts: Sequence[Any], k: int, path: str) -> list[int]:
        """Indices of the actions V_d finds valid (eq. 7: the rest are never predicted, ranked or
        executed here); the invalid ones are recorded, with their reasons, as ``gate_invalid``."""
        checks = [self.spec.verifier.validate(t, state, a) for a in acts]
        bad = [{"index": i, "reason": why} for i, (ok, why) in enumerate(checks) if not ok]
        if bad:
            self.records.append(
                "gate_invalid",
                {"task_id": t, "path": path, "n_candidates": len(acts), "invalid": bad, "executed": False},
                cycle=k,
            )
        return [i for i, (ok, _) in enumerate(checks) if ok]

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
            path = f"predictor gate ({predictor.version})"
            acts = [acts[i] for i in self._gate_valid(g.task_id, state, acts, k, path)]
            if not acts:
                continue
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

    def _held_out(self, k: int | None = None) -> list[PairRecord]:
        """The gate records: the held-out rounds, or the prequential window G_k of cycle k's decision."""
        if self.prequential:
            return self._prequential_split(self.k + 1 if k is None else k)[1]
        return [p for p in self.history if p.split == "gate"]

    def _prequential_split(self, k: int) -> tuple[list[PairRecord], list[PairRecord]]:
        """(U_k, G_k) of :mod:`~rsi_workbench.protocol.prequential` for the decision of cycle k."""
        s = self.settings
        return prequential_split(self.history, k, s.gate_fraction, s.gate_window)

    def _version_record(self, version: str) -> VersionRecord:
        """The creation cycle and training ids of a predictor version (unknown: the initial prior)."""
        return self.versions.get(version) or VersionRecord(version, 0, frozenset())

    def _prequential_predictions(self, predictor: Predictor, k: int) -> list[tuple[PairRecord, Prediction]]:
        """``predictor`` on the window G_k: its admissible recorded predictions (made before each
        observation arrived), else re-predicted (charged ``rescore_cost`` each); asserts that no
        window observation trained it."""
        recs = self._held_out(k)
        plan = plan_gate_predictions(recs, self._version_record(predictor.version))
        if plan.repredict:
            self.ledger.spend(
                UPDATE_COMPUTE,
                self.settings.rescore_cost * len(plan.repredict),
                reason="gate evaluation",
                cycle=k,
            )
        self.gate_plans[predictor.version] = plan
        out = []
        for p in recs:
            pred = plan.recorded.get(observation_id(p))
            if pred is None:
                pred = predictor.predict(
                    p.task_id, self.env.load_state(p.state), [self.env.load_action(p.action)]
                )[0]
            out.append((p, pred))
        return out

    def _gate_data_note(self, *versions: str) -> dict[str, Any]:
        """Prequential gates only: the window and, per version, how many of its predictions were
        recorded before the observation arrived, re-predicted, or refused (made after it)."""
        if not self.prequential:
            return {}
        plans = {v: self.gate_plans[v] for v in versions if v in self.gate_plans}
        return {
            "gate_data": {
                "rule": "prequential",
                "window": [observation_id(p) for p in self._held_out(self.k + 1)],
                "recorded": {v: len(pl.recorded) for v, pl in plans.items()},
                "repredicted": {v: len(pl.repredict) for v, pl in plans.items()},
                "refused": {v: pl.refused for v, pl in plans.items()},
            }
        }

    def _held_out_predictions(self, predictor: Predictor, k: int) -> list[tuple[PairRecord, Prediction]]:
        """``predictor``'s predictions on every held-out observation's recorded (state, action),
        charged to update compute (``rescore_cost`` each); nothing is executed."""
        if self.prequential:
            return self._prequential_predictions(predictor, k)
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
        recs = self._held_out(k)
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

    def _gate_units(self, k: int) -> list[ProposalGroup]:
        return [g for g in self.groups if g.cycle == k and self.split_of[g.task_id] == "gate" and g.actions]

    def _policy_utility(self, policy: Policy, k: int) -> tuple[dict[str, float | None], int]:
        units = self._gate_units(k)
        best = []
        for g in units:
            state = self.env.load_state(g.state)
            acts = policy.propose(
                g.task_id, state, self.settings.k, derive_rng(self.seed, "propose", k, g.task_id)
            )
            path = f"policy gate ({policy.version})"
            acts = [acts[i] for i in self._gate_valid(g.task_id, state, acts, k, path)]
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
