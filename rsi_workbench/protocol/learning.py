"""Learning: the policy/workflow update path (eq. 9) and the predictor path — reliability (eq. 10),
the adaptation trigger (eq. 11) and the adaptation attempt (eq. 12) — on update data only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rsi_workbench.budget import UPDATE_COMPUTE
from rsi_workbench.protocol.gate_data import GateData
from rsi_workbench.protocol.prequential import VersionRecord, observation_id
from rsi_workbench.protocol.reliability import regression_reliability, reliability
from rsi_workbench.protocol.seeds import derive_seed
from rsi_workbench.protocol.spec import (
    PairRecord,
    Policy,
    Predictor,
)
from rsi_workbench.protocol.splits import assert_disjoint
from rsi_workbench.protocol.state import digest
from rsi_workbench.protocol.triggers import adaptation_trigger, policy_trigger


class Learning(GateData):
    """Propose a new policy and/or predictor from the update data H_k (never from gate or audit data)."""

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

    def _update_records(self, k: int) -> list[PairRecord]:
        """The update data H_k of cycle k's decision: the update split, or the prequential U_k (every
        observation that has left the gate window)."""
        if self.prequential:
            return self._prequential_split(k)[0]
        return [p for p in self.history if p.split == "update"]

    def note_version(self, payload: dict[str, Any], k: int) -> None:
        """Remember a proposed predictor's creation cycle and training ids (a ``predictor_proposed``
        payload of a prequential run), so its gates only admit honest predictions."""
        if "trained_on" in payload:
            self.versions[payload["to"]] = VersionRecord(payload["to"], k, frozenset(payload["trained_on"]))

    def _assert_disjoint_data(self, upd: list[PairRecord], k: int | None = None) -> None:
        """The update, gate and audit data are disjoint by task and use; asserted every cycle."""
        if self.held_out:
            assert_disjoint(
                update={(p.task_id, p.cycle, digest(p.action)) for p in upd},
                gate={(p.task_id, p.cycle, digest(p.action)) for p in self._held_out(k)},
                audit={(t, "audit", "") for t in self.spec.tasks},
            )
        else:
            assert_disjoint(
                update={(p.task_id, "feedback") for p in upd},
                gate={(g.task_id, "feedback") for g in self.groups if self.split_of[g.task_id] == "gate"},
                audit={(t, "audit") for t in self.spec.tasks},
            )

    def _policy_path(self, k: int, upd: list[PairRecord]) -> tuple[bool, Policy | None]:
        """Eq. 9: the trigger u_k^π and, when it fires, a proposed policy θ' from D_policy and D_sim."""
        s = self.settings
        pt = policy_trigger(len(upd), self.ledger.remaining(UPDATE_COMPUTE), s.policy_update)
        self.records.append("policy_trigger", pt.to_event(), cycle=k)
        if not pt.triggered:
            return False, None
        self.ledger.spend(UPDATE_COMPUTE, s.policy_update.cost, reason="policy update", cycle=k)
        sim = [r for r in self.imagined if self.split_of[r.task_id] == "update"]
        proposed = self.policy.update(upd, sim, seed=derive_seed(self.seed, "policy_update", k))
        self.records.append(
            "policy_proposed",
            {
                "from": self.policy.version,
                "to": proposed.version,
                "records": len(upd),
                "imagined": len(sim),
            },
            cycle=k,
        )
        return True, proposed

    def _predictor_path(self, k: int, upd: list[PairRecord]) -> tuple[str | None, bool, Predictor | None]:
        """Eq. 10–12: the reliability verdict of φ_k on its own update-data predictions, the adaptation
        trigger u_k^W and, when it fires, an adapted predictor φ'. Returns (verdict, u_k^W, φ')."""
        s = self.settings
        if self.predictor is None:
            return None, False, None
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
        cost = self.predictor.adapt_cost(n_adapt)
        trig = adaptation_trigger(
            verdict.verdict, n_adapt, self.ledger.remaining(UPDATE_COMPUTE), cost, s.adaptation
        )
        self.records.append("adaptation_trigger", trig.to_event(), cycle=k)
        if not trig.triggered:
            return verdict.verdict, False, None
        self.ledger.spend(UPDATE_COMPUTE, cost, reason="adaptation", cycle=k)
        proposed = self.predictor.adapt(upd, seed=derive_seed(self.seed, "adapt", k))
        payload: dict[str, Any] = {
            "from": self.predictor.version,
            "to": proposed.version,
            "records": len(upd),
            "units": n_adapt,
        }
        if self.prequential:  # training ids: the incumbent's (a warm start inherits them) and U_k
            inherited = self._version_record(self.predictor.version).trained_on
            payload["trained_on"] = sorted(inherited | {observation_id(p) for p in upd})
            payload["cut_off"] = max((p.cycle for p in upd), default=0)
        self.records.append("predictor_proposed", payload, cycle=k)
        self.note_version(payload, k)
        return verdict.verdict, True, proposed
