"""Property tests: any legal policy on any chain tree reveals a parent-closed prefix, W-bounded rounds."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from rsi_workbench.replay import ROOT, DiscoveryTree, Node, TreeView, replay


@st.composite
def chain_trees(draw):
    n_branches = draw(st.integers(1, 5))
    lengths = [draw(st.integers(1, 6)) for _ in range(n_branches)]
    order = [b for b, n in enumerate(lengths) for _ in range(n)]
    random.Random(draw(st.integers(0, 10**6))).shuffle(order)  # interleaved creation across branches
    tips, nodes, made = [ROOT] * n_branches, [], [0] * n_branches
    for seq, b in enumerate(order):
        nid = f"b{b}n{made[b]}"
        score = draw(st.one_of(st.none(), st.floats(0, 1)))
        nodes.append(Node(nid, tips[b], seq, made[b] + 1, score, score is not None))
        tips[b], made[b] = nid, made[b] + 1
    return DiscoveryTree.from_nodes(nodes)


class RandomLegal:
    """Test double: a random legal batch each round (r possibly repeated), sometimes stopping."""

    name = "random_legal"

    def __init__(self, seed):
        self.rng = random.Random(seed)

    def plan_grid(self, history):
        return (None, None)

    def select_batch(self, view: TreeView, W: int) -> list[str]:
        if self.rng.random() < 0.05:
            return []
        pool = [n for n in view.legal() for _ in range(view.capacity(n))]
        self.rng.shuffle(pool)
        return pool[: self.rng.randint(1, W)]


@settings(max_examples=40, deadline=None)
@given(chain_trees(), st.integers(1, 4), st.integers(0, 1000))
def test_replay_reveals_a_parent_closed_prefix(tree, W, seed):
    tr = replay(tree, RandomLegal(seed), W)
    seen = {ROOT}
    for rnd in tr.rounds:
        assert 1 <= len(rnd) <= W
        for chosen, child in rnd:
            assert chosen in seen and tree.nodes[child].parent == chosen
        seen |= {c for _, c in rnd}
    assert tr.n == len(seen) - 1 == len(set(tr.revealed))
    # root children are revealed in creation order
    opened = [c for rnd in tr.rounds for p, c in rnd if p == ROOT]
    assert opened == tree.children[ROOT][: len(opened)]


def _perturb_unrevealed(tree: DiscoveryTree, revealed: set[str], seed: int) -> DiscoveryTree:
    """The same tree shape with every unrevealed node's score, validity, error and seq gaps changed."""
    rng = random.Random(seed)
    nodes = []
    for v in tree:
        seq = 10 * v.created_seq + (0 if v.id in revealed else rng.randint(1, 9))  # same creation order
        if v.id in revealed:
            nodes.append(Node(v.id, v.parent, seq, v.round, v.score, v.valid, v.fail_class, v.error))
        else:
            ok = rng.random() < 0.5
            err = "" if ok or rng.random() < 0.5 else "boom"
            nodes.append(Node(v.id, v.parent, seq, 99, rng.uniform(-5, 5), ok, None, err))
    return DiscoveryTree.from_nodes(nodes)


@settings(max_examples=40, deadline=None)
@given(chain_trees(), st.integers(1, 4), st.integers(0, 1000))
def test_replay_never_reads_past_the_revealed_prefix(tree, W, seed):
    """Metamorphic: changing anything about unrevealed nodes changes neither the decisions nor V."""
    from rsi_workbench.replay.policies import (
        BreadthFirst,
        GreedyDeepestBest,
        IndependentRoots,
        PortfolioPolicy,
    )

    for make in (
        lambda: RandomLegal(seed),
        IndependentRoots,
        GreedyDeepestBest,
        lambda: BreadthFirst(width=2),
        PortfolioPolicy,
    ):
        tr = replay(tree, make(), W)
        other = replay(_perturb_unrevealed(tree, set(tr.revealed), seed), make(), W)
        assert other.rounds == tr.rounds
        assert (other.quality, other.best_node) == (tr.quality, tr.best_node)
        assert other.value(0.01, 0.02) == tr.value(0.01, 0.02)
