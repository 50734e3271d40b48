"""The feedback round of one task in cycle k (eq. 7–8): propose K candidates, check validity, predict,
select what spends external feedback, record the proposal and admission of imagined records, evaluate
the selection and advance the task's state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rsi_workbench.budget import EXTERNAL_FEEDBACK
from rsi_workbench.protocol.seeds import derive_rng
from rsi_workbench.protocol.selection import ScoredCandidate, Selection, SelectionDecision
from rsi_workbench.protocol.spec import (
    ImaginedRecord,
    Observation,
    PairRecord,
    Prediction,
)
from rsi_workbench.protocol.state import LoopState, ProposalGroup
from rsi_workbench.records.ordered import Deferred, deferring


@dataclass
class Draft:
    """One task's candidates in cycle k before prediction: actions and their validity."""

    task_id: str
    cycle: int
    split: str
    state: Any
    state_json: dict[str, Any]
    signature: str
    actions: list[Any]
    validity: list[tuple[bool, str]]

    @property
    def valid_idx(self) -> list[int]:
        return [i for i, (ok, _) in enumerate(self.validity) if ok]


@dataclass
class Step:
    """One selected candidate evaluated ahead: its observation, the advanced state, held appends."""

    observation: Observation
    held_evaluate: Deferred
    state: Any
    held_advance: Deferred


@dataclass
class Ready:
    """A selection's outcomes computed ahead for the candidates ``selected`` (in that order): the
    steps of :meth:`FeedbackRound._evaluate` and the audit's outcomes (they depend on nothing else
    of the decision: not on the budget it was made with)."""

    selected: list[int]
    steps: list[Step]
    audit: tuple[list[dict[str, Any]], Deferred] | None


@dataclass
class Proposal:
    """One task's candidates in cycle k as selection sees them: actions, validity, predictions, utilities."""

    task_id: str
    cycle: int
    split: str
    state: Any
    state_json: dict[str, Any]
    signature: str
    actions: list[Any]
    validity: list[tuple[bool, str]]
    preds: dict[int, Prediction]
    utils: dict[int, float | None]
    scored: list[ScoredCandidate]


class FeedbackRound:
    """Propose → predict → select → evaluate for one task (the loop's online half).

    Composed of the loop's ``state`` and its ``selection`` collaborator; the settings it reads are
    its parameters: ``candidates`` (``ProtocolSettings.k``: proposed per task per round),
    ``max_rounds``, ``audit`` and ``record_candidates``."""

    def __init__(
        self,
        state: LoopState,
        selection: Selection,
        *,
        candidates: int = 4,
        max_rounds: int = 3,
        audit: bool = True,
        record_candidates: int | None = None,
    ):
        self.state, self.selection = state, selection
        self.candidates, self.max_rounds = candidates, max_rounds
        self.audit, self.record_candidates = audit, record_candidates

    def _initial(self, t: str, k: int, states: dict[str, Any], done: dict[str, str]) -> None:
        state, obs = self.state.env.initial(t)
        self._record_initial(t, k, state, obs, states, done)

    def _record_initial(
        self, t: str, k: int, state: Any, obs: Any, states: dict[str, Any], done: dict[str, str]
    ) -> None:
        """Charge and record task ``t``'s initial observation (computed already: ``env.initial``)."""
        self.state.ledger.spend(
            EXTERNAL_FEEDBACK, obs.cost, reason="online test call (initial program)", cycle=k, task_id=t
        )
        self.state.records.append(
            "initial_observation",
            {
                "task_id": t,
                "split": self.state.split(t, k),
                "signature": self.state.env.signature(t, state),
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
        """One task's round: propose and score, select, record, evaluate the selection, audit."""
        prop = self._propose(t, k, states[t])
        self._decide_and_evaluate(prop, states, done, counts)

    def _decide_and_evaluate(
        self,
        prop: Proposal,
        states: dict[str, Any],
        done: dict[str, str],
        counts: dict[str, int],
        ready: Ready | None = None,
    ) -> None:
        """Select on the budget left now, record, evaluate the selection (``ready``: its outcomes
        computed ahead for this very decision, used instead of evaluating again) and audit."""
        t, k = prop.task_id, prop.cycle
        dec = self._choose(prop)
        slot, action_json = self._record_proposal(prop, dec)
        if dec.outcome != "selected":
            counts["refused"] += 1
            done[t] = dec.outcome
            return
        if ready is not None and ready.selected != list(dec.selected):
            ready = None  # selected otherwise on the true budget: evaluate what was selected now
        steps = ready.steps if ready is not None else None
        states[t] = self._evaluate(prop, dec, slot, action_json, done, counts, steps)
        if t not in done and k >= self.max_rounds:
            done[t] = "max_rounds"
        if self.audit:
            if ready is not None and ready.audit is not None:
                outs, held = ready.audit
                held.flush()
            else:
                outs = self.state.env.audit(t, self.state.env.load_state(prop.state_json), prop.actions)
            self.state.records.append(
                "audit",
                {"task_id": t, "split": prop.split, "metrics_only": True, "outcomes": outs},
                cycle=k,
            )

    def _run_selected(self, prop: Proposal, dec: SelectionDecision) -> Ready:
        """What :meth:`_evaluate` and the audit would compute for ``dec``, computed ahead (in a worker
        thread), each step's appends held for the in-order write."""
        t, state = prop.task_id, prop.state
        steps: list[Step] = []
        for i in dec.selected:
            held_eval, held_adv = Deferred(), Deferred()
            with deferring(held_eval):
                obs = self.state.env.evaluate(t, state, prop.actions[i])
            with deferring(held_adv):
                state = self.state.env.advance(t, state, prop.actions[i], obs)
            steps.append(Step(obs, held_eval, state, held_adv))
            if obs.solved:
                break
        audit = None
        if self.audit:
            held = Deferred()
            with deferring(held):
                outs = self.state.env.audit(t, self.state.env.load_state(prop.state_json), prop.actions)
            audit = (outs, held)
        return Ready(list(dec.selected), steps, audit)

    def _propose(self, t: str, k: int, state: Any) -> Proposal:
        """K candidates from θ_k, their validity v_τ, φ_k's predictions on the valid ones and R_d (eq. 7)."""
        d = self._draft(t, k, state)
        predicted = None
        if self.state.predictor is not None and d.valid_idx:
            predicted = self.state.predictor.predict(t, state, [d.actions[i] for i in d.valid_idx])
        return self._scored(d, predicted)

    def _draft(self, t: str, k: int, state: Any) -> Draft:
        """K candidates from θ_k and their validity v_τ (eq. 7, before prediction)."""
        split = self.state.split(t, k)
        state_json = self.state.env.dump_state(state)
        sig = self.state.env.signature(t, state)
        rng = derive_rng(self.state.seed, "propose", k, t)
        actions = self.state.policy.propose(t, state, self.candidates, rng)
        validity = [self.state.spec.verifier.validate(t, state, a) for a in actions]
        return Draft(t, k, split, state, state_json, sig, actions, validity)

    def _scored(self, d: Draft, predicted: list[Prediction] | None) -> Proposal:
        """A draft with φ_k's predictions on its valid candidates, their utilities and R_d."""
        preds: dict[int, Prediction] = {}
        if predicted is not None:
            preds = dict(zip(d.valid_idx, predicted, strict=True))
        scored: list[ScoredCandidate] = []
        utils: dict[int, float | None] = {}
        for i, (ok, why) in enumerate(d.validity):
            pi = preds.get(i)
            utils[i] = self.selection.predicted_utility(pi.utility_terms, pi.uncertainty) if pi else None
            scored.append(ScoredCandidate(i, ok, why, utils[i], pi.uncertainty if pi else None, 1.0))
        return Proposal(
            d.task_id,
            d.cycle,
            d.split,
            d.state,
            d.state_json,
            d.signature,
            d.actions,
            d.validity,
            preds,
            utils,
            scored,
        )

    def _choose(self, prop: Proposal) -> SelectionDecision:
        """The initial design's random pick in the first cycles, else the selection rule under budget."""
        return self.selection.choose(
            prop.scored,
            seed=self.state.seed,
            cycle=prop.cycle,
            task_id=prop.task_id,
            budget=self.state.ledger.remaining(EXTERNAL_FEEDBACK),
        )

    def _record_proposal(
        self, prop: Proposal, dec: SelectionDecision
    ) -> tuple[dict[int, int], list[dict[str, Any]]]:
        """The proposal event (all candidates, or the best-ranked few plus the selected), admission of
        imagined records (eq. 8, update data only), the proposal group and the selection event.
        Returns each recorded candidate's slot and the recorded actions."""
        t, k, split, actions = prop.task_id, prop.cycle, prop.split, prop.actions
        recorded = list(range(len(actions)))
        if self.record_candidates is not None and len(actions) > self.record_candidates:
            keep = set(dec.order[: self.record_candidates]) | set(dec.selected)
            recorded = sorted(keep)
        slot = {i: n for n, i in enumerate(recorded)}
        action_json = [self.state.env.dump_action(actions[i]) for i in recorded]
        cands: list[dict[str, Any]] = []
        admitted: list[int] = []
        for i in recorded:
            ok, why = prop.validity[i]
            pi = prop.preds.get(i)
            adm = self.selection.admit(
                ok, prop.utils[i], pi.uncertainty if pi else None, pi.evidence if pi else "none"
            )
            if adm.admitted and split == "update":
                admitted.append(i)
            cands.append(
                {
                    "index": i,
                    "slot": slot[i],
                    "valid": ok,
                    "reason": why,
                    "utility": prop.utils[i],
                    "prediction": pi.to_json() if pi else None,
                    "admitted": adm.admitted and split == "update",
                    "admission": adm.to_event(),
                }
            )
        self.state.records.append(
            "proposal",
            {
                "task_id": t,
                "cycle": k,
                "split": split,
                "signature": prop.signature,
                "state": prop.state_json,
                "actions": action_json,
                "candidates": cands,
                "n_candidates": len(actions),
                "n_recorded": len(recorded),
                "policy_version": self.state.policy.version,
            },
            cycle=k,
        )
        self.state.groups.append(ProposalGroup(t, k, prop.state_json, prop.signature, action_json))
        for i in admitted:
            self.state.imagined.append(
                ImaginedRecord(t, k, prop.state_json, action_json[slot[i]], prop.preds[i])
            )
        sel_event = dec.to_event()
        if len(recorded) < len(actions):
            sel_event["candidates"] = [c for c in sel_event["candidates"] if c["index"] in slot]
            sel_event["order"] = [i for i in sel_event["order"] if i in slot]
            sel_event["n_candidates"] = len(actions)
        if self.selection.in_initial_design(k):
            sel_event["initial_design"] = True
        self.state.records.append("selection", {"task_id": t, **sel_event}, cycle=k)
        return slot, action_json

    def _evaluate(
        self,
        prop: Proposal,
        dec: SelectionDecision,
        slot: dict[int, int],
        action_json: list[dict[str, Any]],
        done: dict[str, str],
        counts: dict[str, int],
        steps: list[Step] | None = None,
    ) -> Any:
        """External feedback on the selected candidate(s), in order until one solves the task; each
        observation becomes a pair record. Returns the task's advanced state. ``steps``: the
        evaluations computed ahead (:meth:`_run_selected`), written here in the same order."""
        t, k, state = prop.task_id, prop.cycle, prop.state
        for n, i in enumerate(dec.selected):
            step = steps[n] if steps is not None else None
            if step is not None:
                step.held_evaluate.flush()
                obs = step.observation
            else:
                obs = self.state.env.evaluate(t, state, prop.actions[i])
            self.state.ledger.spend(
                EXTERNAL_FEEDBACK, obs.cost, reason="online test call", cycle=k, task_id=t
            )
            pair = PairRecord(
                t,
                k,
                prop.state_json,
                action_json[slot[i]],
                prop.preds.get(i),
                obs,
                self.state.policy.version,
                self.state.predictor.version if self.state.predictor else None,
                prop.split,
            )
            self.state.history.append(pair)
            if pair.split == "gate" and not self.state.held_out:
                self.state.gate_cache.setdefault(
                    self.state.gate_key(t, prop.state_json, action_json[slot[i]]), obs
                )
            self.state.records.append(
                "observation", {"task_id": t, "index": i, "pair": pair.to_json()}, cycle=k
            )
            counts["executed"] += 1
            if step is not None:
                step.held_advance.flush()
                state = step.state
            else:
                state = self.state.env.advance(t, state, prop.actions[i], obs)
            if obs.solved:
                done[t] = "solved"
                break
        return state
