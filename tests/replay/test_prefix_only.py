"""Prefix-only replay: V never uses the unrevealed tree; only r may repeat in a batch (both modes)."""

from __future__ import annotations

import math
import random

import pytest
from replay_helpers import worked_tree

from rsi_workbench.replay import (
    ROOT,
    DiscoveryTree,
    IllegalBatch,
    Node,
    PortfolioParams,
    TreeView,
    mean_value,
    rank_key,
    replay,
    rescore,
    score_policy,
)
from rsi_workbench.replay.dreaming import dream


class Scripted:
    """Test double: plays a fixed list of batches, then stops."""

    name = "scripted"

    def __init__(self, batches):
        self.batches = list(batches)

    def plan_grid(self, history):
        return (None, None)

    def select_batch(self, view, W):
        return self.batches.pop(0) if self.batches else []


def invalid_first_tree() -> DiscoveryTree:
    """r→x(invalid)→x1(valid 0.9); r→y(invalid); the only valid node sits below an invalid one."""
    return DiscoveryTree.from_nodes(
        [
            Node("x", ROOT, 0, 1, 5.0, False, "invalid"),  # raw score of an invalid result
            Node("y", ROOT, 1, 1, None, False, "optimizer_failure", "SLSQP exit 6"),
            Node("x1", "x", 2, 2, 0.9, True),
        ],
        name="invalid-first",
    )


def test_only_invalid_revealed_nodes_make_quality_and_V_undefined():
    tree = invalid_first_tree()
    tr = replay(tree, Scripted([[ROOT, ROOT]]), W=2)
    assert tr.revealed == ["x", "y"]
    assert tr.quality is None and tr.best_node is None  # not 0.9 (unrevealed), not 5.0 (invalid)
    assert tr.value(0.05, 0.1) is None
    full = replay(tree, Scripted([[ROOT, ROOT], ["x"]]), W=2)
    assert full.quality == 0.9 and full.best_node == "x1"


def test_a_replay_that_reveals_nothing_is_undefined():
    tr = replay(worked_tree(), Scripted([[]]), W=2)
    assert (tr.n, tr.k, tr.rounds) == (0, 0, [])
    assert tr.quality is None and tr.value(0.0, 0.0) is None


def test_undefined_V_in_the_mean_over_trees_and_rescore():
    good, bad = worked_tree(), invalid_first_tree()
    s = score_policy([good, bad], Scripted([[ROOT, ROOT], [], [ROOT, ROOT]]), 2, 0.05, 0.1, use_grid=False)
    assert [r["quality"] for r in s.per_tree] == [0.55, None]
    assert s.per_tree[1]["V"] is None and s.n_undefined == 1
    assert s.V is None  # default: undefined V_i makes V^m undefined ...
    v_good = 0.55 - 0.05 * 2 + 0.1 * 2
    assert s.key == (-math.inf, -1, pytest.approx(v_good))  # ... and ranks below any all-defined policy
    assert rescore(s.per_tree, 0.05, 0.1) is None
    # a declared finite penalty is substituted for the undefined V_i, never a value from the tree
    assert rescore(s.per_tree, 0.05, 0.1, undefined_V=-1.0) == pytest.approx((v_good - 1.0) / 2)
    s2 = score_policy(
        [good, bad],
        Scripted([[ROOT, ROOT], [], [ROOT, ROOT]]),
        2,
        0.05,
        0.1,
        use_grid=False,
        undefined_V=-1.0,
    )
    assert s2.V == pytest.approx((v_good - 1.0) / 2)
    assert mean_value([]) is None and mean_value([float("nan"), 1.0], undefined_V=0.0) == 0.5


def test_rank_key_orders_undefined_below_defined_and_keeps_common_undefined_trees_neutral():
    assert rank_key([0.1, 0.2]) > rank_key([0.9, None])  # any undefined tree loses to all-defined
    assert rank_key([0.5, None]) > rank_key([None, None])  # fewer undefined trees win
    assert rank_key([0.5, None]) > rank_key([0.4, None])  # a tree undefined for all shifts all alike
    assert rank_key([0.5, None]) == rank_key([0.5, float("nan")])  # a recorded null reads back as NaN


def test_dreaming_argmax_ranks_an_undefined_candidate_last_and_pi0_wins_ties():
    class StopAtOnce:
        """Test double: proposes a revision that stops before revealing anything valid."""

        def propose(self, context, k, rng):
            params, _ = context
            return [params.model_copy(update={"stop_patience": 1, "explore_slots": 0, "width": 1})]

    p0 = PortfolioParams()
    hist = [invalid_first_tree(), worked_tree()]
    res = dream(p0, hist, W=2, beta1=0.0, beta2=0.0, M=2, rng=random.Random(0), proposer=StopAtOnce())
    assert res.scores[0].n_undefined == 0 and res.chosen == 0
    # every tree undefined for every candidate: no value is invented, π0 keeps the tie
    dead = DiscoveryTree.from_nodes([Node("z", ROOT, 0, 1, 3.0, False, "invalid")], name="dead")
    res = dream(p0, [dead], W=2, beta1=0.0, beta2=0.0, M=2, rng=random.Random(0), proposer=StopAtOnce())
    assert res.V == [None, None] and res.chosen == 0


def general_tree() -> DiscoveryTree:
    return DiscoveryTree.from_nodes(
        [
            Node("a", ROOT, 0, 1, 0.1, True),
            Node("b", "a", 1, 2, 0.2, True),
            Node("c", "a", 2, 2, 0.3, True),
            Node("d", "a", 3, 2, 0.4, True),
        ]
    )


def test_general_mode_rejects_a_duplicate_non_root_id():
    tree = general_tree()
    assert tree.mode() == "general"
    with pytest.raises(IllegalBatch, match="duplicate node 'a'.*only r may repeat"):
        replay(tree, Scripted([[ROOT], ["a", "a"]]), W=3)
    tr = replay(tree, Scripted([[ROOT], ["a"], ["a"], ["a"]]), W=3)
    assert tr.rounds[1:] == [[("a", "b")], [("a", "c")], [("a", "d")]]


class Recorder:
    """Test double recording what the view shows: capacities and the revealed nodes' seq/round."""

    name = "recorder"

    def __init__(self):
        self.caps: list[dict[str, int]] = []
        self.shown: list[list[tuple[str, int, int]]] = []

    def plan_grid(self, history):
        return (None, None)

    def select_batch(self, view: TreeView, W: int) -> list[str]:
        self.caps.append({n: view.capacity(n) for n in view.legal()})
        self.shown.append([(v.id, v.created_seq, v.round) for v in view.nodes()])
        assert all("generation" not in v.meta for v in view.nodes())  # record timing is hidden too
        return view.legal()[:1]


def test_view_shows_legal_membership_and_replay_order_only():
    rec = Recorder()
    replay(general_tree(), rec, W=2)
    assert all(c == 1 for caps in rec.caps for c in caps.values())  # never "a has 3 children"
    rec = Recorder()
    wide = DiscoveryTree.from_nodes(
        [
            Node(f"v{i}", ROOT, 10 * i, 1, 0.1 * i, True, meta={"generation": 10 * i, "island": 0})
            for i in range(5)
        ]
    )
    replay(wide, rec, W=2)
    assert rec.caps[0] == {ROOT: 2}  # r can open up to W, not "5 branches remain"
    # the recorded created_seq (0, 10, 20, ...) and round are replaced by the replay's own order
    assert rec.shown[-1] == [(f"v{i}", i, 1 + i) for i in range(len(rec.shown[-1]))]


def test_replay_views_show_undefined_V_as_a_dash():
    import pandas as pd

    from rsi_workbench.viz.replay import fmt_v, plot_replay_heatmap, replay_info

    rows = [
        {"arm": "dreaming", "seed": 0, "cycle": 1, "candidate": c, "tree_index": i, "tree_name": f"t{i}"}
        | {"quality": q, "n": 2, "k": 1}
        for c, quals in [(0, [0.5, 0.6]), (1, [0.9, None])]
        for i, q in enumerate(quals)
    ]
    scores = pd.DataFrame(rows)  # a recorded null reads back as NaN here
    info = replay_info(scores, "dreaming", 0, 1, 0.0, 0.0)
    assert info.V == [[0.5, 0.6], [0.9, None]]
    assert info.mean_V[0] == pytest.approx(0.55) and info.mean_V[1] is None
    assert info.chosen == 0  # 0.9 on one tree does not beat a policy defined on every tree
    assert plot_replay_heatmap(info).data[0].text[1][1] == "—" == fmt_v(None)
    nulls = replay_info(scores.assign(quality=[None] * 4), "dreaming", 0, 1, 0.0, 0.0)  # object column
    assert nulls.mean_V == [None, None] and nulls.chosen == 0
