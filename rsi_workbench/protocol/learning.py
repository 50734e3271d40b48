"""Learning: the policy/workflow update path (eq. 9) and the predictor path — reliability (eq. 10),
the adaptation trigger (eq. 11) and the adaptation attempt (eq. 12) — on update data only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rsi_workbench.budget import UPDATE_COMPUTE
from rsi_workbench.protocol.metrics import METRICS_VERSION
from rsi_workbench.protocol.prequential import observation_id
from rsi_workbench.protocol.reliability import (
    BinaryReliabilityCriteria,
    RegressionReliabilityCriteria,
    ReliabilityCriteria,
    binary_reliability,
    regression_reliability,
    reliability,
)
from rsi_workbench.protocol.seeds import derive_seed
from rsi_workbench.protocol.spec import (
    PairRecord,
    Policy,
    Predictor,
)
from rsi_workbench.protocol.state import LoopState, Readout
from rsi_workbench.protocol.triggers import (
    AdaptationCriteria,
    PolicyUpdateCriteria,
    adaptation_trigger,
    policy_trigger,
)


class Learning:
    """The loop's learning collaborator: propose a new policy and/or predictor from the update data
    H_k (never from gate or audit data).

    Composed of the loop's ``state`` and the ``readout``; the settings it reads are its parameters:
    ``policy_update`` (eq. 9), ``reliability`` / ``regression_reliability`` (eq. 10, class or
    gaussian readout), ``adaptation`` (eq. 11), ``rescore_history``, ``rescore_cost`` and
    ``metrics_version``."""

    def __init__(
        self,
        state: LoopState,
        readout: Readout,
        *,
        policy_update: PolicyUpdateCriteria | None = None,
        reliability: ReliabilityCriteria | None = None,
        regression_reliability: RegressionReliabilityCriteria | None = None,
        binary_reliability: BinaryReliabilityCriteria | None = None,
        adaptation: AdaptationCriteria | None = None,
        rescore_history: bool = False,
        rescore_cost: float = 0.01,
        metrics_version: int = METRICS_VERSION,
    ):
        self.state, self.readout = state, readout
        self.policy_update = policy_update or PolicyUpdateCriteria()
        self.reliability = reliability or ReliabilityCriteria()
        self.regression_reliability = regression_reliability or RegressionReliabilityCriteria()
        self.binary_reliability = binary_reliability or BinaryReliabilityCriteria()
        self.adaptation = adaptation or AdaptationCriteria()
        self.rescore_history, self.rescore_cost = rescore_history, rescore_cost
        self.metrics_version = metrics_version

    def _rescore(self, records: Sequence[PairRecord], k: int) -> list[tuple[Any, ...]]:
        """Predictions of the current version recomputed on recorded inputs (eq. 10's attribution),
        charged to update compute; skipped when the budget cannot cover it."""
        assert self.state.predictor is not None
        v = self.state.predictor.version
        stale = [p for p in records if p.prediction is None or p.prediction.version != v]
        cost = self.rescore_cost * len(stale)
        if not stale or not self.state.ledger.can_spend(UPDATE_COMPUTE, cost):
            return []
        self.state.ledger.spend(UPDATE_COMPUTE, cost, reason="history re-scoring", cycle=k)
        out = []
        for p in stale:
            pred = self.state.predictor.predict(
                p.task_id, self.state.env.load_state(p.state), [self.state.env.load_action(p.action)]
            )[0]
            out += self.readout.units(p.task_id, pred, p.observation)
        self.state.records.append(
            "history_rescored", {"version": v, "records": len(stale), "units": len(out)}, cycle=k
        )
        return out

    def policy_path(self, k: int, upd: list[PairRecord]) -> tuple[bool, Policy | None]:
        """Eq. 9: the trigger u_k^π and, when it fires, a proposed policy θ' from D_policy and D_sim."""
        pt = policy_trigger(len(upd), self.state.ledger.remaining(UPDATE_COMPUTE), self.policy_update)
        self.state.records.append("policy_trigger", pt.to_event(), cycle=k)
        if not pt.triggered:
            return False, None
        self.state.ledger.spend(UPDATE_COMPUTE, self.policy_update.cost, reason="policy update", cycle=k)
        sim = [r for r in self.state.imagined if self.state.split_of[r.task_id] == "update"]
        proposed = self.state.policy.update(upd, sim, seed=derive_seed(self.state.seed, "policy_update", k))
        self.state.records.append(
            "policy_proposed",
            {
                "from": self.state.policy.version,
                "to": proposed.version,
                "records": len(upd),
                "imagined": len(sim),
            },
            cycle=k,
        )
        return True, proposed

    def predictor_path(self, k: int, upd: list[PairRecord]) -> tuple[str | None, bool, Predictor | None]:
        """Eq. 10–12: the reliability verdict of φ_k on its own update-data predictions, the adaptation
        trigger u_k^W and, when it fires, an adapted predictor φ'. Returns (verdict, u_k^W, φ')."""
        if self.state.predictor is None:
            return None, False, None
        units = [
            u
            for p in upd
            if p.prediction is not None
            for u in self.readout.units(p.task_id, p.prediction, p.observation)
        ]
        if self.rescore_history:
            units += self._rescore(upd, k)
        if self.readout.kind == "gaussian":
            verdict = regression_reliability(units, self.state.predictor.version, self.regression_reliability)
            n_adapt = len(upd)
        elif self.readout.kind == "binary":
            verdict = binary_reliability(units, self.state.predictor.version, self.binary_reliability)
            n_adapt = len(upd)
        else:
            verdict = reliability(
                units, self.state.predictor.version, self.reliability, metrics_version=self.metrics_version
            )
            n_adapt = sum(len(p.observation.labels) for p in upd)
        self.state.records.append("reliability", verdict.to_event(), cycle=k)
        cost = self.state.predictor.adapt_cost(n_adapt)
        trig = adaptation_trigger(
            verdict.verdict, n_adapt, self.state.ledger.remaining(UPDATE_COMPUTE), cost, self.adaptation
        )
        self.state.records.append("adaptation_trigger", trig.to_event(), cycle=k)
        if not trig.triggered:
            return verdict.verdict, False, None
        self.state.ledger.spend(UPDATE_COMPUTE, cost, reason="adaptation", cycle=k)
        proposed = self.state.predictor.adapt(upd, seed=derive_seed(self.state.seed, "adapt", k))
        payload: dict[str, Any] = {
            "from": self.state.predictor.version,
            "to": proposed.version,
            "records": len(upd),
            "units": n_adapt,
        }
        if self.state.prequential:  # training ids: the incumbent's (a warm start inherits them) and U_k
            inherited = self.state.version_record(self.state.predictor.version).trained_on
            payload["trained_on"] = sorted(inherited | {observation_id(p) for p in upd})
            payload["cut_off"] = max((p.cycle for p in upd), default=0)
        self.state.records.append("predictor_proposed", payload, cycle=k)
        self.state.note_version(payload, k)
        return verdict.verdict, True, proposed
