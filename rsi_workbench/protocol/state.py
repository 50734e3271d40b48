"""What the loop knows between decisions: the task splits, the records H_k (pair records, proposal
groups, imagined records, gate executions), the current pair (θ_k, φ_k) and the budgets, plus the
readout's scoring units. Feedback, learning and retention (their own modules) all read this state.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rsi_workbench.budget import BudgetLedger
from rsi_workbench.protocol.metrics import brier, gaussian_nll
from rsi_workbench.protocol.selection import resolve_rule, utility
from rsi_workbench.protocol.settings import ProtocolSettings
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
from rsi_workbench.protocol.splits import assert_disjoint, observation_split, split_tasks
from rsi_workbench.records import Run


def digest(obj: Any) -> str:
    """A short stable digest of any JSON-able value (gate-cache keys, data-split items)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclass
class ProposalGroup:
    """One proposal group: the candidates of one task at one state (gate data, audit, D_sim)."""

    task_id: str
    cycle: int
    state: dict[str, Any]
    signature: str
    actions: list[dict[str, Any]]


class LoopState:
    """The loop's state and the readout's scoring; :class:`~rsi_workbench.protocol.loop.Loop` runs the cycle."""

    def __init__(
        self, spec: TaskSpec, run: Run, settings: ProtocolSettings, seed: int, progress: bool = False
    ):
        self.spec, self.records, self.settings, self.seed, self.progress = spec, run, settings, seed, progress
        self.env = spec.environment
        self.rule = resolve_rule(settings.rule)
        # held out: gates re-predict recorded observations of every task (observation_split or the
        # prequential window) and execute nothing
        self.held_out = settings.gate_data in ("held_out_observations", "prequential")
        self.prequential = settings.gate_data == "prequential"
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

    def _observed_utility(self, obs: Observation) -> float:
        return utility(obs.utility_terms, self.settings.utility)

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

    def _gate_key(self, t: str, state: dict[str, Any], action: dict[str, Any]) -> str:
        return digest([t, self.env.signature(t, self.env.load_state(state)), action])
