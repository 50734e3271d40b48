"""Node-budgeted replay: the budget is honoured, out-of-tree choices are reported, and a budget larger
than the tree changes nothing (the paper's worked example and hand-made trees)."""

from __future__ import annotations

import pytest
from replay_helpers import worked_tree

from rsi_workbench.replay import ROOT, DiscoveryTree, Node, TreeView, replay, score_policy
from rsi_workbench.replay.policies import (
    BASELINES,
    BreadthFirst,
    GreedyDeepestBest,
    IndependentRoots,
    baseline,
)


class AggressiveB:
    """The paper's policy B: r at most once per round plus every continuable leaf, up to W."""

    name = "B"

    def plan_grid(self, history):
        return (None, None)

    def select_batch(self, view: TreeView, W: int) -> list[str]:
        batch = [ROOT] if view.capacity(ROOT) else []
        batch += [n for n in view.legal() if n != ROOT]
        return batch[:W]


class BestLeaf:
    """Always the best-scoring revealed leaf (r first): online it would continue v2a, which the record never did."""

    name = "best_leaf"

    def plan_grid(self, history):
        return (None, None)

    def select_batch(self, view: TreeView, W: int) -> list[str]:
        leaves = [n for n in view.legal() if n != ROOT]
        if not leaves:
            return [ROOT] if view.capacity(ROOT) else []
        return [max(leaves, key=lambda n: view.node(n).score)]


def fan_tree(n_branches: int = 5, depth: int = 3) -> DiscoveryTree:
    """``n_branches`` chains of ``depth`` nodes; branch b's nodes score b + step/10 (the last branch is best)."""
    nodes, seq = [], 0
    for b in range(n_branches):
        parent = ROOT
        for d in range(depth):
            nid = f"b{b}d{d}"
            nodes.append(
                Node(id=nid, parent=parent, created_seq=seq, round=d + 1, score=b + d / 10, valid=True)
            )
            parent, seq = nid, seq + 1
    return DiscoveryTree.from_nodes(nodes, name="fan")


def test_worked_example_budget_is_honoured():
    tr = replay(worked_tree(), AggressiveB(), W=2, node_budget=3)
    # round 1: r→v1; round 2: r→v2 and v1→v1a; then the budget (3) is spent
    assert tr.rounds == [[(ROOT, "v1")], [(ROOT, "v2"), ("v1", "v1a")]]
    assert (tr.n, tr.k, tr.quality, tr.node_budget) == (3, 2, 0.55, 3)
    assert tr.out_of_tree == [] and tr.out_of_tree_share == 0.0


def test_last_round_is_cut_to_the_remaining_budget():
    tr = replay(worked_tree(), AggressiveB(), W=2, node_budget=4)
    assert tr.rounds[-1] == [("v2", "v2a")]  # a batch of min(W, budget left) = 1
    assert tr.n == 4


@pytest.mark.parametrize("budget", [5, 6, 100])
@pytest.mark.parametrize("policy", [AggressiveB(), *(baseline(n) for n in BASELINES)])
def test_budget_larger_than_the_tree_changes_nothing(budget, policy):
    tree = worked_tree()
    free = replay(tree, policy, W=2)
    capped = replay(tree, policy, W=2, node_budget=budget)
    assert capped.rounds == free.rounds
    assert (capped.n, capped.k, capped.quality) == (free.n, free.k, free.quality)


def test_families_reveal_different_subsets_under_a_budget():
    tree = fan_tree()
    a = replay(tree, BreadthFirst(), W=2, node_budget=6)
    g = replay(tree, GreedyDeepestBest(), W=2, node_budget=6)
    assert a.n == g.n == 6
    assert set(a.revealed) != set(g.revealed)
    assert a.quality is not None and g.quality is not None and a.quality > g.quality  # breadth reached b4
    # without the budget both reveal all 15 nodes and tie on quality
    assert replay(tree, BreadthFirst(), W=2).n == replay(tree, GreedyDeepestBest(), W=2).n == 15
    s = score_policy([tree, tree], GreedyDeepestBest(), 2, 0.0, 0.0, node_budget=6)
    assert all(r["n"] <= 6 and r["node_budget"] == 6 for r in s.per_tree)


def test_out_of_tree_choice_is_reported_not_skipped():
    tree = worked_tree()
    tr = replay(tree, BestLeaf(), W=1, legal="online")
    # r→v1; v1→v1a; v1a→v1a1; the best leaf v1a1 was never continued in the record: out of tree (round 4),
    # then r→v2, v2→v2a, v2a out of tree, and r (the record opened no third branch) out of tree
    assert tr.rounds == [[(ROOT, "v1")], [("v1", "v1a")], [("v1a", "v1a1")], [(ROOT, "v2")], [("v2", "v2a")]]
    assert tr.out_of_tree == [(4, "v1a1"), (7, "v2a"), (8, ROOT)]
    assert tr.k == 5  # rounds that revealed a node
    chosen = [c for rnd in tr.rounds for c, _ in rnd] + [nid for _, nid in tr.out_of_tree]
    assert len(chosen) == tr.choices == tr.n + len(tr.out_of_tree)
    assert tr.out_of_tree_share == pytest.approx(len(tr.out_of_tree) / tr.choices)
    assert 0 < tr.out_of_tree_share < 1
    # the out-of-tree node left the legal set: it is never chosen twice
    assert len({nid for _, nid in tr.out_of_tree}) == len(tr.out_of_tree)


def test_out_of_tree_choices_spend_the_budget():
    tr = replay(worked_tree(), BestLeaf(), W=1, legal="online", node_budget=4)
    assert tr.choices == 4
    assert tr.n + len(tr.out_of_tree) == 4


def test_out_of_tree_root_when_the_record_opened_no_more_branches():
    tree = worked_tree()
    tr = replay(tree, IndependentRoots(), W=4, legal="online")
    # r is legal online while the (unlimited) grid allows a branch; the record holds only v1, v2
    assert (1, ROOT) in tr.out_of_tree
    assert tr.n == 5  # everything recorded is still revealed


def test_score_policy_reports_out_of_tree_share():
    tree = worked_tree()
    s = score_policy([tree, tree], BestLeaf(), 1, 0.0, 0.0, legal="online")
    assert s.out_of_tree == sum(len(r["out_of_tree"]) for r in s.per_tree) > 0
    assert 0 < s.out_of_tree_share < 1
    plain = score_policy([tree], AggressiveB(), 2, 0.05, 0.1)
    assert "out_of_tree" not in plain.per_tree[0]  # unbudgeted rows keep their old shape


def test_recorded_legal_set_never_goes_out_of_tree():
    tr = replay(fan_tree(), BestLeaf(), W=3, node_budget=7)
    assert tr.out_of_tree == [] and tr.n == 7


def test_cli_replay_score_takes_a_node_budget(tmp_path, capsys):
    from rsi_workbench.cli import main

    p = tmp_path / "worked.json"
    worked_tree().save(p)
    rc = main(
        [
            "replay",
            "score",
            str(p),
            "--policy",
            "independent_roots",
            "--beta1",
            "0",
            "--beta2",
            "0",
            "--workers",
            "2",
            "--node-budget",
            "3",
            "--legal",
            "online",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0
    assert "node budget=3" in out and "revealed" in out and "out-of-tree share" in out
