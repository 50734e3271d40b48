"""Hand-computed tests of the credit pipeline (DiscoveryRSI eq. 2-7, 9)."""

from __future__ import annotations

import math

import pytest
import trueskill
from scipy.stats import norm

from rsi_workbench.discovery.credit import (
    Assessment,
    Assignment,
    Comparison,
    ContributionClaim,
    CreditRecords,
    HypothesisNode,
    HypothesisRating,
    Promotion,
    TrajectoryNode,
    TrueSkillSettings,
    WeightSettings,
    admit_edges,
    assign_credit,
    bounded_weight,
    conservative_score,
    coverage_reliability,
    credit_tables,
    draw_margin_from_probability,
    draw_probability_from_margin,
    family_caps,
    hypothesis_weights,
    rate_hypotheses,
    tie_aware_rank,
    training_weights,
    uncertainty_reliability,
)


# ------------------------------------------------------------------ eq. 2
def test_library_defaults_and_sigma_ref():
    s = TrueSkillSettings()
    env = trueskill.TrueSkill()
    assert (s.mu0, s.sigma0, s.beta, s.tau) == pytest.approx((env.mu, env.sigma, env.beta, env.tau))
    assert WeightSettings().sigma_ref == pytest.approx(s.sigma0, abs=1e-4)  # sigma_ref = sigma0


@pytest.mark.parametrize("p", [0.0, 0.05, 0.1, 0.3, 0.7])
def test_draw_margin_conversion(p):
    beta = 25 / 6
    eps = draw_margin_from_probability(p, beta)
    # the package's own conversion (its internal ppf is a rational approximation)
    assert eps == pytest.approx(
        trueskill.calc_draw_margin(p, 2, trueskill.TrueSkill(beta=beta)), rel=1e-5, abs=1e-6
    )
    assert draw_probability_from_margin(eps, beta) == pytest.approx(p, abs=1e-12)
    # meaning: with equal skills, P(|t_a - t_b| <= eps) = p where t_a - t_b ~ N(0, 2 beta^2)
    assert norm.cdf(eps / (math.sqrt(2) * beta)) - norm.cdf(-eps / (math.sqrt(2) * beta)) == pytest.approx(p)
    with pytest.raises(ValueError):
        draw_margin_from_probability(1.0, beta)


def _closed_form_win(mu_w, s_w, mu_l, s_l, beta, tau, eps):
    """Two-player TrueSkill win update written out (v, w functions) as an independent check of eq. 2."""
    s_w2, s_l2 = s_w**2 + tau**2, s_l**2 + tau**2
    c = math.sqrt(2 * beta**2 + s_w2 + s_l2)
    t, e = (mu_w - mu_l) / c, eps / c
    v = norm.pdf(t - e) / norm.cdf(t - e)
    w = v * (v + t - e)
    return (
        mu_w + s_w2 / c * v,
        math.sqrt(s_w2 * (1 - s_w2 / c**2 * w)),
        mu_l - s_l2 / c * v,
        math.sqrt(s_l2 * (1 - s_l2 / c**2 * w)),
    )


def test_preference_tie_abstain_updates():
    s = TrueSkillSettings()
    r = rate_hypotheses([Comparison("a", "b", "a")], settings=s)
    mu_a, sg_a, mu_b, sg_b = _closed_form_win(25, 25 / 3, 25, 25 / 3, s.beta, s.tau, s.draw_margin)
    assert r["a"].mu == pytest.approx(mu_a, rel=1e-5) and r["a"].sigma == pytest.approx(sg_a, rel=1e-5)
    assert r["b"].mu == pytest.approx(mu_b, rel=1e-5) and r["b"].sigma == pytest.approx(sg_b, rel=1e-5)
    assert r["a"].n_effective == r["b"].n_effective == 1
    # "b" outcome is the mirror image
    rb = rate_hypotheses([Comparison("a", "b", "b")])
    assert rb["b"].mu == pytest.approx(r["a"].mu) and rb["a"].mu == pytest.approx(r["b"].mu)
    # a tie updates both: means stay, uncertainty shrinks
    t = rate_hypotheses([Comparison("a", "b", "tie")])
    assert t["a"].mu == pytest.approx(25) and t["a"].sigma < 25 / 3 and t["b"].n_effective == 1
    # abstentions update nothing and count no comparison
    ab = rate_hypotheses([Comparison("a", "b", "abstain")])
    assert ab["a"] == HypothesisRating("a", 25.0, 25 / 3, 0)
    seq = rate_hypotheses([Comparison("a", "b", "a"), Comparison("b", "a", "abstain")])
    assert seq == r
    with pytest.raises(ValueError):
        rate_hypotheses([Comparison("a", "a", "tie")])


# ------------------------------------------------------------------ eq. 3-5
def test_conservative_score_rank_reliability_q_by_hand():
    assert conservative_score(30.0, 5.0, 2.0) == 20.0
    scores = [1.0, 2.0, 2.0, 3.0]
    assert tie_aware_rank(2.0, scores) == 0.5  # (1 + 2/2) / 4
    assert tie_aware_rank(3.0, scores) == 0.875  # (3 + 1/2) / 4
    assert tie_aware_rank(1.0, scores) == 0.125
    assert tie_aware_rank(5.0, [5.0]) == 0.5  # alone in its stratum
    assert coverage_reliability(2, 2.0) == 0.5 and coverage_reliability(6, 2.0) == 0.75
    assert uncertainty_reliability(8.3333) == 0.5
    assert uncertainty_reliability(0.0) == 1.0
    # q = 0.5 + 1.5 * 0.875 * 0.75 * 0.5 = 0.9921875; + lambda_p with progress; capped at q_max; v = 0 -> 0
    assert bounded_weight(0.875, 0.75, 0.5, True, False) == pytest.approx(0.9921875)
    assert bounded_weight(0.875, 0.75, 0.5, True, True) == pytest.approx(1.2421875)
    assert bounded_weight(1.0, 1.0, 1.0, True, True) == 2.0
    assert bounded_weight(1.0, 1.0, 1.0, False, True) == 0.0


def test_hypothesis_weights_strata_unknown_and_invalid():
    ratings = {
        "a": HypothesisRating("a", 30.0, 5.0, 2),  # s = 20
        "b": HypothesisRating("b", 26.0, 3.0, 6),  # s = 20 (tie with a)
        "c": HypothesisRating("c", 20.0, 5.0, 2),  # s = 10
        "d": HypothesisRating("d", 40.0, 1.0, 3),  # other round
        "e": HypothesisRating("e", 25.0, 25 / 3, 0),  # never compared -> unknown
        "f": HypothesisRating("f", 35.0, 1.0, 4),  # no assessment -> unknown
        "g": HypothesisRating("g", 35.0, 1.0, 4),  # marginal duplicate -> v = 0
    }
    nodes = {h: HypothesisNode(h, domain="bio", round=1 if h == "d" else 0) for h in ratings}
    assessments = [
        Assessment("a", progress="substantive_progress"),
        Assessment("b"),
        Assessment("c", progress="insufficient_evidence"),
        Assessment("d"),
        Assessment("e"),
        Assessment("g", marginal_duplicate=True),
    ]
    w = hypothesis_weights(ratings, assessments, nodes)
    assert w["a"].rank == pytest.approx((1 + 0.5 * 2) / 3)  # stratum {a, b, c}
    assert w["c"].rank == pytest.approx(0.5 / 3)
    assert w["d"].rank == 0.5 and w["d"].stratum == "bio/round1"
    ra = 2 / 3 * 0.5 / (1 + 5 / 8.3333)
    assert w["a"].q == pytest.approx(0.5 + 1.5 * ra + 0.25)
    assert w["a"].progress is True and w["b"].progress is None and w["c"].progress is False
    for h in ("e", "f"):
        assert w[h].q is None and w[h].status == "unknown" and w[h].valid is None
    assert w["g"].q == 0.0 and w["g"].status == "invalid"


# ------------------------------------------------------------------ eq. 6-7
def _paper_graph(with_workers: bool = True) -> CreditRecords:
    h = HypothesisNode("h1", episode="ep1", publisher="gen-agent", created_at=10.0, proposal_sha256="P1")
    lead = TrajectoryNode("lead", "lead", agent="lead-agent", episode="ep1", started_at=0.0)
    gen = TrajectoryNode("gen", "generation", agent="gen-agent", episode="ep1", started_at=1.0)
    evo = TrajectoryNode(
        "evo", "evolution", agent="evo-agent", episode="ep1", started_at=2.0, text_sha256s=frozenset({"P1"})
    )
    crit = TrajectoryNode("crit", "critique", agent="crit-agent", episode="ep1")
    if with_workers:
        claims = [
            ContributionClaim("lead", "h1", "assignment", "as1"),
            ContributionClaim("gen", "h1", "direct_publication"),
            ContributionClaim("evo", "h1", "proposal_text"),
            ContributionClaim("evo", "h1", "proposal_text"),  # duplicate edge counts once
            ContributionClaim("crit", "h1", "direct_publication"),
            ContributionClaim("evo", "h1", "shared_episode"),
        ]
        hyp = h
    else:  # the Lead publishes alone, authorship unresolved
        hyp = HypothesisNode("h1", episode="ep1", publisher="lead-agent", created_at=10.0)
        claims = [
            ContributionClaim("lead", "h1", "direct_publication"),
            ContributionClaim("gen", "h1", "worker_call"),
        ]
    return CreditRecords(
        hypotheses={"h1": hyp, "h2": HypothesisNode("h2")},
        trajectories={t.id: t for t in (lead, gen, evo, crit)},
        comparisons=[Comparison("h1", "h2", "a"), Comparison("h1", "h2", "a")],
        assessments=[Assessment("h1"), Assessment("h2")],
        claims=claims,
        assignments={"as1": Assignment("as1", frozenset({"h1"}), "lead")},
    )


def test_paper_share_split():
    res = assign_credit(_paper_graph())
    assert res.alpha["h1"] == pytest.approx({"lead": 0.2, "gen": 0.4, "evo": 0.4})
    qt = res.capped["h1"].q_tilde
    assert qt == pytest.approx(res.weights["h1"].q)
    assert res.w == pytest.approx({"lead": 0.2 * qt, "gen": 0.4 * qt, "evo": 0.4 * qt})
    rejected = {(d.claim.trajectory, d.claim.basis): d.reason for d in res.edges if not d.admitted}
    assert "context or provenance" in rejected[("crit", "direct_publication")]
    assert "earns no credit" in rejected[("evo", "shared_episode")]
    tables = credit_tables(res)
    assert set(tables) == {"hypotheses", "edges", "trajectories"}


def test_lead_alone_gets_only_coordination_share():
    res = assign_credit(_paper_graph(with_workers=False))
    assert res.alpha["h1"] == {"lead": pytest.approx(0.2)}  # 0.8 stays unallocated
    assert res.w["lead"] == pytest.approx(0.2 * res.capped["h1"].q_tilde)
    assert sum(v for (i, h), v in res.b.items() if h == "h1") < res.capped["h1"].q_tilde


def test_edge_evidence_rules():
    h = HypothesisNode("h", episode="e", publisher="g", created_at=5.0, support_files={"fig.png": "S1"})
    ts = {
        "g": TrajectoryNode("g", "generation", agent="g", episode="e", started_at=1.0),
        "late": TrajectoryNode("late", "generation", agent="g", episode="e", started_at=9.0),
        "other_ep": TrajectoryNode("other_ep", "generation", agent="g", episode="x"),
        "f_ok": TrajectoryNode("f_ok", "evolution", files={"fig.png": "S1"}),
        "f_bad": TrajectoryNode("f_bad", "evolution", files={"fig.png": "S2"}),
        "d": TrajectoryNode("d", "evolution"),
        "L": TrajectoryNode("L", "lead"),
        "L2": TrajectoryNode("L2", "lead"),
    }
    promos = {"p1": Promotion("p1", "h", draft_author="d", promoted_by="L")}
    assigns = {"a1": Assignment("a1", frozenset({"h"}), lead="L")}
    claims = [
        ContributionClaim("g", "h", "direct_publication"),
        ContributionClaim("late", "h", "direct_publication"),
        ContributionClaim("other_ep", "h", "direct_publication"),
        ContributionClaim("f_ok", "h", "support_file", "fig.png"),
        ContributionClaim("f_bad", "h", "support_file", "fig.png"),
        ContributionClaim("d", "h", "draft_promotion", "p1"),
        ContributionClaim("L", "h", "promotion", "p1"),
        ContributionClaim("L2", "h", "promotion", "p1"),
        ContributionClaim("L2", "h", "assignment", "a1"),
        ContributionClaim("L", "h", "support_file", "fig.png"),
        ContributionClaim("d", "h", "lineage"),
        ContributionClaim("nobody", "h", "direct_publication"),
    ]
    got = [
        (d.claim.trajectory, d.admitted, d.kind) for d in admit_edges(claims, ts, {"h": h}, promos, assigns)
    ]
    assert got == [
        ("g", True, "production"),
        ("late", False, None),
        ("other_ep", False, None),
        ("f_ok", True, "production"),
        ("f_bad", False, None),
        ("d", True, "production"),
        ("L", True, "coordination"),
        ("L2", False, None),
        ("L2", False, None),
        ("L", False, None),
        ("d", False, None),
        ("nobody", False, None),
    ]


def test_family_caps_and_duplicate_suppression():
    nodes = {
        "a": HypothesisNode("a", local_family="F", global_family="G", created_at=1),
        "b": HypothesisNode("b", local_family="F", global_family="G", created_at=2),
        "c": HypothesisNode("c", local_family="F", global_family="G", created_at=3),
        "d": HypothesisNode("d", local_family="F2", global_family="G", created_at=4, duplicate_key="k"),
        "e": HypothesisNode("e", local_family="F3", global_family="G", created_at=5, duplicate_key="k"),
    }
    caps = family_caps({"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.5, "e": 1.5}, nodes)
    assert caps["e"].q_tilde == 0.0 and caps["e"].suppressed_duplicate_of == "d"
    assert caps["a"].local_scale == pytest.approx(2 / 3)
    # global family G: local-capped totals 2 + 1.5 = 3.5 -> scaled to 2
    assert caps["a"].global_scale == pytest.approx(2 / 3.5)
    assert sum(c.q_tilde for c in caps.values()) == pytest.approx(2.0)
    assert caps["d"].q_tilde == pytest.approx(1.5 * 2 / 3.5)


def test_trajectory_weight_is_capped_at_w_max():
    hyps = {f"h{k}": HypothesisNode(f"h{k}", publisher="g", episode="e", created_at=1.0) for k in range(4)}
    ts = {"g": TrajectoryNode("g", "generation", agent="g", episode="e")}
    recs = CreditRecords(
        hyps,
        ts,
        comparisons=[Comparison(f"h{k}", f"h{(k + 1) % 4}", "tie") for k in range(4)],
        assessments=[Assessment(h, progress="necessary_repair") for h in hyps],
        claims=[ContributionClaim("g", h, "direct_publication") for h in hyps],
    )
    res = assign_credit(recs)
    assert sum(v for v in res.b.values()) > 2.0 and res.w["g"] == 2.0


# ------------------------------------------------------------------ eq. 9
def test_training_weights_by_hand():
    ts = {
        "t1": TrajectoryNode("t1", "lead", domain="A", group="g1"),
        "t2": TrajectoryNode("t2", "generation", domain="A", group="g1"),
        "t3": TrajectoryNode("t3", "evolution", domain="A", group="g2"),
        "t4": TrajectoryNode("t4", "generation", domain="B", group="g1"),
        "t5": TrajectoryNode("t5", "generation", domain="B", group="g1"),
    }
    rel = training_weights({"t1": 1.0, "t2": 3.0, "t3": 2.0, "t4": 0.5, "t5": 0.0}, ts, {"A": 0.9, "B": 0.1})
    assert rel.omega == pytest.approx({"t1": 0.1125, "t2": 0.3375, "t3": 0.45, "t4": 0.1})
    assert sum(rel.omega.values()) == pytest.approx(1.0)
    assert type(rel).from_json(rel.to_json()) == rel
    uniform = training_weights({"t1": 1.0, "t4": 1.0}, ts)
    assert uniform.omega == pytest.approx({"t1": 0.5, "t4": 0.5})
    with pytest.raises(ValueError, match="sum to 1"):
        training_weights({"t1": 1.0}, ts, {"A": 0.5})
    with pytest.raises(ValueError, match="no coefficient"):
        training_weights({"t1": 1.0, "t4": 1.0}, ts, {"A": 1.0})


def test_contributor_shares_do_not_depend_on_hash_seed() -> None:
    """Credit is recomputable (DESIGN contract 2): shares come out in one order in every process."""
    import os
    import subprocess
    import sys

    code = (
        "from rsi_workbench.discovery.credit import ContributionEdge, contributor_shares\n"
        "edges = [ContributionEdge(hypothesis=h, trajectory=t, kind=k, basis='x') for h in ('h3','h1','h2') "
        "for t in ('t9','t2','t5','t1') for k in ('coordination','production')]\n"
        "a = contributor_shares(edges)\n"
        "print([(h, list(v.items())) for h, v in a.items()])\n"
    )
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": s},
        ).stdout
        for s in ("1", "2", "3", "4")
    }
    assert len(outs) == 1
