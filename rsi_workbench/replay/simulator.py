"""The replay simulator: a recorded discovery tree is read back under an alternative policy.

Semantics (Dream-RSI, "online rollout vs offline replay"):

* the legal continue set is ``A(T) = {r} ∪ leaves``; a batch holds at most ``W`` legal nodes;
* choosing ``r`` reveals r's earliest-created unrevealed child; choosing a revealed node reveals
  its stored child; ``r`` alone may appear several times in one batch, each occurrence opening the
  next unopened branch (the paper's baselines open W branches in their first round); any other
  repeated node (a ``duplicate``), an illegal node, or a node with nothing left to reveal is an
  :class:`IllegalBatch`;
* an empty batch stops the replay; it also stops when nothing is left to reveal.

**Node budget** (``node_budget=B``, optional): the replay of one tree stops once ``B`` choices were
made, and a round's batch holds at most ``min(W, B − spent)`` nodes — exactly the online rollout's
per-tree attempt budget. Without a budget a family that never stops reveals the whole recorded tree,
so families tie in V; with ``B`` below the tree's size they reveal different subsets.

**Legal set** (``legal=``): ``"recorded"`` (the default) offers only nodes the record can continue;
``"online"`` offers the online rollout's set — ``r`` while the grid allows a new branch and every
revealed leaf within the depth (in ``general`` mode also every node with unrevealed recorded
children). A choice whose child was never recorded is an **out-of-tree choice**: nothing is revealed,
the choice is listed in :attr:`ReplayTrace.out_of_tree` (round, node), it spends one unit of the
node budget (online it would have cost an attempt) and the chosen node leaves the legal set (the
record ends there). :attr:`ReplayTrace.out_of_tree_share` is the share of choices that fell outside
the tree — the part of a policy's behaviour the replay cannot score.

``general`` mode replays imported peer trees whose nodes may have several children: choosing a node
reveals its earliest unrevealed child and a node stays legal while it has one. Only ``r`` may repeat
within one batch, in both modes: a node with several stored children opens them in later rounds.

**Prefix-only by construction**: a policy only ever holds a :class:`TreeView`, which contains the
nodes revealed so far and the legal set — never the tree. What the view shows of a revealed node is
what the online rollout would have shown: its ``created_seq`` is its reveal index in this replay,
its ``round`` the replay round, and record-timing metadata (:data:`RECORD_ORDER_META`) is dropped
(the recorded values would tell how many unrevealed attempts came in between). The legal set is the one read the replay cannot avoid (a node is continuable only if the
record holds a child for it); the view exposes membership only: ``capacity(r) <= W`` and 1 for
every other legal node, never how many unrevealed children remain. The objective is computed from
the revealed nodes alone: when none of them is valid, quality and ``V_i`` are **undefined**
(``None``), never a value read from the unrevealed tree (see :func:`score_policy`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, overload

from rsi_workbench.replay.tree import ROOT, DiscoveryTree, Node, TreeMode

if TYPE_CHECKING:
    from rsi_workbench.replay.policies import ExplorationPolicy

Grid = tuple[int | None, int | None]
LegalSet = Literal["recorded", "online"]


class IllegalBatch(ValueError):
    """A policy chose a batch outside the legal set (too large, repeated node, nothing to reveal)."""


class TreeView:
    """What a policy sees: the revealed prefix of a tree, the legal set and the grid — nothing else.

    The driver (replay simulator or online explorer) reveals nodes and sets the legal set and the
    number of branches ``r`` may still open; the view never holds a reference to the full tree.
    """

    def __init__(self, *, width: int | None = None, depth: int | None = None):
        self.width = width
        self.depth = depth
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
        if c > 1 and nid != ROOT:
            raise IllegalBatch(f"duplicate node {nid!r}: it appears {c} times; only r may repeat in a batch")
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
    quality: float | None = None  # max score over valid revealed nodes; None (undefined) if none
    best_node: str | None = None
    node_budget: int | None = None  # the per-tree budget of choices, when the replay had one
    legal: LegalSet = "recorded"
    out_of_tree: list[tuple[int, str]] = field(default_factory=list)  # (round, chosen node), nothing revealed

    @property
    def choices(self) -> int:
        """Choices made: revealed nodes plus out-of-tree choices."""
        return self.n + len(self.out_of_tree)

    @property
    def out_of_tree_share(self) -> float:
        """The share of choices whose child was never recorded (0.0 when no choice was made)."""
        return len(self.out_of_tree) / self.choices if self.choices else 0.0

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

    def value(self, beta1: float, beta2: float) -> float | None:
        """V_i, or ``None`` (undefined) when the replay revealed no valid node."""
        return replay_objective(self.quality, self.n, self.k, beta1, beta2)


@overload
def replay_objective(quality: float, n: int, k: int, beta1: float, beta2: float) -> float: ...
@overload
def replay_objective(quality: None, n: int, k: int, beta1: float, beta2: float) -> None: ...
@overload
def replay_objective(quality: float | None, n: int, k: int, beta1: float, beta2: float) -> float | None: ...
def replay_objective(quality: float | None, n: int, k: int, beta1: float, beta2: float) -> float | None:
    """V_i = max revealed valid score − β1·N_i + β2·N_i / max(1, k_i); undefined (``None``) when
    no valid node was revealed (``quality`` is ``None`` or NaN, as a recorded null reads back)."""
    if quality is None or (isinstance(quality, float) and math.isnan(quality)):
        return None
    return quality - beta1 * n + beta2 * n / max(1, k)


def _defined(v: float | None) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def mean_value(values: Sequence[float | None], undefined_V: float | None = None) -> float | None:
    """V^m = mean over trees of V_i, where an undefined V_i (no valid node revealed; ``None`` or NaN)
    counts as the declared penalty ``undefined_V``; with ``undefined_V=None`` (the default) V^m is
    undefined as soon as one V_i is. Never a value read from the tree. ``None`` for no trees."""
    vals: list[float] = []
    for v in values:
        if _defined(v):
            vals.append(float(v))  # type: ignore[arg-type]
        elif undefined_V is None:
            return None
        else:
            vals.append(float(undefined_V))
    return sum(vals) / len(vals) if vals else None


def rank_key(values: Sequence[float | None], undefined_V: float | None = None) -> tuple[float, int, float]:
    """The dreaming argmax's key for one candidate's per-tree V_i (larger is better):
    ``(V^m, −#undefined, mean of the defined V_i)``, an undefined mean counting as −∞.

    With the default ``undefined_V=None`` this is the penalty "an undefined V_i is worse than any
    defined value": a candidate with every V_i defined beats one with any undefined; among
    candidates with undefined trees, fewer undefined trees win, then the higher mean over their
    defined trees. A tree on which no candidate reveals a valid node therefore shifts every
    candidate alike. With a finite ``undefined_V``, V^m already includes the penalty.
    """
    m = mean_value(values, undefined_V)
    d = mean_value([v for v in values if _defined(v)])
    n_undef = sum(not _defined(v) for v in values)
    return (-math.inf if m is None else m, -n_undef, -math.inf if d is None else d)


#: node metadata that records *when* the original run made a node (ShinkaEvolve's ``generation`` is
#: its iteration); the replay hides it like ``created_seq`` — it would date the unrevealed attempts
RECORD_ORDER_META = frozenset({"generation", "iteration_found", "timestamp"})


def _as_revealed(node: Node, seq: int, round_: int) -> Node:
    """The node as the online rollout would show it: reveal index, replay round, no recorded timing."""
    meta = {k: v for k, v in node.meta.items() if k not in RECORD_ORDER_META}
    return replace(node, created_seq=seq, round=round_, meta=meta)


class ReplaySimulator:
    """Replays one recorded tree for one policy, deterministically (no code is re-run)."""

    def __init__(self, tree: DiscoveryTree, *, mode: TreeMode | Literal["auto"] = "auto"):
        self.tree = tree
        self.mode: TreeMode = tree.mode() if mode == "auto" else mode
        if self.mode == "chain" and tree.mode() != "chain":
            raise ValueError(
                f"tree {tree.name or tree.source} has nodes with several children; replay it in 'general' mode"
            )

    def run(
        self,
        policy: ExplorationPolicy,
        W: int,
        *,
        grid: Grid = (None, None),
        node_budget: int | None = None,
        legal: LegalSet = "recorded",
    ) -> ReplayTrace:
        """Replay the tree under ``policy`` with batches of at most ``W``; returns the trace.

        ``node_budget`` caps the choices per tree (revealed nodes plus out-of-tree choices);
        ``legal`` picks the legal set offered to the policy (see the module docstring).
        ``trace.quality`` is the best score among the *revealed* valid nodes, or ``None`` (undefined,
        and so is ``V_i``) when the replay revealed nothing or only invalid nodes.
        """
        if W < 1:
            raise ValueError(f"W must be >= 1, got {W}")
        if node_budget is not None and node_budget < 0:
            raise ValueError(f"node_budget must be >= 0, got {node_budget}")
        if legal not in ("recorded", "online"):
            raise ValueError(f"legal must be 'recorded' or 'online', got {legal!r}")
        tree = self.tree
        width, depth = grid
        view = TreeView(width=width, depth=depth)
        nxt: dict[str, int] = {}
        trace = ReplayTrace(
            tree=tree.name,
            policy=getattr(policy, "name", type(policy).__name__),
            W=W,
            grid=grid,
            node_budget=node_budget,
            legal=legal,
        )
        n_root = len(tree.children[ROOT])
        left: dict[str, int] = {ROOT: n_root if width is None else min(n_root, width)}  # unrevealed children
        ended: set[str] = set()  # nodes an out-of-tree choice took out of the legal set
        while True:
            w = W if node_budget is None else min(W, node_budget - trace.choices)
            if w <= 0:
                break
            # the view learns which nodes are legal, not how many unrevealed children they have
            if legal == "recorded":
                view._set_legal({nid: min(c, w) if nid == ROOT else min(c, 1) for nid, c in left.items()})
            else:
                view._set_legal(self._online_capacity(view, left, ended, w))
            if not view.legal():
                break
            batch = check_batch(view, policy.select_batch(view, w), w)
            if not batch:
                break
            view.round += 1
            rnd: list[tuple[str, str]] = []
            for nid in batch:
                if left.get(nid, 0) <= 0:  # "online" legal set only: the record holds no child here
                    trace.out_of_tree.append((view.round, nid))
                    ended.add(nid)
                    continue
                i = nxt.get(nid, 0)
                child = tree.children[nid][i]
                nxt[nid] = i + 1
                left[nid] -= 1
                view._reveal(_as_revealed(tree.nodes[child], len(view), view.round), view.round)
                n_kids = len(tree.children[child])
                if n_kids and (depth is None or view.depth_of(child) < depth):
                    left[child] = n_kids if self.mode == "general" else 1
                rnd.append((nid, child))
            for nid in batch:
                if left.get(nid, 1) <= 0:
                    left.pop(nid, None)
            if rnd:  # k_i counts rounds that revealed a node; an all-out-of-tree round is only listed
                trace.rounds.append(rnd)
        best = view.best()
        trace.quality = None if best is None or best.score is None else float(best.score)
        trace.best_node = None if best is None else best.id
        return trace

    def _online_capacity(
        self, view: TreeView, left: dict[str, int], ended: set[str], w: int
    ) -> dict[str, int]:
        """The online rollout's legal set on the revealed prefix (membership as online: r while the
        grid allows a new branch, every leaf within the depth), minus nodes whose record ended."""
        width, depth = view.width, view.depth
        cap: dict[str, int] = {}
        if ROOT not in ended:
            cap[ROOT] = w if width is None else max(0, min(w, width - len(view.branches())))
        for v in view.nodes():
            if v.id in ended:
                continue
            within = depth is None or view.depth_of(v.id) < depth
            if within and (not view.children(v.id) or left.get(v.id, 0) > 0):
                cap[v.id] = 1
        return cap


def replay(
    tree: DiscoveryTree,
    policy: ExplorationPolicy,
    W: int,
    *,
    grid: Grid = (None, None),
    mode: TreeMode | Literal["auto"] = "auto",
    node_budget: int | None = None,
    legal: LegalSet = "recorded",
) -> ReplayTrace:
    """Replay ``tree`` under ``policy`` (a pure function of the tree and the policy)."""
    return ReplaySimulator(tree, mode=mode).run(policy, W, grid=grid, node_budget=node_budget, legal=legal)


@dataclass(frozen=True)
class PolicyScore:
    """V^m = mean over trees of V_i, with every per-tree term kept for recomputation.

    ``V`` is ``None`` when V^m is undefined (a tree revealed no valid node and no finite
    ``undefined_V`` penalty was declared); ``n_undefined`` counts such trees and ``key`` is the
    dreaming argmax's ranking key (:func:`rank_key`).
    """

    policy: str
    beta1: float
    beta2: float
    V: float | None
    per_tree: list[dict[str, Any]]
    undefined_V: float | None = None
    n_undefined: int = 0
    key: tuple[float, int, float] = (-math.inf, 0, -math.inf)
    node_budget: int | None = None
    legal: str = "recorded"

    @property
    def out_of_tree(self) -> int:
        """Out-of-tree choices over all trees (each tree's are listed in its ``per_tree`` row)."""
        return sum(len(r.get("out_of_tree") or []) for r in self.per_tree)

    @property
    def out_of_tree_share(self) -> float:
        """The share of all choices (revealed nodes + out-of-tree) that fell outside the record."""
        choices = sum(int(r["n"]) + len(r.get("out_of_tree") or []) for r in self.per_tree)
        return self.out_of_tree / choices if choices else 0.0


def score_policy(
    trees: Sequence[DiscoveryTree],
    policy: ExplorationPolicy,
    W: int,
    beta1: float,
    beta2: float,
    *,
    mode: TreeMode | Literal["auto"] = "auto",
    use_grid: bool = True,
    undefined_V: float | None = None,
    node_budget: int | None = None,
    legal: LegalSet = "recorded",
) -> PolicyScore:
    """Replay ``policy`` on every tree of the history and average V_i (grid i planned from trees[:i]).

    A tree on which the replay reveals no valid node has V_i undefined (``None``). It enters the
    mean as the declared penalty ``undefined_V``: by default (``None``) V^m is then undefined too,
    and the dreaming argmax ranks candidates by :func:`rank_key` — an undefined V_i is worse than any
    defined one (a penalty of −∞ that still lets fewer undefined trees, then the defined mean,
    decide). A finite ``undefined_V`` is substituted for each undefined V_i in the mean instead.
    No value of an unrevealed node ever enters V. ``node_budget`` and ``legal`` are passed to every
    tree's replay; each row lists the tree's out-of-tree choices and their share.
    """
    rows: list[dict[str, Any]] = []
    Vs: list[float | None] = []
    for i, tree in enumerate(trees):
        grid = policy.plan_grid(list(trees[:i])) if use_grid else (None, None)
        tr = replay(tree, policy, W, grid=grid, mode=mode, node_budget=node_budget, legal=legal)
        v = tr.value(beta1, beta2)
        Vs.append(v)
        row: dict[str, Any] = {
            "tree": tree.name or str(i),
            "tree_index": i,
            "quality": tr.quality,
            "n": tr.n,
            "k": tr.k,
            "best_node": tr.best_node,
            "grid_width": grid[0],
            "grid_depth": grid[1],
            "V": v,
        }
        if node_budget is not None or legal != "recorded":  # rows of unbudgeted replays stay as they were
            row.update(
                node_budget=node_budget,
                legal=legal,
                out_of_tree=[list(c) for c in tr.out_of_tree],
                out_of_tree_share=tr.out_of_tree_share,
            )
        rows.append(row)
    return PolicyScore(
        policy=getattr(policy, "name", type(policy).__name__),
        beta1=beta1,
        beta2=beta2,
        V=mean_value(Vs, undefined_V),
        per_tree=rows,
        undefined_V=undefined_V,
        n_undefined=sum(v is None for v in Vs),
        key=rank_key(Vs, undefined_V),
        node_budget=node_budget,
        legal=legal,
    )


def rescore(
    per_tree: Sequence[dict[str, Any]], beta1: float, beta2: float, *, undefined_V: float | None = None
) -> float | None:
    """Recompute V^m for other β1, β2 from recorded per-tree (quality, n, k) — no replay needed.
    An undefined quality stays undefined; it enters the mean as in :func:`score_policy`."""
    vals = [replay_objective(r["quality"], int(r["n"]), int(r["k"]), beta1, beta2) for r in per_tree]
    return mean_value(vals, undefined_V)
