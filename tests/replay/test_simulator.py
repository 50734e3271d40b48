"""The paper's worked W=2 example, illegal batches, and prefix-only views."""

from __future__ import annotations

import pytest
from replay_helpers import worked_tree

from rsi_workbench.replay import (
    ROOT,
    DiscoveryTree,
    IllegalBatch,
    Node,
    TreeView,
    replay,
    replay_objective,
    rescore,
    score_policy,
)
from rsi_workbench.replay.policies import BreadthFirst, GreedyDeepestBest, IndependentRoots, PortfolioPolicy


class ConservativeA:
    """Test double for the paper's policy A: one node per round, always the newest leaf (r only at start)."""

    name = "A"

    def plan_grid(self, history):
        return (None, None)

    def select_batch(self, view: TreeView, W: int) -> list[str]:
        if not len(view):
            return [ROOT]
        leaves = [n for n in view.legal() if n != ROOT]
        return [max(leaves, key=lambda n: view.node(n).created_seq)] if leaves else []


class AggressiveB:
    """Test double for the paper's policy B: r at most once per round plus every continuable leaf, up to W."""

    name = "B"

    def plan_grid(self, history):
        return (None, None)

    def select_batch(self, view: TreeView, W: int) -> list[str]:
        batch = [ROOT] if view.capacity(ROOT) else []
        batch += [n for n in view.legal() if n != ROOT]
        return batch[:W]


def test_worked_example_replays_exactly_as_written():
    tree = worked_tree()
    b = replay(tree, AggressiveB(), W=2)
    assert b.rounds == [[(ROOT, "v1")], [(ROOT, "v2"), ("v1", "v1a")], [("v2", "v2a"), ("v1a", "v1a1")]]
    a = replay(tree, ConservativeA(), W=2)
    assert a.rounds == [[(ROOT, "v1")], [("v1", "v1a")], [("v1a", "v1a1")]]
    assert (a.n, a.k, a.quality) == (3, 3, 0.58)
    assert (b.n, b.k, b.quality) == (5, 3, 0.60)


def test_worked_example_objective_values():
    tree = worked_tree()
    va = replay(tree, ConservativeA(), W=2).value(0.05, 0.1)
    vb = replay(tree, AggressiveB(), W=2).value(0.05, 0.1)
    assert va == pytest.approx(0.53, abs=1e-12)
    assert round(vb, 4) == 0.5167
    assert va > vb  # "conservative but precise" beats "aggressive but wasteful"
    s = score_policy([tree, tree], AggressiveB(), 2, 0.05, 0.1)
    assert s.V == pytest.approx(vb)
    assert rescore(s.per_tree, 0.05, 0.1) == pytest.approx(vb)
    assert rescore(s.per_tree, 0.0, 0.0) == pytest.approx(0.60)
    assert replay_objective(0.6, 5, 0, 0.0, 1.0) == pytest.approx(5.6)  # max(1, k) guards an empty replay


class Scripted:
    """Test double: plays a fixed list of batches."""

    name = "scripted"

    def __init__(self, batches):
        self.batches = list(batches)

    def plan_grid(self, history):
        return (None, None)

    def select_batch(self, view, W):
        return self.batches.pop(0) if self.batches else []


@pytest.mark.parametrize(
    "batches, match",
    [
        ([[ROOT, ROOT, ROOT]], "exceeds W"),
        ([["v1"]], "not a revealed node"),  # v1 is not revealed yet
        ([[ROOT], ["v1", "v1"]], "only r may repeat"),
        ([[ROOT, ROOT], [ROOT]], "nothing left to reveal"),  # r has only two children
        ([[ROOT], ["v1"], ["v1"]], "nothing left to reveal"),  # v1 is no longer a leaf
        ([[ROOT], ["nope"]], "not a revealed node"),
    ],
)
def test_illegal_batches_are_rejected(batches, match):
    with pytest.raises(IllegalBatch, match=match):
        replay(worked_tree(), Scripted(batches), W=2)


def test_root_may_repeat_to_open_branches_and_empty_batch_stops():
    tr = replay(worked_tree(), Scripted([[ROOT, ROOT], []]), W=2)
    assert tr.rounds == [[(ROOT, "v1"), (ROOT, "v2")]]
    assert tr.quality == 0.55


class Spy:
    """Test double recording everything a policy can reach through its view."""

    name = "spy"

    def __init__(self, all_ids):
        self.all_ids = set(all_ids)
        self.seen: list[set[str]] = []

    def plan_grid(self, history):
        return (None, None)

    def select_batch(self, view, W):
        self.seen.append({v.id for v in view.nodes()} | set(view.legal()))
        assert not hasattr(view, "tree") and not hasattr(view, "nodes_all")
        for attr in vars(view).values():  # nothing in the view holds the full tree
            assert not isinstance(attr, DiscoveryTree)
        shown = {v.id for v in view.nodes()}
        for hidden in self.all_ids - shown:
            with pytest.raises(KeyError):
                view.node(hidden)  # unrevealed nodes cannot be read, not even by id
        return [n for n in view.legal()][:1]


def test_policy_cannot_see_unrevealed_nodes():
    tree = worked_tree()
    spy = Spy(tree.nodes)
    tr = replay(tree, spy, W=2)
    revealed = set()
    for seen, rnd in zip(spy.seen, tr.rounds + [[]]):
        assert seen <= revealed | {ROOT}
        revealed |= {v for _, v in rnd}


def test_grid_limits_width_and_depth():
    tr = replay(worked_tree(), IndependentRoots(), W=2, grid=(1, 2))
    assert set(tr.revealed) == {"v1", "v1a"}


@pytest.mark.parametrize(
    "policy", [IndependentRoots(), GreedyDeepestBest(), BreadthFirst(), PortfolioPolicy()]
)
def test_builtin_policies_replay_legally(policy):
    tr = replay(worked_tree(), policy, W=2)
    assert 1 <= tr.n <= 5
    assert all(len(r) <= 2 for r in tr.rounds)


def test_general_mode_for_multi_child_trees():
    nodes = [
        Node("a", ROOT, 0, 1, 0.1, True),
        Node("b", "a", 1, 2, 0.2, True),
        Node("c", "a", 2, 2, 0.3, True),
    ]
    tree = DiscoveryTree.from_nodes(nodes)
    assert tree.mode() == "general"
    with pytest.raises(ValueError, match="general"):
        replay(tree, Scripted([]), W=2, mode="chain")
    tr = replay(tree, Scripted([[ROOT], ["a"], ["a"]]), W=2)  # a node's children open in later rounds
    assert tr.rounds[1:] == [[("a", "b")], [("a", "c")]]
    assert tr.quality == 0.3
