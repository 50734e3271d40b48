"""Retention: the component gates (eq. 13–14) on gate data, assembly of the candidate pair
(eq. 15–16), the pair gate under matched conditions (eq. 17) and retention of the pair with
asymmetric rollback (eq. 18). A gate that cannot be paid for from the update budget fails.
"""

from __future__ import annotations

from typing import Any

from rsi_workbench.budget import BudgetExceeded
from rsi_workbench.protocol.gate_data import GateData
from rsi_workbench.protocol.gates import (
    Assembly,
    GateDecision,
    PairGateCriteria,
    PolicyGateCriteria,
    PredictorGateCriteria,
    assemble,
    pair_gate,
    pair_gate_skipped,
    policy_gate,
    predictor_gate,
    retain,
)
from rsi_workbench.protocol.settings import GateSettings
from rsi_workbench.protocol.spec import Policy, Predictor
from rsi_workbench.protocol.state import LoopState


class Retention:
    """The loop's retention collaborator: decide which (policy, predictor) pair the next cycle runs
    with, and store it.

    Composed of the loop's ``state`` and ``measure`` (:class:`GateData`: the metrics the gates
    compare); the thresholds it reads are its parameter ``gates``
    (``ProtocolSettings.gates``: ``policy``, ``predictor`` and ``pair`` criteria), handed on to each
    gate decision as an argument."""

    def __init__(self, state: LoopState, measure: GateData, *, gates: GateSettings | None = None):
        self.state, self.measure = state, measure
        self.gates = gates or GateSettings()

    def _component_gates(
        self,
        k: int,
        proposed_policy: Policy | None,
        proposed_predictor: Predictor | None,
        policy_criteria: PolicyGateCriteria,
        predictor_criteria: PredictorGateCriteria,
    ) -> tuple[bool | None, bool | None, dict[str, Any]]:
        """G_k^π (eq. 13) and G_k^W (eq. 14) for the components that were proposed; (G_π, G_W, gates)."""
        gates: dict[str, Any] = {}
        g_pi = g_w = None
        if proposed_policy is not None:
            try:
                atb = policy_criteria.tie_break == "fewer_actions"
                cur, n = self.measure.policy_utility(self.state.policy, k, actions_to_best=atb)
                new, _ = self.measure.policy_utility(proposed_policy, k, actions_to_best=atb)
                gd = policy_gate(cur, new, policy_criteria, n)
            except BudgetExceeded as e:
                gd = GateDecision(
                    "policy", False, False, {}, {}, policy_criteria.model_dump(), [f"update budget: {e}"]
                )
            self.state.records.append(
                "gate",
                {**gd.to_event(), "from": self.state.policy.version, "to": proposed_policy.version},
                cycle=k,
            )
            g_pi, gates["policy"] = gd.passed, gd.passed
        if proposed_predictor is not None and self.state.predictor is not None:
            try:
                cur, n = self.measure.predictor_metrics(self.state.predictor, k)
                new, _ = self.measure.predictor_metrics(proposed_predictor, k)
                gd = predictor_gate(cur, new, predictor_criteria, n)
            except BudgetExceeded as e:
                gd = GateDecision(
                    "predictor",
                    False,
                    False,
                    {},
                    {},
                    predictor_criteria.model_dump(),
                    [f"update budget: {e}"],
                )
            self.state.records.append(
                "gate",
                {
                    **gd.to_event(),
                    "from": self.state.predictor.version,
                    "to": proposed_predictor.version,
                    **self.measure.gate_data_note(self.state.predictor.version, proposed_predictor.version),
                },
                cycle=k,
            )
            g_w, gates["predictor"] = gd.passed, gd.passed
        return g_pi, g_w, gates

    def _pair_gate(
        self,
        k: int,
        asm: Assembly,
        bar_policy: Policy,
        bar_pred: Predictor | None,
        criteria: PairGateCriteria,
    ) -> GateDecision:
        """G_k^pair (eq. 17): skipped (= 1) when nothing changed, else current vs assembled pair."""
        if not asm.anything_changed:
            return pair_gate_skipped()
        try:
            cur_m, sig_c = self.measure.pair_metrics(self.state.policy, self.state.predictor, k)
            new_m, sig_a = self.measure.pair_metrics(bar_policy, bar_pred, k)
            return pair_gate(cur_m, new_m, criteria, len(sig_c), sig_c == sig_a)
        except BudgetExceeded as e:
            return GateDecision("pair", False, False, {}, {}, criteria.model_dump(), [f"update budget: {e}"])

    def gate_and_retain(
        self,
        k: int,
        u_pi: bool,
        proposed_policy: Policy | None,
        u_w: bool,
        proposed_predictor: Predictor | None,
    ) -> dict[str, Any]:
        """Eq. 13–18 in order; returns each gate's outcome by name ("skipped" for a skipped pair gate)."""
        g_pi, g_w, gates = self._component_gates(
            k, proposed_policy, proposed_predictor, self.gates.policy, self.gates.predictor
        )
        asm = assemble(u_pi, g_pi, u_w, g_w)
        self.state.records.append("assembly", asm.to_event(), cycle=k)
        bar_policy = (
            proposed_policy if asm.policy_changed and proposed_policy is not None else self.state.policy
        )
        bar_pred = proposed_predictor if asm.predictor_changed else self.state.predictor
        pg = self._pair_gate(k, asm, bar_policy, bar_pred, self.gates.pair)
        self.state.records.append("gate", pg.to_event(), cycle=k)
        gates["pair"] = "skipped" if pg.skipped else pg.passed
        # retention (eq. 18) with asymmetric rollback
        cur_v = (self.state.policy.version, self.state.predictor.version if self.state.predictor else None)
        bar_v = (bar_policy.version, bar_pred.version if bar_pred else None)
        proposed_v = (
            proposed_policy.version if proposed_policy else None,
            proposed_predictor.version if proposed_predictor else None,
        )
        rd = retain(cur_v, bar_v, pg, proposed_v)
        self.state.records.append("retain", rd.to_event(), cycle=k)
        if pg.passed and asm.anything_changed:
            self.state.store_components(bar_policy, bar_pred)
        return gates
