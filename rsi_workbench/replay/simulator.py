"""The replay simulator: a recorded discovery tree is read back under an alternative policy.

Semantics (Dream-RSI, "online rollout vs offline replay"):

* the legal continue set is ``A(T) = {r} ∪ leaves``; a batch holds at most ``W`` legal nodes;
* choosing ``r`` reveals r's earliest-created unrevealed child; choosing a revealed node reveals
  its stored child; ``r`` alone may appear several times in one batch, each occurrence opening the
  next unopened branch (the paper's baselines open W branches in their first round); any other
  repeated node, an illegal node, or a node with nothing left to reveal is an :class:`IllegalBatch`;
* an empty batch stops the replay; it also stops when nothing is left to reveal.

``general`` mode replays imported peer trees whose nodes may have several children: choosing a node
reveals its earliest unrevealed child, a node is legal while it has one, and any node may repeat up
to its number of unrevealed children. **Prefix-only by construction**: a policy only ever holds a
:class:`TreeView`, which contains the nodes revealed so far and the legal set — never the tree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from rsi_workbench.replay.tree import ROOT, DiscoveryTree, Node, TreeMode

if TYPE_CHECKING:
    from rsi_workbench.replay.policies import ExplorationPolicy

Grid = tuple[int | None, int | None]


class IllegalBatch(ValueError):
    """A policy chose a batch outside the legal set (too large, repeated node, nothing to reveal)."""


class TreeView:
    """What a policy sees: the revealed prefix of a tree, the legal set and the grid — nothing else.

    The driver (replay simulator or online explorer) reveals nodes and sets the legal set and the
    number of branches ``r`` may still open; the view never holds a reference to the full tree.
    """

    def __init__(self, *, width: int | None = None, depth: int | None = None, repeat_any: bool = False):
        self.width = width
        self.depth = depth
        self.repeat_any = repeat_any
        self.round = 0  # non-empty rounds completed so far
        self._nodes: dict[str, Node] = {}
        self._order: list[str] = []
        self._children: dict[str, list[str]] = {ROOT: []}
        self._depth: dict[str, int] = {ROOT: 0}
        self._branch: dict[str, str] = {}
        self._revealed_round: dict[str, int] = {}
        self._capacity: dict[str, int] = {}
        self._by_branch: dict[str, list[str]] = {}
        self._best: Node | None = None

    # -- driver side ------------------------------------------------------------------------------
    def _reveal(self, node: Node, round_: int) -> None:
        self._nodes[node.id] = node
        self._order.append(node.id)
        self._children.setdefault(node.parent, []).append(node.id)
        self._children.setdefault(node.id, [])
        self._depth[node.id] = self._depth[node.parent] + 1
        self._branch[node.id] = node.id if node.parent == ROOT else self._branch[node.parent]
        self._revealed_round[node.id] = round_
        self._by_branch.setdefault(self._branch[node.id], []).append(node.id)
        if node.valid and node.score is not None and math.isfinite(node.score):
            if self._best is None or node.score > self._best.score:  # type: ignore[operator]
                self._best = node

    def _set_legal(self, capacity: dict[str, int]) -> None:
        self._capacity = {k: v for k, v in capacity.items() if v > 0}

    # -- policy side ------------------------------------------------------------------------------
    def nodes(self) -> list[Node]:
        """Revealed nodes (``r`` excluded), in the order they were revealed."""
        return [self._nodes[i] for i in self._order]

    def node(self, nid: str) -> Node:
        return self._nodes[nid]

    def __len__(self) -> int:
        return len(self._order)

    def children(self, nid: str) -> list[str]:
        return list(self._children.get(nid, []))

    def depth_of(self, nid: str) -> int:
        return self._depth[nid]

    def branch_of(self, nid: str) -> str:
        """The root child that ``nid`` descends from (its branch)."""
        return self._branch[nid]

    def branches(self) -> list[str]:
        return list(self._children[ROOT])

    def branch_nodes(self, branch: str) -> list[Node]:
        return [self._nodes[i] for i in self._by_branch.get(branch, [])]

    def revealed_round(self, nid: str) -> int:
        """The round (1-based, of this replay or online run) in which ``nid`` was revealed."""
        return self._revealed_round[nid]

    def legal(self) -> list[str]:
        """The legal continue set: ``r`` (while it can open a branch) and continuable nodes."""
        return list(self._capacity)

    def capacity(self, nid: str) -> int:
        """How many times ``nid`` may appear in the next batch (``r``: branches it may still open)."""
        return self._capacity.get(nid, 0)

    def best(self) -> Node | None:
        """The best valid revealed node (earliest on ties)."""
        return self._best


def check_batch(view: TreeView, batch: Sequence[str], W: int) -> list[str]:
    """Validate a batch against the view's legal set; returns it as a list or raises IllegalBatch."""
    batch = list(batch)
    if len(batch) > W:
        raise IllegalBatch(f"batch of {len(batch)} nodes exceeds W={W}: {batch}")
    counts: dict[str, int] = {}
    for nid in batch:
        counts[nid] = counts.get(nid, 0) + 1
    for nid, c in counts.items():
        cap = view.capacity(nid)
        if cap == 0:
            known = nid == ROOT or nid in view._nodes
            why = "has nothing left to reveal / is not in A(T)" if known else "is not a revealed node"
            raise IllegalBatch(f"node {nid!r} {why}; legal: {view.legal()}")
        if c > 1 and nid != ROOT and not view.repeat_any:
            raise IllegalBatch(f"node {nid!r} appears {c} times; only r may repeat in a batch")
        if c > cap:
            raise IllegalBatch(f"node {nid!r} appears {c} times but can be continued only {cap} more time(s)")
    return batch


@dataclass
class ReplayTrace:
    """What a replay revealed: per round, the (chosen, revealed) pairs; plus the objective's inputs."""

    tree: str
    policy: str
    W: int
    grid: Grid
    rounds: list[list[tuple[str, str]]] = field(default_factory=list)
    quality: float = 0.0  # max score over valid revealed nodes (or the tree's floor if none)
    best_node: str | None = None

    @property
    def revealed(self) -> list[str]:
        return [v for rnd in self.rounds for _, v in rnd]

    @property
    def n(self) -> int:
        """N_i: revealed nodes, r excluded."""
        return sum(len(rnd) for rnd in self.rounds)

    @property
    def k(self) -> int:
        """k_i: non-empty rounds."""
        return len(self.rounds)

    def value(self, beta1: float, beta2: float) -> float:
        return replay_objective(self.quality, self.n, self.k, beta1, beta2)


def replay_objective(quality: float, n: int, k: int, beta1: float, beta2: float) -> float:
    """V_i = max revealed valid score − β1·N_i + β2·N_i / max(1, k_i)."""
    return quality - beta1 * n + beta2 * n / max(1, k)


def quality_floor(tree: DiscoveryTree) -> float:
    """The quality credited when no valid node is revealed: the tree's lowest valid score (0 if none)."""
    ok = [v.score for v in tree.nodes.values() if v.valid and v.score is not None and math.isfinite(v.score)]
    return float(min(ok)) if ok else 0.0


class ReplaySimulator:
    """Replays one recorded tree for one policy, deterministically (no code is re-run)."""

    def __init__(self, tree: DiscoveryTree, *, mode: TreeMode | Literal["auto"] = "auto"):
        self.tree = tree
        self.mode: TreeMode = tree.mode() if mode == "auto" else mode
        if self.mode == "chain" and tree.mode() != "chain":
            raise ValueError(
                f"tree {tree.name or tree.source} has nodes with several children; replay it in 'general' mode"
            )

    def run(self, policy: ExplorationPolicy, W: int, *, grid: Grid = (None, None)) -> ReplayTrace:
        """Replay the tree under ``policy`` with batches of at most ``W``; returns the trace."""
        if W < 1:
            raise ValueError(f"W must be >= 1, got {W}")
        tree = self.tree
        width, depth = grid
        view = TreeView(width=width, depth=depth, repeat_any=self.mode == "general")
        nxt: dict[str, int] = {}
        trace = ReplayTrace(
            tree=tree.name, policy=getattr(policy, "name", type(policy).__name__), W=W, grid=grid
        )
        n_root = len(tree.children[ROOT])
        cap: dict[str, int] = {ROOT: n_root if width is None else min(n_root, width)}
        while True:
            view._set_legal(cap)
            if not view.legal():
                break
            batch = check_batch(view, policy.select_batch(view, W), W)
            if not batch:
                break
            view.round += 1
            rnd: list[tuple[str, str]] = []
            for nid in batch:
                i = nxt.get(nid, 0)
                child = tree.children[nid][i]
                nxt[nid] = i + 1
                cap[nid] -= 1
                view._reveal(tree.nodes[child], view.round)
                left = len(tree.children[child])
                if left and (depth is None or view.depth_of(child) < depth):
                    cap[child] = left if self.mode == "general" else 1
                rnd.append((nid, child))
            for nid in batch:
                if cap.get(nid, 1) <= 0:
                    cap.pop(nid, None)
            trace.rounds.append(rnd)
        best = view.best()
        trace.quality = (
            float(best.score) if best is not None and best.score is not None else quality_floor(tree)
        )
        trace.best_node = None if best is None else best.id
        return trace


def replay(
    tree: DiscoveryTree,
    policy: ExplorationPolicy,
    W: int,
    *,
    grid: Grid = (None, None),
    mode: TreeMode | Literal["auto"] = "auto",
) -> ReplayTrace:
    """Replay ``tree`` under ``policy`` (a pure function of the tree and the policy)."""
    return ReplaySimulator(tree, mode=mode).run(policy, W, grid=grid)


@dataclass(frozen=True)
class PolicyScore:
    """V^m = mean over trees of V_i^m, with every per-tree term kept for recomputation."""

    policy: str
    beta1: float
    beta2: float
    V: float
    per_tree: list[dict[str, Any]]


def score_policy(
    trees: Sequence[DiscoveryTree],
    policy: ExplorationPolicy,
    W: int,
    beta1: float,
    beta2: float,
    *,
    mode: TreeMode | Literal["auto"] = "auto",
    use_grid: bool = True,
) -> PolicyScore:
    """Replay ``policy`` on every tree of the history and average V_i (grid i planned from trees[:i])."""
    rows: list[dict[str, Any]] = []
    Vs: list[float] = []
    for i, tree in enumerate(trees):
        grid = policy.plan_grid(list(trees[:i])) if use_grid else (None, None)
        tr = replay(tree, policy, W, grid=grid, mode=mode)
        Vs.append(tr.value(beta1, beta2))
        rows.append(
            {
                "tree": tree.name or str(i),
                "tree_index": i,
                "quality": tr.quality,
                "n": tr.n,
                "k": tr.k,
                "best_node": tr.best_node,
                "grid_width": grid[0],
                "grid_depth": grid[1],
                "V": tr.value(beta1, beta2),
            }
        )
    V = sum(Vs) / len(Vs) if Vs else float("nan")
    return PolicyScore(
        policy=getattr(policy, "name", type(policy).__name__), beta1=beta1, beta2=beta2, V=V, per_tree=rows
    )


def rescore(per_tree: Sequence[dict[str, Any]], beta1: float, beta2: float) -> float:
    """Recompute V^m for other β1, β2 from recorded per-tree (quality, n, k) — no replay needed."""
    vals = [replay_objective(r["quality"], int(r["n"]), int(r["k"]), beta1, beta2) for r in per_tree]
    return sum(vals) / len(vals) if vals else float("nan")
