"""ω beside the planted oracle value per Lead decision (viz/omega.py) and its place in the trees
dashboard: a small real campaign on a planted direction, the credit experiment's own decision samples
as the reference, and hand-edited records for the cases without an oracle value."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from rsi_workbench.discovery.records import DiscoveryRecords, load_records
from rsi_workbench.viz.omega import (
    NO_TRUTH,
    NO_VERSION,
    fmt_rho,
    omega_oracle_info,
    omega_oracle_summary,
    omega_oracle_table,
    plot_omega_oracle,
)

PLANTED = "synthetic-planted-16/outcome"


@pytest.fixture(scope="module")
def planted_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five episodes of the ε-random behaviour Lead on a planted direction (a few seconds)."""
    from rsi_workbench.domains.tabular.credit_policy import EpsilonLead
    from rsi_workbench.experiments.discovery import campaign as camp_mod

    cfg = camp_mod.Config(
        directions=[PLANTED],
        seed=0,
        episodes=5,
        n_bootstrap=50,
        outer_folds=3,
        budgets={"agent_calls": 400, "external_feedback": 40},  # type: ignore[arg-type]
        harness={"critique": {"comparisons_per_version": 2}},  # type: ignore[arg-type]
    )
    out = tmp_path_factory.mktemp("omega") / "d16-s0"
    return camp_mod.run_campaign(cfg, out, lead=EpsilonLead(0.35), progress=False)


def test_omega_and_oracle_pair_as_the_credit_experiment_does(planted_run: Path) -> None:
    from rsi_workbench.domains.tabular.oracle import omega_tracking
    from rsi_workbench.experiments.discovery.credit_info import decision_samples

    info = omega_oracle_info(planted_run)
    d = info.decisions
    assert list(d["episode"]) == list(range(5)) and info.planted
    recs = load_records(planted_run)
    for caps, col, variant in ((True, "omega", "paper"), (False, "omega_no_caps", "no_caps")):
        rows = decision_samples(planted_run, family_caps=caps)  # the experiment's own path to ω and oracle
        by_traj = {r["trajectory"]: r for r in rows}
        assert set(by_traj) == set(d.loc[d["in_rho"], "trajectory"])
        for _, r in d[d["in_rho"]].iterrows():
            ref = by_traj[r["trajectory"]]
            assert r["episode"] == ref["episode"] and r["operation"] == ref["operation"]
            assert r[col] == pytest.approx(ref["omega"])
            assert r["oracle"] == pytest.approx(ref["oracle"])
        track = omega_tracking(rows, {planted_run.name: recs})
        for key in ("oracle", "episode"):
            got, want = info.rho[variant][key], track[f"rho_{key}"]
            assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want)
        assert info.n["oracle"] == track["n_oracle"] and info.n["episode"] == track["n_episode"]
    assert (d["omega"] != d["omega_no_caps"]).any()  # the family budgets change ω here
    text = omega_oracle_summary(info)
    assert f"ρ(ω, oracle) **{fmt_rho(info.rho['paper']['oracle'])}** (n 5)" in text
    assert f"ρ(ω, episode) **{fmt_rho(info.rho['paper']['episode'])}** (n 5)" in text
    table = omega_oracle_table(info)
    assert all(v not in ("", "nan", "None") for v in table.astype(str).to_numpy().ravel())
    assert list(table["oracle value"]) == [f"{v:g}" for v in d["oracle"]]
    assert "(noise control, not in the oracle value)" in table["published"].iloc[0]  # episode 0's control
    fig = plot_omega_oracle(info)
    assert len(fig.data) == 4  # two ω variants × (vs oracle, vs episode)
    assert list(fig.data[0].x) == list(d["oracle"]) and list(fig.data[0].y) == list(d["omega"])
    assert list(fig.data[1].x) == list(d["episode"]) and list(fig.data[3].y) == list(d["omega_no_caps"])


def _moved(recs: DiscoveryRecords, **update: str) -> DiscoveryRecords:
    """The same records with every version and decision moved (another direction or domain)."""
    import dataclasses

    hyp = {k: v for k, v in update.items() if k in ("direction", "domain")}
    dec = {k: v for k, v in update.items() if k == "direction"}
    return dataclasses.replace(
        recs,
        hypotheses=[h.model_copy(update=hyp) for h in recs.hypotheses],
        lead_decisions=[d.model_copy(update=dec) for d in recs.lead_decisions],
    )


@pytest.mark.parametrize(
    "update",
    [{"direction": "sklearn-diabetes/progression"}, {"domain": "my-own-domain"}],
    ids=["real-dataset", "other-domain"],
)
def test_no_planted_truth_is_said_in_words(planted_run: Path, update: dict[str, str]) -> None:
    info = omega_oracle_info(_moved(load_records(planted_run), **update))
    d = info.decisions
    assert len(d) == 5 and not info.planted and d["oracle"].isna().all()
    assert set(d["oracle_note"]) == {NO_TRUTH}
    assert set(omega_oracle_table(info)["oracle value"]) == {NO_TRUTH}
    assert "ρ(ω, oracle): " + NO_TRUTH in omega_oracle_summary(info)
    assert not math.isnan(info.rho["paper"]["episode"])  # ρ(ω, episode) needs no oracle
    fig = plot_omega_oracle(info)
    assert [a.text for a in fig.layout.annotations][-1] == NO_TRUTH
    assert len(fig.data[0].x) == 0 and len(fig.data[1].x) == 5


def test_an_episode_without_a_valued_version_and_few_decisions(planted_run: Path) -> None:
    recs = load_records(planted_run)
    recs.hypotheses = [h for h in recs.hypotheses if h.episode != 2]  # episode 2 published nothing
    recs.lead_decisions = [d for d in recs.lead_decisions if d.episode <= 2]
    info = omega_oracle_info(recs)
    d = info.decisions.set_index("episode")
    assert d.loc[2, "oracle_note"] == NO_VERSION and math.isnan(d.loc[2, "oracle"])
    assert d.loc[1, "oracle_note"] == "" and info.n["oracle"] == 2
    assert math.isnan(info.rho["paper"]["oracle"])  # two pairs: undefined, said as such
    assert "ρ(ω, oracle) **undefined** (n 2)" in omega_oracle_summary(info)
    assert omega_oracle_table(info).set_index("episode").loc[2, "published"] == "(nothing)"


def test_trees_dashboard_shows_omega_beside_the_oracle(planted_run: Path) -> None:
    pytest.importorskip("panel")
    import panel as pn

    from rsi_workbench.viz.html import html_report
    from rsi_workbench.widgets import tree_inspector
    from rsi_workbench.widgets.commands import dashboards_for

    assert "trees" in dashboards_for(planted_run)
    view = tree_inspector.TreeInspector(run=str(planted_run))
    page = view.__panel__()
    page.get_root()  # renders to Bokeh models without error
    caption = next(o for o in page.objects if "rsi-omega-oracle" in getattr(o, "css_classes", []))
    info = omega_oracle_info(planted_run)
    assert "ω beside the oracle value, per Lead decision" in caption.object
    assert f"ρ(ω, oracle) **{fmt_rho(info.rho['paper']['oracle'])}**" in caption.object
    i = page.objects.index(caption)
    assert isinstance(page.objects[i + 1], pn.pane.Plotly)
    table = page.objects[i + 2]
    assert isinstance(table, pn.widgets.Tabulator)
    assert list(table.value["oracle value"]) == [f"{v:g}" for v in info.decisions["oracle"]]
    assert list(table.value["episode"]) == list(range(5))
    sec = tree_inspector.export_sections(planted_run)[-1]
    assert sec.title == "ω beside the oracle value, per Lead decision" and "**" not in sec.text
    assert sec.table is not None and "oracle value" in sec.table.columns and len(sec.table.rows) == 5
    assert "ω beside the oracle value" in html_report("r", [sec])
