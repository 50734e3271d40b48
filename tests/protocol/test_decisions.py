"""Hand-computed cases for every decision function of the retained-pair protocol (eq. 7–18)."""

from __future__ import annotations

import random

import pytest

from rsi_workbench.budget import BudgetExceeded, BudgetLedger
from rsi_workbench.protocol.decisions import (
    AdaptationCriteria,
    AdmissionCriteria,
    InformationGain,
    PairGateCriteria,
    PolicyGateCriteria,
    PolicyUpdateCriteria,
    PredictorGateCriteria,
    RandomK,
    ReliabilityCriteria,
    ScoredCandidate,
    SplitOverlap,
    UtilityArgmax,
    UtilitySpec,
    adaptation_trigger,
    admit_imagined,
    assemble,
    assert_disjoint,
    fit_budget,
    pair_gate,
    pair_gate_skipped,
    policy_gate,
    policy_trigger,
    predictor_gate,
    reliability,
    retain,
    select,
    split_tasks,
    utility,
)
from rsi_workbench.protocol.metrics import brier, ece, nll, ranking_accuracy


# -- eq. 7: utility and selection ---------------------------------------------------------------
def test_utility_weighted_terms_minus_uncertainty_penalty():
    terms = {"p_all_pass": 0.6, "pass_fraction": 0.8}
    assert utility(terms, UtilitySpec()) == pytest.approx(0.6 + 0.25 * 0.8)
    assert utility(terms, UtilitySpec(uncertainty_penalty=0.5), 0.4) == pytest.approx(0.8 - 0.2)
    with pytest.raises(KeyError, match="pass_fraction"):
        utility({"p_all_pass": 1.0}, UtilitySpec())


def _cands():
    return [
        ScoredCandidate(0, True, utility=0.3, uncertainty=0.1),
        ScoredCandidate(1, False, "does not compile", utility=0.9, uncertainty=0.9),
        ScoredCandidate(2, True, utility=0.7, uncertainty=0.2),
        ScoredCandidate(3, True, utility=0.5, uncertainty=0.6),
    ]


def test_select_removes_invalid_before_ranking_and_takes_argmax():
    d = select(_cands(), UtilityArgmax(), budget_remaining=10, rng=random.Random(0))
    assert d.removed_invalid == [1]
    assert d.order == [2, 3, 0]
    assert d.selected == [2] and d.outcome == "selected" and d.rule_kind == "utility"


def test_select_must_fit_the_remaining_feedback_budget():
    assert (
        select(_cands(), UtilityArgmax(), budget_remaining=0.5, rng=random.Random(0)).outcome
        == "refused_budget"
    )
    d = select(_cands(), UtilityArgmax(), budget_remaining=1.5, rng=random.Random(0), batch_size=2)
    assert d.selected == [2]  # the second would exceed the budget
    d = select(_cands(), UtilityArgmax(), budget_remaining=2.0, rng=random.Random(0), batch_size=2)
    assert d.selected == [2, 3]
    assert fit_budget([0, 1, 2], {0: 2.0, 1: 1.0, 2: 1.0}, 1.5, 2) == [1]


def test_select_no_valid_candidate():
    d = select([ScoredCandidate(0, False, "x")], UtilityArgmax(), budget_remaining=5, rng=random.Random(0))
    assert d.outcome == "no_valid_candidate" and d.selected == []


def test_random_k_is_a_seeded_permutation_of_feasible_candidates():
    a = select(_cands(), RandomK(), budget_remaining=5, rng=random.Random(3))
    b = select(_cands(), RandomK(), budget_remaining=5, rng=random.Random(3))
    assert a.order == b.order and sorted(a.order) == [0, 2, 3] and a.rule_kind == "random"


def test_information_gain_prefers_the_most_uncertain_and_is_labelled_acquisition():
    d = select(_cands(), InformationGain(), budget_remaining=5, rng=random.Random(0))
    assert d.order == [3, 2, 0] and d.rule_kind == "acquisition"


# -- eq. 8: admission of imagined trajectories --------------------------------------------------
def test_admission_conjuncts():
    c = AdmissionCriteria(enabled=True, min_utility=0.5, max_uncertainty=0.3)
    assert admit_imagined(True, 0.6, 0.2, "E1", c).admitted
    assert not admit_imagined(False, 0.6, 0.2, "E1", c).admitted  # invalid
    assert not admit_imagined(True, 0.4, 0.2, "E1", c).admitted  # R < r_min
    assert not admit_imagined(True, 0.6, 0.4, "E1", c).admitted  # C^U fails
    assert not admit_imagined(True, 0.6, 0.2, "E0", c).admitted  # evidence not in E_train
    assert not admit_imagined(True, 0.6, 0.2, "E1", AdmissionCriteria()).admitted  # imagination off
    assert admit_imagined(True, 0.6, 9.9, "E1", AdmissionCriteria(enabled=True)).admitted  # C^U disabled


# -- eq. 10: reliability ------------------------------------------------------------------------
def _units(n, probs, label, version="v1", tasks=3):
    return [(f"t{i % tasks}", version, probs, label) for i in range(n)]


def test_reliability_insufficient_below_min_predictions_even_if_perfect():
    v = reliability(_units(19, [1.0, 0.0], 0), "v1", ReliabilityCriteria())
    assert v.verdict == "insufficient" and v.n_predictions == 19
    assert v.metrics["brier"] == 0.0  # perfect, still insufficient


def test_reliability_insufficient_coverage_of_tasks():
    v = reliability(_units(40, [1.0, 0.0], 0, tasks=2), "v1", ReliabilityCriteria(min_groups=3))
    assert v.verdict == "insufficient" and v.n_groups == 2


def test_reliability_reliable_and_unreliable():
    assert reliability(_units(20, [1.0, 0.0], 0), "v1", ReliabilityCriteria()).verdict == "reliable"
    v = reliability(_units(20, [0.5, 0.5], 0), "v1", ReliabilityCriteria())
    # Brier = 0.5² + 0.5² = 0.5 > 0.25; ECE = |1 − 0.5| = 0.5 > 0.1
    assert v.verdict == "unreliable"
    assert v.metrics["brier"] == pytest.approx(0.5) and v.metrics["ece"] == pytest.approx(0.5)
    # only ECE fails: confident (0.8) but always right → ECE 0.2, Brier 0.08
    v = reliability(_units(20, [0.8, 0.2], 0), "v1", ReliabilityCriteria())
    assert v.verdict == "unreliable" and v.metrics["brier"] == pytest.approx(0.08)


def test_reliability_counts_only_predictions_of_the_current_version():
    units = _units(30, [0.5, 0.5], 0, version="old") + _units(5, [1.0, 0.0], 0, version="new")
    v = reliability(units, "new", ReliabilityCriteria())
    assert v.verdict == "insufficient" and v.n_predictions == 5 and v.n_excluded_other_versions == 30


# -- eq. 11: the adaptation trigger -------------------------------------------------------------
@pytest.mark.parametrize(
    "verdict,n,budget,cost,enabled,expected",
    [
        ("unreliable", 25, 10.0, 5.0, True, True),
        ("reliable", 25, 10.0, 5.0, True, False),  # not unreliable
        ("insufficient", 25, 10.0, 5.0, True, False),  # insufficient never triggers
        ("unreliable", 19, 10.0, 5.0, True, False),  # D_adapt not sufficient
        ("unreliable", 25, 4.0, 5.0, True, False),  # B_update < ĉ_adapt
        ("unreliable", 25, 5.0, 5.0, True, True),  # B_update = ĉ_adapt suffices
        ("unreliable", 25, 10.0, 5.0, False, False),  # path disabled ⇒ u^W = 0
    ],
)
def test_adaptation_trigger_three_conjuncts(verdict, n, budget, cost, enabled, expected):
    t = adaptation_trigger(verdict, n, budget, cost, AdaptationCriteria(enabled=enabled, min_examples=20))
    assert t.triggered is expected
    assert set(t.conjuncts) == {"path_enabled", "unreliable", "data_sufficient", "budget_sufficient"}


def test_policy_trigger():
    c = PolicyUpdateCriteria(enabled=True, min_records=8, cost=2.0)
    assert policy_trigger(8, 2.0, c).triggered
    assert not policy_trigger(7, 2.0, c).triggered
    assert not policy_trigger(8, 1.0, c).triggered
    assert not policy_trigger(8, 2.0, PolicyUpdateCriteria()).triggered  # fixed coder: u^π = 0


# -- eq. 13–18: gates and retention -------------------------------------------------------------
def test_predictor_gate_brier_must_improve_and_ranking_must_not_fall():
    c = PredictorGateCriteria()
    cur = {"brier": 0.3, "ranking_accuracy": 0.7}
    assert predictor_gate(cur, {"brier": 0.2, "ranking_accuracy": 0.7}, c, 5).passed
    assert not predictor_gate(cur, {"brier": 0.2, "ranking_accuracy": 0.6}, c, 5).passed
    assert not predictor_gate(cur, {"brier": 0.3, "ranking_accuracy": 0.9}, c, 5).passed
    g = predictor_gate(
        cur, {"brier": 0.2, "ranking_accuracy": 0.65}, PredictorGateCriteria(max_ranking_drop=0.1), 5
    )
    assert g.passed and g.thresholds["max_ranking_drop"] == 0.1 and g.current == cur


def test_policy_gate():
    assert policy_gate({"utility": 0.4}, {"utility": 0.5}, PolicyGateCriteria(), 3).passed
    assert not policy_gate({"utility": 0.4}, {"utility": 0.4}, PolicyGateCriteria(), 3).passed
    assert not policy_gate({"utility": None}, {"utility": 0.4}, PolicyGateCriteria(), 0).passed


def test_failed_component_gate_keeps_that_component_only():
    a = assemble(u_pi=True, g_pi=True, u_w=True, g_w=False)
    assert a.policy_changed and not a.predictor_changed and a.anything_changed
    pair = pair_gate(
        {"utility": 0.5, "brier": 0.2}, {"utility": 0.6, "brier": 0.2}, PairGateCriteria(), 4, True
    )
    r = retain(("pi0", "phi0"), ("pi1", "phi0"), pair, ("pi1", "phi1"))
    assert (r.policy_version, r.predictor_version) == ("pi1", "phi0") and not r.rolled_back


def test_failed_pair_gate_rolls_back_both():
    a = assemble(True, True, True, True)
    assert a.policy_changed and a.predictor_changed
    pair = pair_gate(
        {"utility": 0.5, "brier": 0.2}, {"utility": 0.4, "brier": 0.1}, PairGateCriteria(), 4, True
    )
    assert not pair.passed
    r = retain(("pi0", "phi0"), ("pi1", "phi1"), pair, ("pi1", "phi1"))
    assert (r.policy_version, r.predictor_version) == ("pi0", "phi0") and r.rolled_back
    worse_fit = pair_gate(
        {"utility": 0.5, "brier": 0.2}, {"utility": 0.5, "brier": 0.3}, PairGateCriteria(), 4, True
    )
    assert not worse_fit.passed


def test_pair_gate_skipped_with_g_pair_one_when_nothing_changed():
    a = assemble(u_pi=False, g_pi=None, u_w=True, g_w=False)
    assert not a.anything_changed
    g = pair_gate_skipped()
    assert g.passed and g.skipped and g.n_units == 0
    r = retain(("pi0", "phi0"), ("pi0", "phi0"), g)
    assert (r.policy_version, r.predictor_version) == ("pi0", "phi0") and not r.rolled_back


def test_pair_gate_asserts_matched_state_signatures():
    with pytest.raises(AssertionError, match="state signatures"):
        pair_gate({"utility": 0.5}, {"utility": 0.5}, PairGateCriteria(), 1, signatures_matched=False)


# -- splits and budgets -------------------------------------------------------------------------
def test_disjoint_split_assertion_fires_on_overlap():
    assert_disjoint(update={"a", "b"}, gate={"c"}, audit={"d"})
    with pytest.raises(SplitOverlap, match="'gate' and 'update'.*'b'"):
        assert_disjoint(update={"a", "b"}, gate={"b", "c"}, audit={"d"})


def test_split_tasks_is_deterministic_disjoint_and_complete():
    ids = [f"t{i}" for i in range(20)]
    s = split_tasks(ids, 0.3, seed=1)
    assert s == split_tasks(ids, 0.3, seed=1)
    assert (
        len(s["gate"]) == 6
        and set(s["gate"]).isdisjoint(s["update"])
        and len(s["gate"]) + len(s["update"]) == 20
    )


def test_budget_refusal_through_the_ledger():
    ledger = BudgetLedger({"external_feedback": 2.0, "update_compute": 1.0})
    ledger.spend("external_feedback", 2.0)
    with pytest.raises(BudgetExceeded):
        ledger.spend("external_feedback", 1.0)
    assert ledger.remaining("external_feedback") == 0.0 and ledger.remaining("update_compute") == 1.0
    d = select(
        _cands(),
        UtilityArgmax(),
        budget_remaining=ledger.remaining("external_feedback"),
        rng=random.Random(0),
    )
    assert d.outcome == "refused_budget"


# -- metrics ------------------------------------------------------------------------------------
def test_metrics_hand_computed():
    assert brier([[0.7, 0.3], [0.2, 0.8]], [0, 0]) == pytest.approx((0.09 + 0.09 + 0.64 + 0.64) / 2)
    assert nll([[0.5, 0.5]], [1]) == pytest.approx(0.6931, abs=1e-4)
    assert ece([[0.9, 0.1], [0.9, 0.1]], [0, 1]) == pytest.approx(0.4)
    # group 1: predicted order matches observed (1 pair); group 2: reversed (1 pair); tie in obs ignored
    assert ranking_accuracy(
        [[(0.9, 1.0), (0.1, 0.0)], [(0.9, 0.0), (0.1, 1.0), (0.5, 1.0)]]
    ) == pytest.approx(1 / 3)
    assert ranking_accuracy([[(0.5, 1.0), (0.5, 1.0)]]) is None


# -- regression readouts, held-out rounds and the initial design (reactions drives these) ------
def test_observation_split_holds_out_evenly_spaced_rounds() -> None:
    from rsi_workbench.protocol.decisions import observation_split

    assert [k for k in range(1, 17) if observation_split(k, 0.25) == "gate"] == [4, 8, 12, 16]
    assert [k for k in range(1, 11) if observation_split(k, 0.2) == "gate"] == [5, 10]
    assert all(observation_split(k, 0.0) == "update" for k in range(1, 50))
    with pytest.raises(ValueError, match="gate_fraction"):
        observation_split(1, 1.0)


def test_initial_design_ignores_predictions_and_depends_only_on_seed_cycle_task() -> None:
    from rsi_workbench.protocol.decisions import ScoredCandidate, initial_design_select

    plain = [ScoredCandidate(i, True) for i in range(50)]
    scored = [ScoredCandidate(i, True, "", utility=float(i), uncertainty=1.0) for i in range(50)]
    a = initial_design_select(plain, seed=3, cycle=2, task_id="t", budget_remaining=5)
    b = initial_design_select(scored, seed=3, cycle=2, task_id="t", budget_remaining=5)
    assert a.selected == b.selected and a.rule == "random_k"
    others = {
        initial_design_select(plain, seed=s, cycle=c, task_id=t, budget_remaining=5).selected[0]
        for s, c, t in [(4, 2, "t"), (3, 3, "t"), (3, 2, "u")]
    }
    assert len(others | {a.selected[0]}) > 1
    assert (
        initial_design_select(plain, seed=3, cycle=2, task_id="t", budget_remaining=0).outcome
        == "refused_budget"
    )


def test_gates_compare_the_declared_score() -> None:
    from rsi_workbench.protocol.decisions import (
        PairGateCriteria,
        PredictorGateCriteria,
        pair_gate,
        predictor_gate,
    )

    c = PredictorGateCriteria(score="gaussian_nll")
    assert predictor_gate({"gaussian_nll": 4.0}, {"gaussian_nll": 3.5}, c, 3).passed
    worse = predictor_gate({"gaussian_nll": 3.0}, {"gaussian_nll": 3.5}, c, 3)
    assert not worse.passed and "gaussian_nll gain -0.5000" in worse.reasons[0]
    # a Brier gate ignores an NLL metric: no evidence of improvement in its own score
    assert not predictor_gate({"gaussian_nll": 4.0}, {"gaussian_nll": 3.5}, PredictorGateCriteria(), 3).passed
    pc = PairGateCriteria(score="gaussian_nll", max_brier_increase=0.1)
    assert pair_gate(
        {"utility": 1, "gaussian_nll": 3.0}, {"utility": 1, "gaussian_nll": 3.05}, pc, 2, True
    ).passed
    assert not pair_gate(
        {"utility": 1, "gaussian_nll": 3.0}, {"utility": 1, "gaussian_nll": 3.2}, pc, 2, True
    ).passed


def test_gaussian_nll_by_hand() -> None:
    import math

    from rsi_workbench.protocol.metrics import gaussian_nll, mean_abs_z, mean_absolute_error

    u = [(0.0, 1.0, 1.0), (10.0, 2.0, 6.0)]
    want = (0.5 * math.log(2 * math.pi) + 0.5 + 0.5 * math.log(2 * math.pi * 4) + 0.5 * 4) / 2
    assert gaussian_nll(u) == pytest.approx(want)
    assert mean_absolute_error(u) == pytest.approx(2.5) and mean_abs_z(u) == pytest.approx(1.5)
    assert gaussian_nll([]) is None


def test_settings_gaussian_readout_gates_on_nll_and_held_out_rounds_refuse_policy_updates() -> None:
    from rsi_workbench.protocol.loop import ProtocolSettings

    s = ProtocolSettings.model_validate(
        {"readout": "gaussian", "gates": {"predictor": {"min_brier_gain": 0.1}}}
    )
    assert s.gates.predictor.score == "gaussian_nll" and s.gates.pair.score == "gaussian_nll"
    assert ProtocolSettings().gates.predictor.score == "brier"
    with pytest.raises(ValueError, match="held_out_observations supports predictor updates only"):
        ProtocolSettings.model_validate(
            {"gate_data": "held_out_observations", "policy_update": {"enabled": True}}
        )
