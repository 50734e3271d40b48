"""What the loop knows between decisions: the task splits, the records H_k (pair records, proposal
groups, imagined records, gate executions), the current pair (θ_k, φ_k) and the budgets
(:class:`LoopState`), and how predictions and observations are scored (:class:`Readout`).

The loop's collaborators (:mod:`~rsi_workbench.protocol.feedback`,
:mod:`~rsi_workbench.protocol.gate_data`, :mod:`~rsi_workbench.protocol.learning`,
:mod:`~rsi_workbench.protocol.retention`) each hold this one state object and read or append to it;
none of them reads the declared settings from it: the settings a decision reads are passed to its
collaborator when the loop is composed (:meth:`~rsi_workbench.protocol.loop.Loop.open`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rsi_workbench.budget import BudgetLedger
from rsi_workbench.protocol.metrics import brier, gaussian_nll
from rsi_workbench.protocol.prequential import VersionRecord, prequential_split
from rsi_workbench.protocol.selection import UtilitySpec, utility
from rsi_workbench.protocol.snapshot import SnapshotChain
from rsi_workbench.protocol.spec import (
    ImaginedRecord,
    Observation,
    PairRecord,
    Policy,
    Prediction,
    Predictor,
    TaskSpec,
)
from rsi_workbench.protocol.splits import assert_disjoint, digest, observation_split, split_tasks
from rsi_workbench.records import Run

__all__ = ["GateDataMode", "LoopState", "ProposalGroup", "Readout", "digest"]

GateDataMode = Literal["tasks", "held_out_observations", "prequential"]


@dataclass
class ProposalGroup:
    """One proposal group: the candidates of one task at one state (gate data, audit, D_sim)."""

    task_id: str
    cycle: int
    state: dict[str, Any]
    signature: str
    actions: list[dict[str, Any]]


@dataclass(frozen=True)
class Readout:
    """How a prediction–observation pair is scored: ``kind`` (``classes``: 5-class Brier over
    per-unit probabilities; ``binary``: one unit per prediction, the predicted probability of the
    utility term ``binary_term`` against its observed 0/1 value, binary Brier; ``gaussian``:
    Gaussian NLL per utility term) and the utility weights ``utility_spec`` an observation's utility
    is read with (``ProtocolSettings.readout``, ``.utility`` and ``.binary_reliability.term``)."""

    kind: Literal["classes", "binary", "gaussian"]
    utility_spec: UtilitySpec
    binary_term: str = "p_all_pass"

    def units(self, t: str, pred: Prediction, obs: Observation) -> list[tuple[Any, ...]]:
        """Scored units of one prediction–observation pair: (task, version, probs, label) for a class
        readout, (task, version, [p, 1 − p], 0 if the term was observed else 1) for a binary one,
        (task, version, mean, std, y) per utility term for a gaussian one."""
        if self.kind == "gaussian":
            return [
                (t, pred.version, float(ms[0]), float(ms[1]), float(obs.utility_terms[term]))
                for term, ms in pred.gaussian.items()
                if term in obs.utility_terms
            ]
        if self.kind == "binary":
            p = min(1.0, max(0.0, float(pred.utility_terms[self.binary_term])))
            y = float(obs.utility_terms[self.binary_term]) >= 0.5
            return [(t, pred.version, [p, 1.0 - p], 0 if y else 1)]
        return [(t, pred.version, pr, lab) for pr, lab in zip(pred.probs, obs.labels, strict=False)]

    def score(self, units: Sequence[tuple[Any, ...]]) -> float | None:
        """The readout's proper score over units (5-class Brier, binary Brier, or Gaussian NLL)."""
        if self.kind == "gaussian":
            return gaussian_nll([(u[2], u[3], u[4]) for u in units])
        b = brier([u[2] for u in units], [u[3] for u in units])
        return b / 2.0 if b is not None and self.kind == "binary" else b  # two classes: 2 (p − y)²

    @property
    def score_name(self) -> str:
        return "gaussian_nll" if self.kind == "gaussian" else "brier"

    def observed_utility(self, obs: Observation) -> float:
        """R_d of an observation's utility terms (eq. 7, no uncertainty penalty)."""
        return utility(obs.utility_terms, self.utility_spec)

    def predicted_utility(self, pred: Prediction) -> float:
        """R_d of a prediction: its utility terms less the uncertainty penalty (eq. 7)."""
        return utility(pred.utility_terms, self.utility_spec, pred.uncertainty)


class LoopState:
    """The loop's state: the data splits (``gate_data``, ``gate_fraction``, ``gate_window`` of
    :class:`~rsi_workbench.protocol.settings.ProtocolSettings`), the records H_k, the current pair
    and the budget ledger; :class:`~rsi_workbench.protocol.loop.Loop` runs the cycle over it."""

    def __init__(
        self,
        spec: TaskSpec,
        run: Run,
        seed: int,
        *,
        gate_data: GateDataMode = "tasks",
        gate_fraction: float = 0.3,
        gate_window: int | None = None,
    ):
        self.spec, self.records, self.seed = spec, run, seed
        self.env = spec.environment
        self.gate_fraction, self.gate_window = gate_fraction, gate_window
        # held out: gates re-predict recorded observations of every task (observation_split or the
        # prequential window) and execute nothing
        self.held_out = gate_data in ("held_out_observations", "prequential")
        self.prequential = gate_data == "prequential"
        if self.held_out:  # every task is split by rounds instead (observation_split)
            self.splits = {"update": list(spec.tasks), "gate": []}
        else:
            self.splits = split_tasks(list(spec.tasks), gate_fraction, seed)
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
        self.groups: list[ProposalGroup] = []
        self.imagined: list[ImaginedRecord] = []
        self.gate_cache: dict[str, Observation] = {}
        self.versions: dict[str, Any] = {}  # prequential: predictor version → VersionRecord
        self.gate_plans: dict[str, Any] = {}  # prequential: version → GatePlan of the latest gate
        self.policy: Policy = spec.policy
        self.predictor: Predictor | None = spec.predictor
        self.policy_sha = ""
        self.predictor_sha: str | None = None
        self.finished = False
        self.snapshots = SnapshotChain(run.artifacts)
        self.ledger: BudgetLedger

    def split(self, t: str, k: int) -> str:
        """The split ("update" | "gate") of task ``t``'s feedback in cycle ``k`` ("prequential": first
        gate data, then update data, decided per decision by the prequential window)."""
        if self.prequential:
            return "prequential"
        return observation_split(k, self.gate_fraction) if self.held_out else self.split_of[t]

    def prequential_split(self, k: int) -> tuple[list[PairRecord], list[PairRecord]]:
        """(U_k, G_k) of :mod:`~rsi_workbench.protocol.prequential` for the decision of cycle k."""
        return prequential_split(self.history, k, self.gate_fraction, self.gate_window)

    def update_records(self, k: int) -> list[PairRecord]:
        """The update data H_k of cycle k's decision: the update split, or the prequential U_k (every
        observation that has left the gate window)."""
        if self.prequential:
            return self.prequential_split(k)[0]
        return [p for p in self.history if p.split == "update"]

    def held_out_records(self, k: int | None = None) -> list[PairRecord]:
        """The gate records: the held-out rounds, or the prequential window G_k of cycle k's decision."""
        if self.prequential:
            return self.prequential_split(self.k + 1 if k is None else k)[1]
        return [p for p in self.history if p.split == "gate"]

    def assert_disjoint_data(self, upd: list[PairRecord], k: int | None = None) -> None:
        """The update, gate and audit data are disjoint by task and use; asserted every cycle."""
        if self.held_out:
            assert_disjoint(
                update={(p.task_id, p.cycle, digest(p.action)) for p in upd},
                gate={(p.task_id, p.cycle, digest(p.action)) for p in self.held_out_records(k)},
                audit={(t, "audit", "") for t in self.spec.tasks},
            )
        else:
            assert_disjoint(
                update={(p.task_id, "feedback") for p in upd},
                gate={(g.task_id, "feedback") for g in self.groups if self.split_of[g.task_id] == "gate"},
                audit={(t, "audit") for t in self.spec.tasks},
            )

    def version_record(self, version: str) -> VersionRecord:
        """The creation cycle and training ids of a predictor version (unknown: the initial prior)."""
        return self.versions.get(version) or VersionRecord(version, 0, frozenset())

    def note_version(self, payload: dict[str, Any], k: int) -> None:
        """Remember a proposed predictor's creation cycle and training ids (a ``predictor_proposed``
        payload of a prequential run), so its gates only admit honest predictions."""
        if "trained_on" in payload:
            self.versions[payload["to"]] = VersionRecord(payload["to"], k, frozenset(payload["trained_on"]))

    def store_components(self, policy: Policy, predictor: Predictor | None) -> None:
        """Store components as artifacts and reload them, so fresh and resumed runs use identical objects."""
        self.policy_sha = self.records.artifacts.put(policy.to_bytes(), name=f"policy-{policy.version}")
        self.predictor_sha = (
            self.records.artifacts.put(predictor.to_bytes(), name=f"predictor-{predictor.version}")
            if predictor
            else None
        )
        self.load_components(self.policy_sha, self.predictor_sha)

    def load_components(self, pol_sha: str, pred_sha: str | None) -> None:
        self.policy_sha, self.predictor_sha = pol_sha, pred_sha
        self.policy = self.spec.load_policy(self.records.artifacts.get(pol_sha))
        if pred_sha is not None:
            if self.spec.load_predictor is None:
                raise ValueError("the task spec has a predictor but no load_predictor")
            self.predictor = self.spec.load_predictor(self.records.artifacts.get(pred_sha))
        else:
            self.predictor = None

    def gate_key(self, t: str, state: dict[str, Any], action: dict[str, Any]) -> str:
        return digest([t, self.env.signature(t, self.env.load_state(state)), action])
