"""Exploration policies: which nodes to continue each round, and the grid (width, depth) per tree.

``ExplorationPolicy`` is the swappable strategy. Built-ins: the fixed baselines Dream-RSI contrasts
(:class:`IndependentRoots` — many independent roots at once, :class:`GreedyDeepestBest`,
:class:`BreadthFirst`) and the parametric :class:`PortfolioPolicy` (exploitation / exploration /
at most one recovery slot, the four failure classes judged from prefix evidence only, grid planning).
Every decision is deterministic: no random sampling.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from pydantic import Field

from rsi_workbench.config import StrictModel
from rsi_workbench.replay.simulator import Grid, TreeView
from rsi_workbench.replay.tree import ROOT, DiscoveryTree, Node

FailureClass = Literal[
    "healthy", "hard_unrecoverable", "repairable", "weak_underexplored", "repeatedly_unpromising"
]
#: raw node outcomes that count as failures (``invalid`` without an error is a weak result, not a failure)
FAILURES = {"optimizer_failure", "timeout", "exception", "error", "failed"}


@runtime_checkable
class ExplorationPolicy(Protocol):
    """Plans the grid before a tree and picks each round's batch from the revealed prefix."""

    name: str

    def plan_grid(self, history: Sequence[DiscoveryTree]) -> Grid: ...

    def select_batch(self, view: TreeView, W: int) -> list[str]: ...


def _ok(v: Node) -> bool:
    return v.valid and v.score is not None and math.isfinite(v.score)


def _failed(v: Node) -> bool:
    return bool(v.error) or (v.fail_class in FAILURES)


def _roots(view: TreeView, k: int) -> list[str]:
    return [ROOT] * min(k, view.capacity(ROOT))


def _leaves(view: TreeView) -> list[str]:
    return [n for n in view.legal() if n != ROOT]


# -- fixed baselines -------------------------------------------------------------------------------
@dataclass
class IndependentRoots:
    """W independent branches at once, each refined every round; new roots only fill idle workers."""

    name: str = "independent_roots"

    def plan_grid(self, history: Sequence[DiscoveryTree]) -> Grid:
        return (None, None)

    def select_batch(self, view: TreeView, W: int) -> list[str]:
        leaves = sorted(_leaves(view), key=lambda n: view.node(n).created_seq)[:W]
        return leaves + _roots(view, W - len(leaves))


@dataclass
class GreedyDeepestBest:
    """Always continue the single best-scoring leaf (deepest on ties); open a root when none is valid."""

    name: str = "greedy_deepest_best"

    def plan_grid(self, history: Sequence[DiscoveryTree]) -> Grid:
        return (None, None)

    def select_batch(self, view: TreeView, W: int) -> list[str]:
        leaves = [n for n in _leaves(view) if _ok(view.node(n))]
        if leaves:
            return [
                max(leaves, key=lambda n: (view.node(n).score, view.depth_of(n), -view.node(n).created_seq))
            ]
        if view.capacity(ROOT):
            return [ROOT]
        rest = _leaves(view)
        return rest[:1]


@dataclass
class BreadthFirst:
    """Open up to ``width`` roots first, then continue the shallowest leaves (oldest first)."""

    width: int = 8
    name: str = "breadth_first"

    def plan_grid(self, history: Sequence[DiscoveryTree]) -> Grid:
        return (self.width, None)

    def select_batch(self, view: TreeView, W: int) -> list[str]:
        batch = _roots(view, W)
        leaves = sorted(_leaves(view), key=lambda n: (view.depth_of(n), view.node(n).created_seq))
        return batch + leaves[: W - len(batch)]


# -- the parametric portfolio policy ---------------------------------------------------------------
class PortfolioParams(StrictModel):
    """The knobs the dreaming proposer mutates (each one names a rule of the batch portfolio or grid)."""

    explore_slots: int = Field(
        default=1, ge=0, le=8, description="slots per batch for new roots / weak branches"
    )
    recovery: bool = Field(default=True, description="spend at most one slot on a repairable failure")
    improve_eps: float = Field(default=1e-4, ge=0, description="relative gain that counts as a new success")
    stall_patience: int = Field(
        default=3, ge=1, le=50, description="non-improving steps before a lagging branch is unpromising"
    )
    hard_fail_streak: int = Field(
        default=2, ge=1, le=20, description="consecutive failures before hard-unrecoverable"
    )
    weak_margin: float = Field(
        default=0.01, ge=0, description="relative gap to the best that makes a branch weak"
    )
    weak_depth: int = Field(
        default=2, ge=1, le=50, description="a weak branch shallower than this is under-explored"
    )
    stop_patience: int = Field(
        default=0, ge=0, le=50, description="stop after this many rounds without success (0 = never)"
    )
    width: int = Field(default=4, ge=1, le=64, description="base grid width (root branches per tree)")
    depth: int = Field(default=12, ge=1, le=200, description="base grid depth (attempts per branch)")
    grid_rules: bool = Field(default=True, description="adapt (width, depth) from the history's trees")
    max_width: int = Field(default=16, ge=1, le=64)
    max_depth: int = Field(default=60, ge=1, le=200)


@dataclass(frozen=True)
class BranchState:
    """Prefix evidence about one branch, from its revealed nodes only."""

    branch: str
    leaf: str
    depth: int
    best: float | None
    since_best: int  # revealed nodes after the branch's best (or all, when none is valid)
    fail_streak: int  # consecutive failures at the tail
    failure_class: FailureClass


class PortfolioPolicy:
    """Exploitation / exploration / ≤1 recovery slot over branches classified from prefix evidence.

    Classes are recomputed every round from the revealed prefix, so a branch re-opens as soon as it
    shows a new success (its streaks reset). ``invalid`` without an error is a weak result, never a failure.
    """

    def __init__(self, params: PortfolioParams | None = None, name: str = "portfolio"):
        self.params = params or PortfolioParams()
        self.name = name

    def __repr__(self) -> str:
        return f"PortfolioPolicy({self.name!r}, {self.params!r})"

    # -- failure classes ---------------------------------------------------------------------------
    def classify(self, view: TreeView) -> dict[str, BranchState]:
        """Each revealed branch's state and failure class (hard / repairable / weak / unpromising / healthy)."""
        p = self.params
        best_all = view.best()
        g = None if best_all is None else best_all.score
        out: dict[str, BranchState] = {}
        for b in view.branches():
            chain = view.branch_nodes(b)
            leaf = chain[-1]
            best, since, streak = None, 0, 0
            for v in chain:
                if _ok(v) and (best is None or v.score > best + p.improve_eps * abs(best)):  # type: ignore[operator]
                    best, since = v.score, 0
                else:
                    since += 1
                streak = streak + 1 if _failed(v) else 0
            d = view.depth_of(leaf.id)
            lagging = g is not None and (best is None or best < g - p.weak_margin * abs(g))
            cls: FailureClass
            if streak >= p.hard_fail_streak:
                cls = "hard_unrecoverable"
            elif streak > 0:
                cls = "repairable"
            elif lagging and since >= p.stall_patience:
                cls = "repeatedly_unpromising"
            elif lagging and d < p.weak_depth:
                cls = "weak_underexplored"
            else:
                cls = "healthy"
            out[b] = BranchState(b, leaf.id, d, best, since, streak, cls)
        return out

    def _stalled_rounds(self, view: TreeView) -> int:
        best, last = None, 0
        for v in view.nodes():
            if _ok(v) and (best is None or v.score > best + self.params.improve_eps * abs(best)):  # type: ignore[operator]
                best, last = v.score, view.revealed_round(v.id)
        return view.round - last

    # -- the batch portfolio -----------------------------------------------------------------------
    def select_batch(self, view: TreeView, W: int) -> list[str]:
        p = self.params
        if p.stop_patience and view.round and self._stalled_rounds(view) >= p.stop_patience:
            return []
        if view.best() is None and not any(not _failed(v) for v in view.nodes()):
            batch = _roots(view, W)  # nothing has worked yet: open branches
            return batch or _leaves(view)[:W]
        states = [s for s in self.classify(view).values() if view.capacity(s.leaf)]
        rank = lambda s: (-(s.best if s.best is not None else -math.inf), -s.depth)  # noqa: E731
        exploit = [s.leaf for s in sorted((s for s in states if s.failure_class == "healthy"), key=rank)]
        weak = [
            s.leaf for s in sorted((s for s in states if s.failure_class == "weak_underexplored"), key=rank)
        ]
        repair = [s.leaf for s in sorted((s for s in states if s.failure_class == "repairable"), key=rank)]
        explore = weak + _roots(view, W)
        n_rec = 1 if (p.recovery and repair) else 0
        n_exp = min(p.explore_slots, W - n_rec)
        n_exploit = W - n_rec - n_exp
        batch = exploit[:n_exploit] + explore[:n_exp] + repair[:n_rec]
        # never leave a worker idle: fill with the next exploitation, then exploration candidates
        for cand in exploit[n_exploit:] + explore[n_exp:]:
            if len(batch) >= W:
                break
            if cand == ROOT and batch.count(ROOT) >= view.capacity(ROOT):
                continue
            if cand != ROOT and cand in batch:
                continue
            batch.append(cand)
        return batch[:W]

    # -- grid planning -----------------------------------------------------------------------------
    def plan_grid(self, history: Sequence[DiscoveryTree]) -> Grid:
        """(width, depth) from past trees only: widen on early stalls, deepen on deep concentrated gains,
        shrink both on repeated hard failures."""
        p = self.params
        w, d = p.width, p.depth
        if not p.grid_rules:
            return (w, d)
        for tree in history:
            w, d = _grid_step(tree, w, d, p)
        return (w, d)


def _grid_step(tree: DiscoveryTree, w: int, d: int, p: PortfolioParams) -> tuple[int, int]:
    """One grid-planning rule application from one finished tree."""
    branches = tree.children[ROOT]
    if not branches:
        return w, d
    nodes = list(tree)
    fail_frac = sum(_failed(v) for v in nodes) / max(1, len(nodes))
    if fail_frac > 0.3:
        return max(1, w - 1), max(1, d - 2)
    best_tree = tree.best()
    g = None if best_tree is None else best_tree.score
    early_stall, deep_gain, leaders = 0, 0, 0
    for b in branches:
        chain = [b]
        while tree.children[chain[-1]]:
            chain.append(tree.children[chain[-1]][0])
        scores = [(i, tree.nodes[c].score) for i, c in enumerate(chain) if _ok(tree.nodes[c])]
        if not scores:
            continue
        i_best, s_best = max(scores, key=lambda t: (t[1], -t[0]))
        if i_best <= 1 and len(chain) - 1 - i_best >= p.stall_patience:
            early_stall += 1
        if i_best + 1 >= max(2, int(0.6 * len(chain))) and len(chain) >= 3:
            deep_gain += 1
        if g is not None and s_best is not None and s_best >= g - p.weak_margin * abs(g):
            leaders += 1
    if early_stall >= max(1, len(branches) // 2):
        w = w + 1
    elif deep_gain and leaders <= max(1, len(branches) // 3):
        d = d + 2
    return min(w, p.max_width), min(d, p.max_depth)


def baseline(name: str) -> ExplorationPolicy:
    """A built-in policy by name (``portfolio`` is the default-parameter portfolio policy), or a policy
    of one's own by import path ``package.module:Name`` (a class is constructed without arguments, an
    instance is used as it is; either must have ``name``, ``plan_grid`` and ``select_batch``).

    >>> baseline("breadth_first").name
    'breadth_first'
    """
    if ":" in name:
        return _imported_policy(name)
    table: dict[str, ExplorationPolicy] = {
        "independent_roots": IndependentRoots(),
        "greedy_deepest_best": GreedyDeepestBest(),
        "breadth_first": BreadthFirst(),
        "portfolio": PortfolioPolicy(),
    }
    if name not in table:
        raise ValueError(f"unknown policy {name!r}; allowed: {sorted(table)}")
    return table[name]


def _imported_policy(path: str) -> ExplorationPolicy:
    from rsi_workbench.plugins import PluginError, import_object

    try:
        obj = import_object(path)
    except PluginError as e:
        raise ValueError(f"policy {e}") from None
    if isinstance(obj, type):
        try:
            obj = obj()
        except TypeError as e:
            raise ValueError(f"policy {path!r}: cannot be constructed without arguments ({e})") from None
    missing = [m for m in ("name", "plan_grid", "select_batch") if not hasattr(obj, m)]
    if missing:
        raise ValueError(f"policy {path!r} is not an exploration policy: it has no {', '.join(missing)}")
    return obj  # type: ignore[no-any-return]


BASELINES = ("independent_roots", "greedy_deepest_best", "breadth_first")
