"""Dreaming-based policy improvement: propose revisions, replay them on every tree, deploy the argmax.

Candidates are policy sources of any kind — the portfolio family's parameters (the built-in
:class:`ParamMutationProposer`), policy programs written by a model (replayed only in a sandbox) or
built policies; a candidate that fails (its reason, tree and round recorded) is never deployed.

π0 (the deployed policy, unchanged) is always candidate 0 and wins ties, so the replay score of the
deployed policy never goes down (monotonic non-regression on the replay objective; the real online
result can still regress — the replay-to-real gap, which the experiment records per round).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from rsi_workbench.replay.policies import ExplorationPolicy, PortfolioParams, PortfolioPolicy
from rsi_workbench.replay.sandboxed import POLICY_LIMITS, PolicyFailure, PolicyProgram, SandboxedPolicy
from rsi_workbench.replay.simulator import IllegalBatch, LegalSet, PolicyScore, score_policy
from rsi_workbench.replay.tree import DiscoveryTree
from rsi_workbench.sandbox import Limits

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

    Satisfies :class:`rsi_workbench.agents.Proposer` with ``context = (params, history)`` (a
    :class:`DreamContext` unpacks so); one proposer among others — the policy writer
    (:class:`~rsi_workbench.replay.policy_writer.PolicyWriter`) proposes policy code instead. π0 outside
    the family (a program, another policy) has no parameters to step: nothing is proposed.
    """

    def propose(self, context: Any, k: int, rng: random.Random) -> list[PortfolioParams]:
        params, _history = context
        if isinstance(params, PortfolioPolicy):
            params = params.params
        if not isinstance(params, PortfolioParams):
            return []
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


PolicySource = Any
"""What a proposer returns and ``dream`` scores: :class:`PortfolioParams` (the parametric family),
a :class:`PolicyProgram` (untrusted code, replayed in a sandbox) or any built
:class:`ExplorationPolicy`."""


def as_policy(
    source: PolicySource, name: str, *, limits: Limits = POLICY_LIMITS
) -> ExplorationPolicy | SandboxedPolicy:
    """The exploration policy a candidate source stands for (a program: a sandboxed policy)."""
    if isinstance(source, PortfolioParams):
        return PortfolioPolicy(source, name=name)
    if isinstance(source, PolicyProgram):
        return SandboxedPolicy(source, name=name, limits=limits)
    if isinstance(source, ExplorationPolicy):
        return source
    raise TypeError(
        f"not a policy source: {type(source).__name__} (PortfolioParams, PolicyProgram or a policy)"
    )


class DreamContext:
    """What a proposer is given: π0, the history, π0's replay record (``record``: its
    :class:`PolicyScore`) and the replay's ``W``, ``beta1``, ``beta2``. It unpacks as the
    ``(current, history)`` pair proposers written for the parametric family expect."""

    def __init__(
        self,
        current: PolicySource,
        history: Sequence[DiscoveryTree],
        record: PolicyScore,
        *,
        W: int,
        beta1: float,
        beta2: float,
    ):
        self.current, self.history, self.record = current, list(history), record
        self.W, self.beta1, self.beta2 = W, beta1, beta2

    def __iter__(self) -> Iterator[Any]:
        return iter((self.current, self.history))

    def __getitem__(self, i: int) -> Any:
        return (self.current, self.history)[i]

    def __len__(self) -> int:
        return 2


@dataclass(frozen=True)
class DreamResult:
    """One dreaming step: every candidate's replay score and the deployed choice (index 0 = π0).

    ``failures[m]`` is ``None`` for a candidate that replayed on every tree, or the
    :class:`PolicyFailure` (kind, reason, tree, round) that disqualified it: a failed candidate has
    V undefined and ranks below every candidate that replayed, so it is never deployed over π0.
    """

    candidates: list[Any]
    scores: list[PolicyScore]
    chosen: int
    failures: list[PolicyFailure | None] = field(default_factory=list)

    @property
    def V(self) -> list[float | None]:
        """V^m per candidate (``None`` = undefined: some tree revealed no valid node, or it failed)."""
        return [s.V for s in self.scores]


def _failed_score(name: str, n_trees: int, beta1: float, beta2: float, u: float | None) -> PolicyScore:
    """The score of a failed candidate: undefined, ranked below any candidate that replayed."""
    return PolicyScore(name, beta1, beta2, None, [], u, n_trees, (-math.inf, -n_trees - 1, -math.inf))


def score_candidate(
    source: PolicySource,
    name: str,
    history: Sequence[DiscoveryTree],
    W: int,
    beta1: float,
    beta2: float,
    *,
    undefined_V: float | None = None,
    limits: Limits = POLICY_LIMITS,
    node_budget: int | None = None,
    legal: LegalSet = "recorded",
) -> tuple[PolicyScore, PolicyFailure | None]:
    """Replay one candidate on every tree; a sandboxed program that fails (or any policy whose batch
    is illegal) is a failed candidate with its reason, tree and round — never an exception."""
    policy = as_policy(source, name, limits=limits)
    try:
        return (
            score_policy(
                history,
                policy,
                W,
                beta1,
                beta2,
                undefined_V=undefined_V,
                node_budget=node_budget,
                legal=legal,
            ),
            None,
        )
    except PolicyFailure as failure:
        return _failed_score(name, len(history), beta1, beta2, undefined_V), failure
    except IllegalBatch as e:  # a built-in or in-process policy: no round bookkeeping, say so
        illegal = PolicyFailure("illegal_batch", str(e), tree=None, round=None)
        return _failed_score(name, len(history), beta1, beta2, undefined_V), illegal
    finally:
        if isinstance(policy, SandboxedPolicy):
            policy.close()


def dream(
    current: PolicySource,
    history: Sequence[DiscoveryTree],
    *,
    W: int,
    beta1: float,
    beta2: float,
    M: int,
    rng: random.Random,
    proposer: Any = None,
    undefined_V: float | None = None,
    limits: Limits = POLICY_LIMITS,
    node_budget: int | None = None,
    legal: LegalSet = "recorded",
) -> DreamResult:
    """Replay π0 and M−1 proposed revisions on all trees; deploy ``argmax V^m``, ties going to π0.

    ``current`` (π0) and the proposals are policy sources (:func:`as_policy`): parameters of the
    portfolio family (``ParamMutationProposer``, the default), policy programs (a policy writer;
    each replayed in a sandbox session per tree) or built policies. The proposer gets a
    :class:`DreamContext` holding π0's replay record. The argmax compares :attr:`PolicyScore.key`
    (:func:`~rsi_workbench.replay.simulator.rank_key`): with every V_i defined that is plain V^m; a
    tree on which a candidate revealed no valid node has V_i undefined, which counts as the declared
    penalty ``undefined_V`` — by default worse than any defined value (fewer undefined trees win,
    then the mean over the defined ones); a failed candidate ranks below all. Nothing is read from
    unrevealed nodes. ``node_budget`` and ``legal`` are the replay's per-tree budget and legal set
    (:meth:`~rsi_workbench.replay.simulator.ReplaySimulator.run`), the same for every candidate.
    """
    proposer = proposer or ParamMutationProposer()
    rb: dict[str, Any] = {"node_budget": node_budget, "legal": legal}
    s0, f0 = score_candidate(
        current, "cand0", history, W, beta1, beta2, undefined_V=undefined_V, limits=limits, **rb
    )
    ctx = DreamContext(current, history, s0, W=W, beta1=beta1, beta2=beta2)
    cands: list[Any] = [current, *proposer.propose(ctx, max(0, M - 1), rng)]
    scores, failures = [s0], [f0]
    for i, c in enumerate(cands[1:], start=1):
        s, f = score_candidate(
            c, f"cand{i}", history, W, beta1, beta2, undefined_V=undefined_V, limits=limits, **rb
        )
        scores.append(s)
        failures.append(f)
    chosen = 0
    for i, s in enumerate(scores):
        if s.key > scores[chosen].key:  # strict: a tie never displaces π0
            chosen = i
    return DreamResult(cands, scores, chosen, failures)


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
