"""Dreaming-based policy improvement: propose revisions, replay them on every tree, deploy the argmax.

π0 (the deployed policy, unchanged) is always candidate 0 and wins ties, so the replay score of the
deployed policy never goes down (monotonic non-regression on the replay objective; the real online
result can still regress — the replay-to-real gap, which the experiment records per round).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rsi_workbench.replay.policies import PortfolioParams, PortfolioPolicy
from rsi_workbench.replay.simulator import PolicyScore, score_policy
from rsi_workbench.replay.tree import DiscoveryTree

#: how the built-in proposer may move each parameter (a structured mutation, not random sampling of values)
_STEPS: dict[str, tuple[str, Any]] = {
    "explore_slots": ("int", 1),
    "recovery": ("bool", None),
    "improve_eps": ("scale", 3.0),
    "stall_patience": ("int", 1),
    "hard_fail_streak": ("int", 1),
    "weak_margin": ("scale", 2.0),
    "weak_depth": ("int", 1),
    "stop_patience": ("int", 1),
    "width": ("int", 1),
    "depth": ("int", 3),
    "grid_rules": ("bool", None),
}


class ParamMutationProposer:
    """Built-in proposer: each revision changes one or two rules/parameters of the portfolio policy.

    Satisfies :class:`rsi_workbench.agents.Proposer` with ``context = (params, history)``; a
    model-backed proposer writing policy code can replace it.
    """

    def propose(self, context: Any, k: int, rng: random.Random) -> list[PortfolioParams]:
        params, _history = context
        out: list[PortfolioParams] = []
        seen = {params.model_dump_json()}
        for _ in range(20 * k):
            if len(out) >= k:
                break
            cand = mutate(params, rng)
            key = cand.model_dump_json()
            if key not in seen:
                seen.add(key)
                out.append(cand)
        return out


def mutate(params: PortfolioParams, rng: random.Random) -> PortfolioParams:
    """One structured mutation: 1–2 parameters stepped up/down (ints), scaled (floats) or flipped (bools)."""
    data = params.model_dump()
    for name in rng.sample(sorted(_STEPS), rng.choice([1, 1, 2])):
        kind, step = _STEPS[name]
        if kind == "bool":
            data[name] = not data[name]
        elif kind == "int":
            data[name] = data[name] + rng.choice([-1, 1]) * step
        else:
            data[name] = data[name] * (step if rng.random() < 0.5 else 1 / step)
    field_info = PortfolioParams.model_fields
    for name, v in data.items():  # clip into the declared ranges
        meta = {type(m).__name__: m for m in field_info[name].metadata}
        if "Ge" in meta:
            v = max(v, meta["Ge"].ge)
        if "Le" in meta:
            v = min(v, meta["Le"].le)
        data[name] = v
    return PortfolioParams(**data)


@dataclass(frozen=True)
class DreamResult:
    """One dreaming step: every candidate's replay score and the deployed choice (index 0 = π0)."""

    candidates: list[PortfolioParams]
    scores: list[PolicyScore]
    chosen: int

    @property
    def V(self) -> list[float | None]:
        """V^m per candidate (``None`` = undefined: some tree revealed no valid node)."""
        return [s.V for s in self.scores]


def dream(
    params: PortfolioParams,
    history: Sequence[DiscoveryTree],
    *,
    W: int,
    beta1: float,
    beta2: float,
    M: int,
    rng: random.Random,
    proposer: ParamMutationProposer | None = None,
    undefined_V: float | None = None,
) -> DreamResult:
    """Replay π0 and M−1 proposed revisions on all trees; deploy ``argmax V^m``, ties going to π0.

    The argmax compares :attr:`PolicyScore.key` (:func:`~rsi_workbench.replay.simulator.rank_key`):
    with every V_i defined that is plain V^m; a tree on which a candidate revealed no valid node has
    V_i undefined, which counts as the declared penalty ``undefined_V`` — by default worse than any
    defined value (fewer undefined trees win, then the mean over the defined ones). Nothing is read
    from unrevealed nodes.
    """
    proposer = proposer or ParamMutationProposer()
    cands = [params, *proposer.propose((params, history), max(0, M - 1), rng)]
    scores = [
        score_policy(history, PortfolioPolicy(c, name=f"cand{i}"), W, beta1, beta2, undefined_V=undefined_V)
        for i, c in enumerate(cands)
    ]
    chosen = 0
    for i, s in enumerate(scores):
        if s.key > scores[chosen].key:  # strict: a tie never displaces π0
            chosen = i
    return DreamResult(cands, scores, chosen)


def adaptive_betas(
    tree: DiscoveryTree, root_score: float | None, *, c1: float, ratio: float
) -> tuple[float, float]:
    """Recalibrate β from the last online round: β1 = c1 · (gain of that round) / N, β2 = ratio · β1.

    The write-up describes an adaptive default β recalibrated from the last real result but gives no
    formula; this is our concrete rule: a node's cost is a fixed fraction of the average gain per node.
    """
    best = tree.best()
    n = max(1, len(tree))
    if best is None or best.score is None:
        return 0.0, 0.0
    ref = root_score
    if ref is None:
        ok = [v.score for v in tree if v.valid and v.score is not None]
        ref = ok[0] if ok else best.score
    gain = max(0.0, best.score - ref)
    b1 = c1 * gain / n
    return b1, ratio * b1
