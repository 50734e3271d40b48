"""Eq. 2-9 end to end on a graph small enough to compute by hand.

Four episodes, one Lead trajectory each (L1..L4) and one worker each:
  episode 1: L1 assigns, Generation G1 publishes h1 (restart, family f1);
  episode 2: L2 assigns, Evolution E2 publishes h2 (evolve of h1, family f1);
  episode 3: L3 assigns, Evolution E3 publishes h3 (repair of h1, family f1);
  episode 4: L4 assigns, Generation G4 publishes h4 (restart, family f4) -- the last episode: no later
             version is ever compared with it, so it has no effective comparison.
Critiques (record order): h2 beats h1; h1 beats h3; h3 ties h2. Progress: h2 substantive progress,
h3 insufficient evidence; every version has a valid profile assessment.

The example shows the mechanism behind "omega follows time": a version is compared when it is new
and then again each time a later version draws it as an opponent, so the latest versions hold the
fewest comparisons -- and a version with none (h4) has an *unknown* q, so its Lead earns no omega at all.
"""

from __future__ import annotations

import pytest
import trueskill

from rsi_workbench.discovery.credit import (
    Assessment,
    Assignment,
    Comparison,
    ContributionClaim,
    CreditRecords,
    HypothesisNode,
    TrajectoryNode,
    assign_credit,
)


def _records() -> CreditRecords:
    fam = {"h1": "f1", "h2": "f1", "h3": "f1", "h4": "f4"}
    worker = {"h1": ("G1", "generation"), "h2": ("E2", "evolution"), "h3": ("E3", "evolution")}
    worker["h4"] = ("G4", "generation")
    hyps, trajs, claims, assignments = {}, {}, [], {}
    for k, h in enumerate(("h1", "h2", "h3", "h4"), start=1):
        w, role = worker[h]
        hyps[h] = HypothesisNode(
            h, episode=str(k), publisher=w, created_at=float(k), local_family=fam[h], global_family="dir"
        )
        trajs[w] = TrajectoryNode(w, role, agent=w, episode=str(k), started_at=float(k) - 0.5)  # type: ignore[arg-type]
        trajs[f"L{k}"] = TrajectoryNode(f"L{k}", "lead", agent=f"L{k}", episode=str(k))
        assignments[f"a{k}"] = Assignment(f"a{k}", frozenset({h}), f"L{k}")
        claims += [
            ContributionClaim(w, h, "direct_publication"),
            ContributionClaim(f"L{k}", h, "assignment", f"a{k}"),
        ]
    comparisons = [Comparison("h2", "h1", "a"), Comparison("h3", "h1", "b"), Comparison("h3", "h2", "tie")]
    assessments = [Assessment(h) for h in hyps] + [
        Assessment("h2", progress="substantive_progress"),
        Assessment("h3", progress="insufficient_evidence"),
    ]
    return CreditRecords(hyps, trajs, comparisons, assessments, claims, assignments=assignments)


def test_credit_end_to_end_by_hand() -> None:
    res = assign_credit(_records())

    # eq. 2 -- TrueSkill (the package's own updates; mu0 = 25, sigma0 = 25/3, beta = 25/6,
    # tau = 25/300, draw probability 0.10), in record order:
    env = trueskill.TrueSkill(mu=25.0, sigma=25 / 3, beta=25 / 6, tau=25 / 300, draw_probability=0.10)
    h1, h2, h3 = env.create_rating(), env.create_rating(), env.create_rating()
    h2, h1 = trueskill.rate_1vs1(h2, h1, env=env)  # h2 beats h1 -> h1 (20.604, 7.171), h2 (29.396, 7.171)
    h1, h3 = trueskill.rate_1vs1(h1, h3, env=env)  # h1 beats h3 -> h1 (25.046, 6.265), h3 (19.003, 6.873)
    h3, h2 = trueskill.rate_1vs1(h3, h2, drawn=True, env=env)  # tie -> h2 (25.394, 5.624), h3 (22.678, 5.526)
    expect = {"h1": (h1.mu, h1.sigma), "h2": (h2.mu, h2.sigma), "h3": (h3.mu, h3.sigma)}
    for h, (mu, sigma) in expect.items():
        assert res.ratings[h].mu == pytest.approx(mu) and res.ratings[h].sigma == pytest.approx(sigma)
        assert res.ratings[h].n_effective == 2  # each version was in two comparisons
    assert (res.ratings["h4"].mu, res.ratings["h4"].n_effective) == (25.0, 0)  # never compared
    assert res.ratings["h1"].mu == pytest.approx(25.0458, abs=1e-4)
    assert res.ratings["h1"].sigma == pytest.approx(6.2650, abs=1e-4)

    # eq. 3 -- s = mu - 2 sigma:  h1 25.0458 - 12.5300 = 12.5157;  h2 25.3939 - 11.2483 = 14.1457;
    #          h3 22.6783 - 11.0516 = 11.6267.  h4 has no effective comparison: q unknown, no rank.
    # tie-aware rank among the scored h1, h2, h3 (|S| = 3; a version counts itself as 1/2):
    #   h3 lowest (0 + 1/2)/3 = 1/6;  h1 (1 + 1/2)/3 = 1/2;  h2 (2 + 1/2)/3 = 5/6
    # eq. 4 -- rho_cov = n/(n + 2) = 2/4 = 1/2 for all three;
    #          rho_unc = 1/(1 + sigma/8.3333): h1 0.57084, h2 0.59705, h3 0.60129
    # eq. 5 -- q = 0.5 + 1.5 r rho_cov rho_unc + 0.25 p  (p: substantive progress or necessary repair)
    #   h1 = 0.5 + 1.5 * 1/2 * 1/2 * 0.57084        = 0.71407
    #   h2 = 0.5 + 1.5 * 5/6 * 1/2 * 0.59705 + 0.25 = 1.12316
    #   h3 = 0.5 + 1.5 * 1/6 * 1/2 * 0.60129        = 0.57516   (insufficient evidence: p = 0)
    rho_unc = {h: 1 / (1 + sigma / 8.3333) for h, (_, sigma) in expect.items()}
    q = {
        "h1": 0.5 + 1.5 * (1 / 2) * (1 / 2) * rho_unc["h1"],
        "h2": 0.5 + 1.5 * (5 / 6) * (1 / 2) * rho_unc["h2"] + 0.25,
        "h3": 0.5 + 1.5 * (1 / 6) * (1 / 2) * rho_unc["h3"],
    }
    assert q == pytest.approx({"h1": 0.71407, "h2": 1.12316, "h3": 0.57516}, abs=1e-5)
    for h in q:
        assert res.weights[h].rank == pytest.approx({"h1": 1 / 2, "h2": 5 / 6, "h3": 1 / 6}[h])
        assert res.weights[h].q == pytest.approx(q[h])
    assert res.weights["h4"].status == "unknown" and res.weights["h4"].q is None

    # eq. 7 caps -- family f1 = {h1, h2, h3} totals 0.71407 + 1.12316 + 0.57516 = 2.41238 > C_loc = 2:
    #   scale 2/2.41238 = 0.82906;  q~ = h1 0.59200, h2 0.93116, h3 0.47684 (sum 2);
    #   global family "dir" then totals 2 <= C_glob: scale 1.
    scale = 2.0 / sum(q.values())
    q_tilde = {h: v * scale for h, v in q.items()}
    assert q_tilde == pytest.approx({"h1": 0.59200, "h2": 0.93116, "h3": 0.47684}, abs=1e-5)
    for h in q:
        assert res.capped[h].q_tilde == pytest.approx(q_tilde[h])
    assert "h4" not in res.capped  # unknown stays unknown, never zero-weighted into a family

    # eq. 6 -- each version has one coordinating Lead (gamma = 0.2) and one producer (1 - gamma = 0.8);
    # eq. 7 -- w_i = min(2, sum_h alpha_ih q~_h):  L1 0.2*0.59200 = 0.11840, G1 0.8*0.59200 = 0.47360,
    #   L2 0.18623, E2 0.74493, L3 0.09537, E3 0.38147;  L4 and G4: 0 (h4 has no q).
    w = {}
    for k, (h, worker) in enumerate((("h1", "G1"), ("h2", "E2"), ("h3", "E3")), start=1):
        w[f"L{k}"], w[worker] = 0.2 * q_tilde[h], 0.8 * q_tilde[h]
    for i, v in w.items():
        assert res.w[i] == pytest.approx(v)
    assert res.w.get("L4", 0.0) == 0.0 and res.w.get("G4", 0.0) == 0.0

    # eq. 9 -- one domain (eta = 1), one shared-memory group: omega_i = w_i / sum_k w_k = w_i / 2
    #   Leads: L1 0.05920, L2 0.09312, L3 0.04768, L4 0 (absent from the release)
    omega = {i: v / sum(w.values()) for i, v in w.items()}
    assert sum(w.values()) == pytest.approx(2.0)
    assert omega["L1"] == pytest.approx(0.05920, abs=1e-5)
    assert omega["L2"] == pytest.approx(0.09312, abs=1e-5)
    assert omega["L3"] == pytest.approx(0.04768, abs=1e-5)
    assert dict(res.release.omega) == pytest.approx(omega)
    assert "L4" not in res.release.omega
