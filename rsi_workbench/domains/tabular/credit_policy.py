"""Leads for the credit-information experiment: an ε-random behaviour Lead and a small theta+ policy.

:class:`EpsilonLead` is the behaviour policy the training campaigns run: with probability ``epsilon``
it picks a uniformly random operation among those with a valid decision, then a uniformly random
valid (parents, direction) for it; otherwise it is the built-in :class:`RuleLead`. Its decisions
therefore vary, which is what lets a credit-weighted fit learn anything.

theta+ (DiscoveryRSI eq. 8, here as a multinomial policy rather than a language model) is
:class:`OperationPolicy`: a softmax over the four operations of a linear function of
:func:`state_features` (the Lead's structured state: no text), fitted by scikit-learn's
``LogisticRegression`` with the decisions' training weights as ``sample_weight``. It chooses the
*operation*; :func:`rule_choice` then picks the parents and direction for it as the rule Lead would.
A policy is plain JSON (coefficients, scaler, feature names, provenance): no pickle.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from rsi_workbench.discovery.lead import (
    InvalidLeadDecision,
    LeadDecision,
    LeadState,
    NodeSummary,
    RuleLead,
    validate_lead_decision,
)
from rsi_workbench.discovery.records import OPERATIONS
from rsi_workbench.domains.tabular.stateful import repairable

FEATURES: tuple[str, ...] = (
    "bias_progress",  # episode / n_episodes
    "n_nodes",
    "explored_share",
    "best_weighted",
    "mean_weighted",
    "last_weighted",
    "last_supports",
    "last_weakens",
    "last_failed_or_blocked",
    "last_progress_substantive",
    "last_progress_repair",
    "last_progress_stale",
    "open_defects",
    "evolve_room",
    "crossover_pairs",
    "share_evolve",
    "share_repair",
    "share_crossover",
    "share_restart",
    "last_op_evolve",
    "last_op_repair",
    "last_op_crossover",
    "last_op_restart",
)


def _score(n: NodeSummary) -> float:
    return -1.0 if n.weighted is None else n.weighted


def _try(d: LeadDecision, state: LeadState) -> LeadDecision | None:
    try:
        return validate_lead_decision(d, state)
    except InvalidLeadDecision:
        return None


def candidates(state: LeadState, op: str) -> list[LeadDecision]:
    """Every valid decision with operation ``op`` in ``state`` (crossover: pairs of one direction;
    repair: versions with a defect, and on a stateful planted direction falsified ones)."""
    if op not in state.allowed_operations():
        return []
    raw: list[LeadDecision] = []
    if op == "restart":
        raw = [LeadDecision("restart", (), d, "candidate") for d in state.directions]
    elif op == "repair":
        raw = [
            LeadDecision("repair", (n.hypothesis_id,), n.direction, "candidate")
            for n in state.nodes
            if (n.defects and not n.repaired) or repairable(n)
        ]
    elif op == "evolve":
        room = state.harness.roles.max_children
        raw = [
            LeadDecision("evolve", (n.hypothesis_id,), n.direction, "candidate")
            for n in state.nodes
            if n.children < room
        ]
    elif op == "crossover":
        ns = list(state.nodes)
        for i, a in enumerate(ns):
            for b in ns[i + 1 :]:
                if a.direction == b.direction and not (
                    a.hypothesis_id in b.ancestors or b.hypothesis_id in a.ancestors
                ):
                    raw.append(
                        LeadDecision(
                            "crossover", (a.hypothesis_id, b.hypothesis_id), a.direction, "candidate"
                        )
                    )
    return [d for d in (_try(x, state) for x in raw) if d is not None]


def rule_choice(state: LeadState, op: str) -> LeadDecision | None:
    """The rule Lead's parents and direction for operation ``op`` (None when ``op`` has no valid one)."""
    cands = candidates(state, op)
    if not cands:
        return None
    per_dir = Counter(n.direction for n in state.nodes)
    if op == "restart":
        return min(cands, key=lambda d: (per_dir[d.direction], state.directions.index(d.direction)))
    if op == "crossover":
        pair = RuleLead._crossover_pair(state)
        if pair is not None:
            chosen = _try(
                LeadDecision(
                    "crossover", (pair[0].hypothesis_id, pair[1].hypothesis_id), pair[0].direction, "policy"
                ),
                state,
            )
            if chosen is not None:
                return chosen
        return max(cands, key=lambda d: sum(_score(state.node(p)) for p in d.parents))
    # evolve / repair: the best-scored parent, latest first on ties
    return max(cands, key=lambda d: (_score(state.node(d.parents[0])), state.node(d.parents[0]).episode))


def state_features(state: LeadState) -> list[float]:
    """The Lead's structured state as numbers, in :data:`FEATURES` order (scores scaled to 0-1)."""
    nodes = list(state.nodes)
    scored = [n.weighted for n in nodes if n.weighted is not None]
    last = max(nodes, key=lambda n: (n.episode, n.hypothesis_id)) if nodes else None
    per_dir = {n.direction for n in nodes}
    ops = state.operation_counts
    total = max(1, sum(ops.values()))
    last_op = last.operation if last else ""
    room = state.harness.roles.max_children
    pairs = 0
    for i, a in enumerate(nodes):
        for b in nodes[i + 1 :]:
            if a.direction == b.direction and not (
                a.hypothesis_id in b.ancestors or b.hypothesis_id in a.ancestors
            ):
                pairs += 1
    return [
        state.episode / max(1, state.n_episodes),
        math.log1p(len(nodes)),
        len(per_dir) / max(1, len(state.directions)),
        (max(scored) / 10.0) if scored else 0.0,
        (sum(scored) / len(scored) / 10.0) if scored else 0.0,
        (last.weighted / 10.0) if last and last.weighted is not None else 0.0,
        float(bool(last and last.verdict == "supports")),
        float(bool(last and last.verdict == "weakens")),
        float(bool(last and last.verdict in ("failed", "blocked"))),
        float(bool(last and last.progress == "substantive_progress")),
        float(bool(last and last.progress == "necessary_repair")),
        float(bool(last and last.progress in ("duplicate", "insufficient_evidence"))),
        math.log1p(sum(1 for n in nodes if n.defects and not n.repaired)),
        math.log1p(sum(1 for n in nodes if n.children < room)),
        math.log1p(pairs),
        *(ops.get(o, 0) / total for o in OPERATIONS),
        *(float(last_op == o) for o in OPERATIONS),
    ]


@dataclass
class EpsilonLead:
    """Behaviour Lead: an ε-random valid decision (uniform operation, then uniform parents), else the
    rule Lead. The campaign's seeded ``rng`` makes it reproducible."""

    epsilon: float = 0.35
    name: str = "epsilon-lead"

    def __post_init__(self) -> None:
        if not 0.0 <= self.epsilon <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got {self.epsilon}")
        self.name = f"epsilon-lead:{self.epsilon:g}"

    def decide(self, state: LeadState, rng: random.Random) -> LeadDecision:
        """A random valid decision with probability ``epsilon``, else the rule Lead's."""
        if rng.random() < self.epsilon:
            options = {op: candidates(state, op) for op in OPERATIONS}
            ops = [op for op in OPERATIONS if options[op]]
            if ops:
                op = rng.choice(ops)
                d = rng.choice(options[op])
                return LeadDecision(d.operation, d.parents, d.direction, "epsilon-random")
        return RuleLead().decide(state, rng)


@dataclass
class OperationPolicy:
    """theta+: softmax over operations of ``coef · z + intercept`` with ``z`` the scaled features."""

    classes: list[str]
    coef: list[list[float]]
    intercept: list[float]
    mean: list[float]
    scale: list[float]
    features: list[str] = field(default_factory=lambda: list(FEATURES))
    meta: dict[str, Any] = field(default_factory=dict)

    def probabilities(self, x: list[float]) -> dict[str, float]:
        """P(operation | state features)."""
        z = [(v - m) / s for v, m, s in zip(x, self.mean, self.scale, strict=True)]
        if len(self.classes) == 1:
            return {self.classes[0]: 1.0}
        logits = [
            sum(c * v for c, v in zip(row, z, strict=True)) + b
            for row, b in zip(self.coef, self.intercept, strict=True)
        ]
        if len(self.classes) == 2 and len(logits) == 1:  # scikit-learn's binary form
            logits = [-logits[0] / 2, logits[0] / 2]
        top = max(logits)
        ex = [math.exp(v - top) for v in logits]
        tot = sum(ex)
        return {c: e / tot for c, e in zip(self.classes, ex, strict=True)}

    def to_json(self) -> dict[str, Any]:
        return {
            "classes": self.classes,
            "coef": self.coef,
            "intercept": self.intercept,
            "mean": self.mean,
            "scale": self.scale,
            "features": self.features,
            "meta": self.meta,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> OperationPolicy:
        """Rebuild a recorded policy; a feature list other than :data:`FEATURES` is refused."""
        if list(d["features"]) != list(FEATURES):
            raise ValueError(f"policy features {d['features']} differ from this code's {list(FEATURES)}")
        return cls(
            list(d["classes"]),
            [list(r) for r in d["coef"]],
            list(d["intercept"]),
            list(d["mean"]),
            list(d["scale"]),
            list(d["features"]),
            dict(d.get("meta", {})),
        )


@dataclass
class PolicyLead:
    """A Lead driven by an :class:`OperationPolicy`: the most probable operation that has a valid
    decision, with the rule Lead's parents for it (deterministic given the state)."""

    policy: OperationPolicy
    name: str = "policy-lead"
    sample: bool = False  # True: sample the operation (seeded by the campaign's rng) instead of arg-max

    def decide(self, state: LeadState, rng: random.Random) -> LeadDecision:
        """The arg-max (or, with ``sample``, a sampled) operation among those with a valid decision,
        then :func:`rule_choice`."""
        probs = self.policy.probabilities(state_features(state))
        if self.sample:
            valid = {op: d for op in OPERATIONS if (d := rule_choice(state, op)) is not None}
            if valid:
                ops = list(valid)
                weights = [probs.get(op, 0.0) for op in ops]
                op = rng.choices(ops, weights=weights)[0] if sum(weights) > 0 else rng.choice(ops)
                d = valid[op]
                return LeadDecision(
                    d.operation, d.parents, d.direction, f"policy sample p={probs.get(op, 0.0):.2f}"
                )
        order = sorted(OPERATIONS, key=lambda o: (-probs.get(o, 0.0), OPERATIONS.index(o)))
        for op in order:
            d = rule_choice(state, op)
            if d is not None:
                return LeadDecision(d.operation, d.parents, d.direction, f"policy p={probs.get(op, 0.0):.2f}")
        return RuleLead().decide(state, rng)


def fit_policy(
    X: list[list[float]], y: list[str], weights: list[float], *, C: float = 1.0, seed: int = 0
) -> OperationPolicy:
    """Eq. 8 as a weighted multinomial fit: maximise sum_i omega_i log p(a_i | s_i) (+ an L2 term).

    Weights are rescaled to mean 1 over the decisions (so the three arms share one regularisation
    strength); decisions with zero weight drop out. Needs two operations with positive weight."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    Xa, w = np.asarray(X, dtype=float), np.asarray(weights, dtype=float)
    if len(Xa) != len(y) or len(y) != len(w):
        raise ValueError(f"fit_policy: {len(Xa)} states, {len(y)} operations, {len(w)} weights")
    if (w < 0).any() or not np.isfinite(w).all():
        raise ValueError("fit_policy: weights must be finite and non-negative")
    keep = w > 0
    labels = sorted({a for a, k in zip(y, keep, strict=True) if k})
    if len(labels) < 2:
        raise ValueError(f"fit_policy: operations with positive weight {labels}; need at least two")
    mean = Xa.mean(axis=0)
    scale = Xa.std(axis=0)
    scale[scale == 0] = 1.0
    Z = (Xa[keep] - mean) / scale
    wk = w[keep] * (len(w) / w.sum())
    ya = np.asarray(y)[keep]
    model = LogisticRegression(C=C, max_iter=5000, random_state=seed).fit(Z, ya, sample_weight=wk)
    return OperationPolicy(
        [str(c) for c in model.classes_],
        model.coef_.tolist(),
        model.intercept_.tolist(),
        mean.tolist(),
        scale.tolist(),
        meta={"C": C, "seed": seed, "n_decisions": len(y), "n_weighted": int(keep.sum())},
    )
