"""Prequential gate data (``gate_data: prequential``): every observation is first an honest test
point for the predictor versions that predicted it before it arrived, and only then training data.

The rule, at the decision of cycle k (after that cycle's feedback round), over the history H_k:

- the **gate window** G_k is every observation of the last w_k cycles, w_k = ``gate_window`` or, when
  unset, max(1, ⌊f·k + ½⌋) with f = ``gate_fraction`` (so k − w_k never decreases: an observation
  leaves the window once and for all);
- the **update data** U_k is every earlier observation (cycle ≤ k − w_k): the adaptation trigger and
  the candidate φ' = Adapt(φ_k, U_k) see only these, so the candidate's training cut-off is k − w_k
  and every observation in G_k arrived after it;
- a version v (incumbent φ_k or candidate φ') is scored on each observation o ∈ G_k with v's own
  prediction **recorded before o arrived** — admitted only when v was made at a decision before o's
  cycle (created(v) < cycle(o)) and o ∉ train(v); any other recorded prediction (one made after
  its observation) is refused. Where v has no admissible recorded prediction it re-predicts o from
  o's recorded (state, action), which is honest only because o ∉ train(v);
- G_k ∩ train(v) = ∅ for both versions and U_k ∩ G_k = ∅ are asserted
  (:class:`~rsi_workbench.protocol.splits.SplitOverlap` names the overlapping observation ids), and
  the audit set stays apart as always. The decision's update, gate and audit data are thus disjoint,
  while over the run every observation but the last window's trains the predictor.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from rsi_workbench.protocol.spec import PairRecord, Prediction
from rsi_workbench.protocol.splits import SplitOverlap, digest


def observation_id(p: PairRecord) -> str:
    """A stable id of one observation in H_k: task, cycle and the executed action's digest."""
    return f"{p.task_id}:{p.cycle}:{digest(p.action)}"


@dataclass(frozen=True)
class VersionRecord:
    """What gate data must know of a predictor version: the decision (cycle) that made it — 0 for the
    initial predictor — and the ids of the observations it was trained on (inherited ones included)."""

    version: str
    created: int
    trained_on: frozenset[str] = frozenset()


def window_cycles(k: int, gate_fraction: float, gate_window: int | None) -> int:
    """w_k: how many of the latest cycles form the gate window at the decision of cycle k."""
    w = gate_window if gate_window is not None else max(1, math.floor(gate_fraction * k + 0.5))
    return max(1, min(int(w), k))


def prequential_split(
    history: Sequence[PairRecord], k: int, gate_fraction: float, gate_window: int | None = None
) -> tuple[list[PairRecord], list[PairRecord]]:
    """(U_k, G_k): update data up to the cut-off k − w_k, and the gate window after it."""
    cut = k - window_cycles(k, gate_fraction, gate_window)
    return [p for p in history if p.cycle <= cut], [p for p in history if cut < p.cycle <= k]


@dataclass
class GatePlan:
    """One version's predictions on the gate window: admitted recorded ones, the observations it must
    re-predict, and the recorded predictions refused (made after their observation arrived)."""

    version: str
    recorded: dict[str, Prediction] = field(default_factory=dict)
    repredict: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def admissible(p: PairRecord, v: VersionRecord) -> bool:
    """Whether ``p``'s recorded prediction is an honest prequential test of ``v``: made by ``v``
    before the observation arrived (``v`` existed at an earlier decision) and not trained on it."""
    return (
        p.prediction is not None
        and p.prediction.version == v.version
        and v.created < p.cycle
        and observation_id(p) not in v.trained_on
    )


def plan_gate_predictions(window: Sequence[PairRecord], v: VersionRecord) -> GatePlan:
    """How ``v`` is scored on the gate window (see the module rule); asserts window ∩ train(v) = ∅."""
    ids = [observation_id(p) for p in window]
    common = sorted(set(ids) & v.trained_on)
    if common:
        raise SplitOverlap(
            f"gate window and the training data of {v.version!r} overlap in {len(common)} "
            f"observation(s): {common[:5]}"
        )
    plan = GatePlan(v.version)
    for oid, p in zip(ids, window, strict=True):
        if admissible(p, v):
            assert p.prediction is not None
            plan.recorded[oid] = p.prediction
        else:
            if p.prediction is not None and p.prediction.version == v.version:
                plan.refused.append(oid)
            plan.repredict.append(oid)
    return plan
