"""Online exploration: a policy grows a real discovery tree, one agent call per attempt.

The online rollout obeys the replay's legal set (``A(T) = {r} ∪ leaves``, within the planned grid),
so every tree it records replays in chain mode. Attempts of a batch fan out through the executor
seam (W parallel workers); results come back to this driver process, which alone appends events
and spends one ``agent_calls`` unit on the budget ledger per attempt.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rsi_workbench.budget import AGENT_CALLS, BudgetLedger
from rsi_workbench.domains.math import AttemptResult, DiscoveryTask, run_attempt
from rsi_workbench.execute import Executor
from rsi_workbench.replay.policies import ExplorationPolicy
from rsi_workbench.replay.simulator import Grid, TreeView, check_batch
from rsi_workbench.replay.tree import ROOT, DiscoveryTree, Node


def attempt_seed(seed: int, tree_index: int, created_seq: int) -> int:
    """A reproducible per-attempt seed, independent of worker scheduling."""
    return int(np.random.SeedSequence([seed, tree_index, created_seq]).generate_state(1)[0])


@dataclass
class OnlineTree:
    """A tree being grown: its nodes (creation order), their solution states, and the policy's view."""

    index: int
    grid: Grid
    root_state: Any = None
    nodes: list[Node] = field(default_factory=list)
    states: dict[str, Any] = field(default_factory=dict)
    view: TreeView = field(init=False)

    def __post_init__(self) -> None:
        self.view = TreeView(width=self.grid[0], depth=self.grid[1])
        for v in self.nodes:  # resuming: replay the recorded prefix into the view
            self.view._reveal(v, v.round)
            self.view.round = max(self.view.round, v.round)

    def legal_capacity(self, W: int) -> dict[str, int]:
        """Online legal set: r while the grid allows a new branch, and every leaf within the depth."""
        view = self.view
        width, depth = self.grid
        cap = {ROOT: W if width is None else max(0, min(W, width - len(view.branches())))}
        for v in self.nodes:
            if not view.children(v.id) and (depth is None or view.depth_of(v.id) < depth):
                cap[v.id] = 1
        return cap

    def add(self, node: Node, state: Any) -> None:
        self.nodes.append(node)
        self.states[node.id] = state
        self.view._reveal(node, node.round)

    def state_of(self, nid: str) -> Any:
        return self.root_state if nid == ROOT else self.states[nid]

    def to_tree(self, **kw: Any) -> DiscoveryTree:
        return DiscoveryTree.from_nodes(self.nodes, **kw)


def explore_online(
    task: DiscoveryTask,
    policy: ExplorationPolicy,
    tree: OnlineTree,
    *,
    W: int,
    calls: int,
    executor: Executor,
    seed: int,
    ledger: BudgetLedger | None = None,
    store_state: Callable[[Any], str | None] = lambda s: None,
    on_node: Callable[[Node, AttemptResult], None] | None = None,
    on_round_end: Callable[[], None] | None = None,
) -> OnlineTree:
    """Grow ``tree`` with ``policy`` for at most ``calls`` attempts (fewer if the policy stops)."""
    used = len(tree.nodes)
    while used < calls:
        room = calls - used
        if ledger is not None:
            room = min(room, int(ledger.remaining(AGENT_CALLS)))
        if room <= 0:
            break
        w = min(W, room)
        tree.view._set_legal(tree.legal_capacity(w))
        if not tree.view.legal():
            break
        batch = check_batch(tree.view, policy.select_batch(tree.view, w), w)
        if not batch:
            break
        rnd = tree.view.round + 1
        jobs = []
        for j, parent in enumerate(batch):
            seq = len(tree.nodes) + j
            jobs.append(
                (
                    parent,
                    seq,
                    executor.submit(
                        run_attempt, task, tree.state_of(parent), attempt_seed(seed, tree.index, seq)
                    ),
                )
            )
        for parent, seq, fut in jobs:
            res: AttemptResult = fut.result()
            ev = res.evaluation
            node = Node(
                id=f"t{tree.index}n{seq}",
                parent=parent,
                created_seq=seq,
                round=rnd,
                score=None if ev is None else ev.score,
                valid=res.valid,
                fail_class=res.fail_class,
                error=res.error,
                payload=store_state(res.state),
                meta={
                    "value": None if ev is None else ev.value,
                    "reason": "" if ev is None else ev.reason,
                    "move": res.move,
                    "seconds": round(res.seconds, 4),
                    **{f"opt_{k}": v for k, v in res.info.items()},
                },
            )
            if ledger is not None:
                ledger.spend(AGENT_CALLS, 1, reason=f"attempt {node.id}", cycle=tree.index, node=node.id)
            tree.add(node, res.state)
            if on_node is not None:
                on_node(node, res)
        tree.view.round = rnd
        used = len(tree.nodes)
        if on_round_end is not None:
            on_round_end()
    return tree
