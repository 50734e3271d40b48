"""Harness replay and accept-on-dev (eq. 10-11), and the credit/SFT adapters, on a real smoke campaign."""

from __future__ import annotations

from pathlib import Path

import pytest

from rsi_workbench.config import load_config
from rsi_workbench.discovery.credit import assign_credit, credit_records_from
from rsi_workbench.discovery.harness import (
    DevScore,
    _edit,
    diagnose,
    propose_edits,
    select_dev,
)
from rsi_workbench.discovery.records import load_records
from rsi_workbench.discovery.workflow import Harness
from rsi_workbench.experiments.discovery.round import Config, report, run_experiment
from rsi_workbench.records import Run

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> Path:
    from rsi_workbench.experiments.discovery.campaign import Config as CampaignConfig
    from rsi_workbench.experiments.discovery.campaign import run_campaign

    cfg = load_config(REPO / "configs/discovery/smoke.yaml", CampaignConfig)
    out = tmp_path_factory.mktemp("campaign") / "run"
    return run_campaign(cfg, out, progress=False)


def _score(v: float, rel: float = 1.0, calls: float = 10.0, q: float = 5.0) -> DevScore:
    return DevScore("l", "h", v, q, q, 6.0, 0.0, 1.0, rel, 0, calls, 1.0, ())


def test_select_dev_keeps_incumbent_unless_beaten():
    inc = ("theta", "psi")
    assert select_dev({inc: _score(5.0), ("theta", "psi+"): _score(5.0)}, inc) == inc  # tie: no change
    assert select_dev({inc: _score(5.0), ("theta+", "psi"): _score(5.5)}, inc) == ("theta+", "psi")
    assert select_dev({inc: _score(5.0), ("theta+", "psi"): _score(5.5)}, inc, min_gain=1.0) == inc
    # equal value, better reliability is not enough to beat the incumbent's value
    assert select_dev({inc: _score(5.0, 0.5), ("t", "p"): _score(5.0, 1.0)}, inc) == inc
    # among tied challengers, the one changing fewer components wins
    tied = {inc: _score(4.0), ("theta+", "psi+"): _score(5.0), ("theta+", "psi"): _score(5.0)}
    assert select_dev(tied, inc) == ("theta+", "psi")


def test_harness_edits_change_the_workflow():
    h = Harness()
    for kind in ("repeated_exploration", "failed_tool_calls", "premature_convergence", "sparse_critique"):
        new, why = _edit(h, kind)  # type: ignore[misc]
        assert new.digest() != h.digest() and new.version == f"{h.version}+{kind}" and why
    floor = Harness(roles={"stale_after": 1, "max_children": 1})
    assert _edit(floor, "repeated_exploration") is None  # an edit that changes nothing is no candidate


@pytest.mark.slow
def test_credit_and_sft_adapters_on_campaign_records(campaign):
    from rsi_workbench.discovery.sft import byte_level_tokenizer, role_accounting, sft_trajectories_from

    recs = load_records(campaign)
    res = assign_credit(credit_records_from(recs))
    roles = {t.trajectory_id: t.role for t in recs.turns}
    for i, w in res.w.items():
        assert roles[i] in ("lead", "generation", "evolution") and 0 <= w <= 2
    # every promoted hypothesis: Lead coordination 0.2, producers share 0.8
    for h in recs.hypotheses:
        a = res.alpha.get(h.hypothesis_id, {})
        lead = sum(v for i, v in a.items() if roles[i] == "lead")
        assert lead == pytest.approx(0.2) and sum(a.values()) == pytest.approx(1.0)
    trajs = sft_trajectories_from(recs, res)
    assert {t.id for t in trajs} == set(roles)
    acc = role_accounting(trajs, byte_level_tokenizer()).set_index("role")
    for r in ("critique", "compiler", "progress"):
        assert acc.loc[r, "trained"] == 0 and acc.loc[r, "supervised_tokens"] == 0
    assert acc.loc["lead", "trained"] > 0
    assert 0 < acc.loc["total", "supervised_tokens"] < acc.loc["total", "sequence_tokens"]
    # diagnoses rest on records that exist; edits never repeat the incumbent
    known = {h.hypothesis_id for h in recs.hypotheses} | set(roles)
    diags = diagnose(recs, campaign)
    for d in diags:
        assert d.count > 0 and set(d.evidence) <= known
    inc = Harness()
    cands = propose_edits(inc, diags, max_candidates=5)
    digests = [h.digest() for h, _ in cands]
    assert inc.digest() not in digests and len(set(digests)) == len(digests)
    assert propose_edits(inc, diags, max_candidates=0) == []


@pytest.mark.slow
def test_one_accept_on_dev_round(campaign, tmp_path):
    with pytest.raises(ValueError, match="fresh questions"):
        run_experiment(
            Config(campaign=str(campaign), dev_directions=["sklearn-diabetes/progression"]), tmp_path / "x"
        )
    cfg = Config(
        campaign=str(campaign),
        dev_directions=["sklearn-breast-cancer/malignant"],
        dev_episodes=1,
        max_harness_candidates=1,
        sft={"epochs": 1, "max_length": 1024, "cpu_threads": 1},
    )
    out = run_experiment(cfg, tmp_path / "round")
    run = Run.open(out)
    kinds = [e.kind for e in run.events()]
    for k in ("credit_assigned", "theta_plus", "harness_diagnosis", "harness_candidates", "accept_decision"):
        assert k in kinds
    cands = run.events("harness_candidates")[0].payload
    incumbent = Harness.model_validate(cands["incumbent"])
    for c in cands["candidates"]:
        assert Harness.model_validate(c["harness"]).digest() != incumbent.digest()
    decision = run.events("accept_decision")[0].payload
    psis = {incumbent.version, decision["psi_plus"]}
    assert len(decision["evidence"]) == 2 * len(psis)  # {theta, theta+} x {psi, psi+}
    assert {r["lead"].split(" ")[0] for r in decision["evidence"]} == {"theta_k", "theta_k+"}
    for r in decision["evidence"]:
        assert all(Path(p).exists() for p in r["runs"])  # every pair was really executed
    n_dev = len(run.events("dev_evaluation"))
    text = report(out)
    assert "role accounting" in text and "Accept_dev" in text
    # resuming replays recorded evaluations instead of executing them again
    run_experiment(cfg, out, resume=True)
    assert len(Run.open(out).events("dev_evaluation")) == n_dev


@pytest.mark.slow
def test_second_round_starts_from_a_model_backed_campaign(campaign, tmp_path):
    """Rediscovery: the next campaign runs with theta (a checkpoint) as its Lead; the next round fine-tunes from it."""
    from rsi_workbench.discovery.model_lead import load_model_lead
    from rsi_workbench.discovery.sft import byte_level_tokenizer, save_checkpoint, tiny_causal_lm
    from rsi_workbench.experiments.discovery.campaign import Config as CampaignConfig
    from rsi_workbench.experiments.discovery.campaign import run_campaign

    holder = Run.create(tmp_path / "theta", {"theta": "k"}, kind="test")
    tok = byte_level_tokenizer()
    sha = save_checkpoint(holder, tiny_causal_lm(len(tok), seed=7), tok, name="theta_k")
    holder.close()
    cfg = load_config(REPO / "configs/discovery/smoke.yaml", CampaignConfig)
    camp2 = run_campaign(
        cfg, tmp_path / "camp2", lead=load_model_lead(tmp_path / "theta", sha), progress=False
    )
    decisions = load_records(camp2).lead_decisions
    assert decisions and all(d.lead == f"model-lead:{sha[:12]}" and d.valid for d in decisions)
    with pytest.raises(ValueError, match="name its checkpoint"):
        run_experiment(
            Config(campaign=str(camp2), dev_directions=["sklearn-breast-cancer/malignant"]), tmp_path / "x"
        )
    with pytest.raises(ValueError, match="RUN_DIR@SHA256"):
        Config(campaign=str(camp2), dev_directions=["a"], theta_checkpoint="nope")
    rc = Config(
        campaign=str(camp2),
        dev_directions=["sklearn-breast-cancer/malignant"],
        dev_episodes=1,
        max_harness_candidates=0,
        theta_checkpoint=f"{tmp_path / 'theta'}@{sha}",
        sft={"epochs": 1, "max_length": 1024, "cpu_threads": 1},
    )
    out = run_experiment(rc, tmp_path / "round2")
    run = Run.open(out)
    assert run.events("theta_plus")[0].payload["base_model"].endswith(sha)
    assert run.events("harness_candidates")[0].payload["candidates"] == []
    leads = {r["lead"] for r in run.events("accept_decision")[0].payload["evidence"]}
    assert f"theta_k (model-lead {sha[:12]})" in leads and len(leads) == 2
