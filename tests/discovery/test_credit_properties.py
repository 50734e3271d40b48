"""Property tests of Proposition 1 over random research graphs (the ``hypothesis`` library)."""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rsi_workbench.discovery.credit import (
    ROLES,
    Assessment,
    Assignment,
    Comparison,
    ContributionClaim,
    CreditRecords,
    HypothesisNode,
    Promotion,
    ShareSettings,
    TrajectoryNode,
    assign_credit,
)

BASES = [
    "direct_publication",
    "proposal_text",
    "draft_promotion",
    "support_file",
    "assignment",
    "promotion",
    "lineage",
]
TOL = 1e-9


@st.composite
def graphs(draw) -> CreditRecords:
    n_h = draw(st.integers(1, 12))
    n_t = draw(st.integers(1, 10))
    hyps = {}
    for k in range(n_h):
        hyps[f"h{k}"] = HypothesisNode(
            f"h{k}",
            domain=draw(st.sampled_from(["bio", "battery"])),
            round=draw(st.integers(0, 1)),
            episode=draw(st.sampled_from(["e0", "e0", "e1"])),
            publisher=f"a{draw(st.integers(0, n_t - 1))}",
            created_at=float(draw(st.integers(2, 6))),
            proposal_sha256=f"P{k}",
            support_files={f"f{k}.txt": f"S{k}"},
            local_family=f"L{draw(st.integers(0, 3))}",
            global_family=f"G{draw(st.integers(0, 1))}",
            duplicate_key=draw(st.sampled_from([None, "k0", "k1"])),
        )
    trajs = {}
    for k in range(n_t):
        wrote = draw(st.sets(st.sampled_from(sorted(hyps)), max_size=3))
        trajs[f"t{k}"] = TrajectoryNode(
            f"t{k}",
            draw(st.sampled_from(ROLES)),
            agent=f"a{k}",
            episode=draw(st.sampled_from(["e0", "e0", "e1"])),
            domain=draw(st.sampled_from(["bio", "battery"])),
            group=draw(st.sampled_from(["g0", "g1"])),
            started_at=float(draw(st.integers(0, 3))),
            text_sha256s=frozenset(f"P{h[1:]}" for h in wrote),
            files={f"f{h[1:]}.txt": f"S{h[1:]}" for h in wrote},
        )
    hs, ts = sorted(hyps), sorted(trajs)
    promotions = {
        f"p{k}": Promotion(
            f"p{k}", draw(st.sampled_from(hs)), draw(st.sampled_from(ts)), draw(st.sampled_from(ts))
        )
        for k in range(draw(st.integers(0, 4)))
    }
    assignments = {
        f"as{k}": Assignment(
            f"as{k}",
            frozenset(draw(st.sets(st.sampled_from(hs), min_size=1, max_size=2))),
            draw(st.sampled_from(ts)),
        )
        for k in range(draw(st.integers(0, 4)))
    }
    refs = sorted(promotions) + sorted(assignments) + [f"f{k}.txt" for k in range(n_h)] + [None]
    claims = [
        ContributionClaim(
            draw(st.sampled_from(ts)),
            draw(st.sampled_from(hs)),
            draw(st.sampled_from(BASES)),
            draw(st.sampled_from(refs)),
        )
        for _ in range(draw(st.integers(0, 30)))
    ]
    # plus the claims the records would suggest, so that many graphs carry admitted edges
    claims += [
        ContributionClaim(t, h, "direct_publication")
        for h in hs
        for t in ts
        if hyps[h].publisher == trajs[t].agent
    ]
    claims += [
        ContributionClaim(p.draft_author, p.hypothesis, "draft_promotion", p.id) for p in promotions.values()
    ]
    claims += [
        ContributionClaim(p.promoted_by or "", p.hypothesis, "promotion", p.id) for p in promotions.values()
    ]
    claims += [
        ContributionClaim(a.lead, h, "assignment", a.id) for a in assignments.values() for h in a.hypotheses
    ]
    comparisons = []
    if n_h > 1:
        for _ in range(draw(st.integers(0, 30))):
            a, b = draw(st.lists(st.sampled_from(hs), min_size=2, max_size=2, unique=True))
            comparisons.append(Comparison(a, b, draw(st.sampled_from(["a", "b", "tie", "abstain"]))))
    assessments = [
        Assessment(
            h,
            valid=draw(st.booleans()) or draw(st.booleans()),
            marginal_duplicate=draw(st.integers(0, 5)) == 0,
            progress=draw(
                st.sampled_from(
                    [None, "substantive_progress", "necessary_repair", "duplicate", "insufficient_evidence"]
                )
            ),
        )
        for h in hs
        if draw(st.integers(0, 6)) > 0
    ]
    return CreditRecords(hyps, trajs, comparisons, assessments, claims, promotions, assignments)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(graphs())
def test_proposition_1(recs: CreditRecords):
    s = ShareSettings()
    res = assign_credit(recs)
    # per-hypothesis allocation <= q~_h <= q_h, and shares sum to at most 1
    alloc: dict[str, float] = defaultdict(float)
    for (_i, h), v in res.b.items():
        alloc[h] += v
    for h, c in res.capped.items():
        assert 0.0 <= c.q_tilde <= c.q + TOL
        assert alloc[h] <= c.q_tilde + TOL
    for shares in res.alpha.values():
        assert sum(shares.values()) <= 1.0 + TOL
    # per-family totals
    loc: dict[str, float] = defaultdict(float)
    glob: dict[str, float] = defaultdict(float)
    for h, c in res.capped.items():
        loc[recs.hypotheses[h].loc] += c.q_tilde
        glob[recs.hypotheses[h].glob] += c.q_tilde
    assert all(v <= s.c_loc + TOL for v in loc.values())
    assert all(v <= s.c_glob + TOL for v in glob.values())
    # trajectory weights in [0, W_max]; only Lead/Generation/Evolution ever hold credit
    for i, w in res.w.items():
        assert 0.0 <= w <= s.w_max
        if w > 0:
            assert recs.trajectories[i].role in ("lead", "generation", "evolution")
    # missing assessments stay unknown, never zero
    assessed = {a.hypothesis for a in recs.assessments}
    for h, hw in res.weights.items():
        if h not in assessed:
            assert hw.q is None and hw.status == "unknown"
    # eq. 9: omega sums to eta_d per domain present (uniform eta by default)
    per_domain: dict[str, float] = defaultdict(float)
    for i, o in res.release.omega.items():
        per_domain[recs.trajectories[i].domain] += o
    for d, tot in per_domain.items():
        assert abs(tot - res.release.eta[d]) < 1e-9
