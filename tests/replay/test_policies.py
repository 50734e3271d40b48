"""Portfolio policy: failure classes from prefix evidence, batch portfolio, grid planning; dreaming."""

from __future__ import annotations

import random

from replay_helpers import worked_tree

from rsi_workbench.replay import ROOT, DiscoveryTree, Node, PortfolioParams, PortfolioPolicy, TreeView, replay
from rsi_workbench.replay.dreaming import ParamMutationProposer, adaptive_betas, dream, mutate


def chain(branch: str, scores, start_seq: int = 0, errors=()):
    """Nodes of one chain branch; ``scores`` None = invalid; indices in ``errors`` raised an error."""
    out, parent = [], ROOT
    for i, s in enumerate(scores):
        nid = f"{branch}{i}"
        err = "SLSQP exit 6: singular" if i in errors else ""
        out.append(
            Node(
                nid,
                parent,
                start_seq + i,
                i + 1,
                s,
                s is not None and not err,
                "optimizer_failure" if err else (None if s is not None else "invalid"),
                err,
            )
        )
        parent = nid
    return out


def view_of(nodes, W=4, width=None, depth=None) -> TreeView:
    """Test helper: an online-style view where every node is revealed and every leaf is legal."""
    v = TreeView(width=width, depth=depth)
    for n in sorted(nodes, key=lambda n: n.created_seq):
        v._reveal(n, n.round)
        v.round = max(v.round, n.round)
    cap = {ROOT: W}
    cap.update({n.id: 1 for n in nodes if not v.children(n.id)})
    v._set_legal(cap)
    return v


def test_failure_classes_from_prefix_evidence():
    nodes = (
        chain("a", [1.0, 1.1, 1.2])  # leader, improving: healthy
        + chain("b", [0.5, 0.5, 0.5, 0.5, 0.5], 10)  # lagging and stalled: repeatedly unpromising
        + chain("c", [0.6], 20)  # lagging but shallow: weak but under-explored
        + chain("d", [1.0, 0.9], 30, errors={1})  # one fresh failure: repairable
        + chain("e", [1.0, 0.9, 0.8], 40, errors={1, 2})  # failure streak: hard-unrecoverable
        + chain("f", [1.19, None], 50)  # invalid without an error: a weak result, not a failure
    )
    cls = {b: s.failure_class for b, s in PortfolioPolicy().classify(view_of(nodes)).items()}
    assert cls == {
        "a0": "healthy",
        "b0": "repeatedly_unpromising",
        "c0": "weak_underexplored",
        "d0": "repairable",
        "e0": "hard_unrecoverable",
        "f0": "healthy",
    }


def test_a_new_success_reopens_a_branch():
    nodes = chain("e", [1.0, 0.9, 0.8, 1.3], errors={1, 2}) + chain("a", [1.2], 10)
    cls = PortfolioPolicy().classify(view_of(nodes))
    assert cls["e0"].failure_class == "healthy"  # the success at the tail resets the failure streak


def test_batch_portfolio_has_at_most_one_recovery_slot_and_no_idle_workers():
    nodes = (
        chain("a", [1.0, 1.1])
        + chain("d", [1.0, 0.9], 10, errors={1})
        + chain("g", [1.05, 0.95], 20, errors={1})
    )
    pol = PortfolioPolicy(PortfolioParams(explore_slots=1, recovery=True))
    batch = pol.select_batch(view_of(nodes), 4)
    assert len(batch) == 4
    repairs = [b for b in batch if b in {"d1", "g1"}]
    assert len(repairs) == 1  # at most one recovery slot ...
    assert "a1" in batch and ROOT in batch  # ... beside exploitation and exploration
    off = PortfolioPolicy(PortfolioParams(explore_slots=0, recovery=False)).select_batch(view_of(nodes), 1)
    assert off == ["a1"]


def test_stop_rule_returns_an_empty_batch():
    nodes = chain("a", [1.0, 1.0, 1.0, 1.0])
    assert PortfolioPolicy(PortfolioParams(stop_patience=2)).select_batch(view_of(nodes), 2) == []
    assert PortfolioPolicy(PortfolioParams(stop_patience=0)).select_batch(view_of(nodes), 2)


def tree_of(nodes) -> DiscoveryTree:
    return DiscoveryTree.from_nodes(nodes)


def test_grid_planning_rules():
    p = PortfolioParams(width=4, depth=10)
    pol = PortfolioPolicy(p)
    assert pol.plan_grid([]) == (4, 10)
    early = tree_of(chain("a", [1.0, 1.0, 1.0, 1.0, 1.0]) + chain("b", [0.9, 0.9, 0.9, 0.9], 10))
    assert pol.plan_grid([early]) == (5, 10)  # early gains then stalls: widen
    deep = tree_of(chain("a", [1.0, 1.1, 1.2, 1.3, 1.4]) + chain("b", [0.5], 10) + chain("c", [0.4], 20))
    assert pol.plan_grid([deep]) == (4, 12)  # deep gains concentrated in one branch: deepen
    bad = tree_of(chain("a", [1.0, 0.9, 0.9, 0.9], errors={1, 2, 3}))
    assert pol.plan_grid([bad]) == (3, 8)  # repeated hard failures: shrink both
    assert PortfolioPolicy(p.model_copy(update={"grid_rules": False})).plan_grid([early, deep]) == (4, 10)


class SameProposer:
    """Test double: proposes exact copies of π0 (every candidate ties)."""

    def propose(self, context, k, rng):
        params, _ = context
        return [params.model_copy() for _ in range(k)]


class BetterProposer:
    """Test double: proposes one revision that stops early (wins under a node cost)."""

    def propose(self, context, k, rng):
        params, _ = context
        return [params.model_copy(update={"explore_slots": 0, "stop_patience": 1})]


def test_pi0_is_always_a_candidate_and_wins_ties():
    p0 = PortfolioParams()
    res = dream(
        p0, [worked_tree()], W=2, beta1=0.05, beta2=0.1, M=4, rng=random.Random(0), proposer=SameProposer()
    )
    assert res.candidates[0] is p0 and len(res.candidates) == 4
    assert len(set(res.V)) == 1 and res.chosen == 0
    res = dream(
        p0, [worked_tree()], W=2, beta1=0.05, beta2=0.1, M=2, rng=random.Random(0), proposer=BetterProposer()
    )
    assert res.candidates[0] is p0
    assert res.V[res.chosen] >= res.V[0]  # non-regression on the replay objective
    res = dream(p0, [worked_tree()], W=2, beta1=0.05, beta2=0.1, M=6, rng=random.Random(1))
    assert res.candidates[0] is p0 and res.V[res.chosen] >= res.V[0]


def test_builtin_proposer_makes_distinct_structured_mutations():
    p0 = PortfolioParams()
    cands = ParamMutationProposer().propose((p0, []), 7, random.Random(0))
    assert len(cands) == 7 and len({c.model_dump_json() for c in cands}) == 7
    assert all(c != p0 for c in cands)
    for i in range(200):  # clipped into the declared ranges
        c = mutate(PortfolioParams(explore_slots=0, stall_patience=1), random.Random(i))
        assert c.explore_slots >= 0 and c.stall_patience >= 1


def test_adaptive_beta_from_the_last_round():
    tree = worked_tree()
    b1, b2 = adaptive_betas(tree, root_score=0.4, c1=0.5, ratio=2.0)
    assert b1 == (0.60 - 0.4) * 0.5 / 5 and b2 == 2 * b1
    assert replay(tree, PortfolioPolicy(), W=2).n >= 1
