"""Transfer priors in the ``reactions`` experiment (issue 32): a prior never sees its target (a planted
leak must fail), per-arm settings, the prior cache key, the preflight's named errors, the CI smoke of
``configs/reactions/transfer.yaml`` and the dashboards built from its runs."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from rsi_workbench.config import ConfigError
from rsi_workbench.domains.reactions import prior as prior_mod
from rsi_workbench.domains.reactions.arms import MethodSpec, arm_of
from rsi_workbench.domains.reactions.grid import PERERA_2018, encode_conditions, load_grid
from rsi_workbench.domains.reactions.prior import (
    PriorLeakError,
    PriorSpec,
    check_no_leak,
    prior_cache_key,
    prior_data,
)
from rsi_workbench.domains.reactions.transfer import pretrained_prior
from rsi_workbench.experiments.preflight import preflight
from rsi_workbench.experiments.reactions import experiment as rx
from rsi_workbench.records import Run, load_events
from rsi_workbench.world.ensemble import EnsembleConfig

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "configs" / "reactions" / "transfer_smoke.yaml"
TARGET = ["1a, 6-Cl-Q", "2a, Boronic Acid"]


def _grid(campaign: list[str] = TARGET):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_grid(PERERA_2018.model_copy(update={"name": "t", "campaign": campaign}))


def _load(path: Path) -> rx.Config:
    from rsi_workbench.config import read_config_file

    return rx.Config.model_validate(read_config_file(path))


# -- the leak check -------------------------------------------------------------------------------
def test_prior_sources_never_include_the_target() -> None:
    g = _grid()
    for share in ("any", "Reactant_1_Short_Hand", "Reactant_2_Name"):
        d = prior_data(g, PriorSpec(share=share))
        assert tuple(TARGET) not in d.sources and d.sources
        assert not set(d.source_rows) & set(int(r) for r in g.rows)
    d = prior_data(g, PriorSpec(share="Reactant_2_Name"))
    assert {s[1] for s in d.sources} == {TARGET[1]} and len(d.sources) == 3  # the shared column's value


def test_planted_leak_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """A source selection that lets the target campaign in must make the prior fail, not train."""
    g = _grid()
    honest = prior_mod.select_sources

    def leaky(grid, spec, frame):  # type: ignore[no-untyped-def]
        return [*honest(grid, spec, frame), tuple(TARGET)]  # plant: the target among the sources

    monkeypatch.setattr(prior_mod, "select_sources", leaky)
    with pytest.raises(PriorLeakError, match="target campaign"):
        prior_data(g, PriorSpec(share="any"))


def test_planted_leak_by_rows_fails() -> None:
    """A table whose rows include one CSV line of the target fails even if its campaign list is clean."""
    g = _grid()
    d = prior_data(g, PriorSpec(share="any"))
    import dataclasses

    leaked = dataclasses.replace(d, source_rows=(*d.source_rows, int(g.rows[5])))
    with pytest.raises(PriorLeakError, match="row"):
        check_no_leak(g, leaked)


def test_shuffled_prior_permutes_the_same_values() -> None:
    g = _grid()
    a = prior_data(g, PriorSpec(share="any"))
    b = prior_data(g, PriorSpec(share="any", shuffle=True), seed=3)
    assert np.allclose(np.sort(a.y), np.sort(b.y)) and not np.allclose(a.y, b.y)


# -- cache key and cache ----------------------------------------------------------------------------
def test_prior_cache_key_and_reuse(tmp_path: Path) -> None:
    g = _grid()
    d = prior_data(g, PriorSpec(share="Reactant_2_Name"))
    cfg = EnsembleConfig(members=2, hidden=4, fit_steps=5).model_dump(mode="json")
    k = prior_cache_key(d, 1, cfg)
    assert k == prior_cache_key(d, 1, cfg)
    other = prior_data(g, PriorSpec(share="Reactant_1_Short_Hand"))  # another source set
    shuffled = prior_data(g, PriorSpec(share="Reactant_2_Name", shuffle=True), seed=1)
    assert (
        len(
            {k, prior_cache_key(d, 2, cfg), prior_cache_key(other, 1, cfg), prior_cache_key(shuffled, 1, cfg)}
        )
        == 4
    )
    ens = EnsembleConfig(members=2, hidden=4, fit_steps=5)
    p1, prov1 = pretrained_prior(g, PriorSpec(share="Reactant_2_Name"), 1, ens, tmp_path, [0, 1, 2])
    p2, prov2 = pretrained_prior(g, PriorSpec(share="Reactant_2_Name"), 1, ens, tmp_path, [0, 1, 2])
    assert (tmp_path / f"{prov1['cache_key']}.pt").exists()
    assert not prov1["cached"] and prov2["cached"] and prov1["cache_key"] == prov2["cache_key"]
    assert prov1["first_observations_mae"] == pytest.approx(prov2["first_observations_mae"])
    assert p1.version == p2.version


# -- per-arm settings ----------------------------------------------------------------------------------
def test_arms_parse_and_old_configs_keep_working() -> None:
    old = rx.Config.model_validate({"methods": ["predictor_utility", "gp_ei"], "uncertainty_penalty": 0.3})
    s = rx.protocol_settings(old, "predictor_utility", 10)
    assert s.utility.uncertainty_penalty == 0.3 and s.adaptation.enabled
    cfg = _load(SMOKE)
    arms = {a.name: a for a in map(arm_of, cfg.methods)}
    assert arms["prior_only_l0"].adaptation is False and arms["prior_only_l0"].lambda_ == 0
    assert arms["gp_ei_prior"].kind == "gp_ei" and arms["gp_ei_prior"].prior is not None
    assert arms["shuffled_prior_l0"].prior is not None and arms["shuffled_prior_l0"].prior.shuffle
    s = rx.protocol_settings(cfg, arms["prior_protocol_l05"], 10)
    assert s.utility.uncertainty_penalty == 0.5 and s.adaptation.enabled
    assert not rx.protocol_settings(cfg, arms["prior_only_l0"], 10).adaptation.enabled
    again = rx.Config.model_validate(cfg.model_dump(mode="json"))  # the frozen run config round-trips
    assert again == cfg
    dumped = cfg.model_dump(mode="json")["methods"][2]
    assert "lambda" in dumped and dumped["prior"]["from"] == "campaigns"


@pytest.mark.parametrize(
    "arm, match",
    [
        ({"name": "r", "kind": "random", "prior": {"share": "any"}}, "a prior applies"),
        ({"name": "g", "kind": "gp_ei", "lambda": 0}, "protocol kinds only"),
        ({"name": "i", "kind": "predictor_information", "lambda": 0}, "predictor_utility kinds only"),
    ],
)
def test_bad_arms_are_named(arm: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        MethodSpec.model_validate(arm)


def test_duplicate_arm_names_rejected() -> None:
    with pytest.raises(ValueError, match="unique"):
        rx.Config.model_validate({"methods": ["gp_ei", {"name": "gp_ei", "kind": "gp_ei"}]})


@pytest.mark.parametrize(
    "prior, field",
    [
        ({"share": "Electrophile"}, "prior.share"),
        ({"share": "any", "exclude": [["1z, nothing", "2a, Boronic Acid"]]}, "prior.exclude.0"),
    ],
)
def test_preflight_names_file_and_field(tmp_path: Path, prior: dict[str, object], field: str) -> None:
    raw = _load(SMOKE).model_dump(mode="json")
    raw["methods"][2]["prior"] = {"from": "campaigns", **prior}
    cfg = rx.Config.model_validate(raw)
    out = tmp_path / "never"
    with pytest.raises(ConfigError) as e:
        preflight(cfg, "my.yaml")
    msg = str(e.value)
    assert "my.yaml" in msg and "methods.2.prior" in msg and field in msg
    assert "suzuki_miyaura_perera2018_5760.csv" in msg and not out.exists()


def test_a_researchers_own_screen(tmp_path: Path) -> None:
    """The same keys on a CSV the project never saw (two campaign columns, three campaigns) run, and
    the report names the prior's source campaign."""
    rng = np.random.default_rng(0)
    rows = ["plate,substrate,cat,temp,y"]
    for plate, sub in (("p1", "A"), ("p1", "B"), ("p2", "A")):
        for cat in ("c1", "c2", "c3"):
            for t in (20, 40, 60):
                rows.append(f"{plate},{sub},{cat},{t},{rng.uniform(0, 100):.2f}")
    csv = tmp_path / "screen.csv"
    csv.write_text("\n".join(rows) + "\n")
    spec = {
        "name": "mine",
        "path": str(csv),
        "factors": [{"column": "cat"}, {"column": "temp", "kind": "numeric"}],
        "yield_column": "y",
        "campaign_columns": ["plate", "substrate"],
        "campaign": ["p1", "A"],
    }
    arm = {"name": "pp", "kind": "predictor_utility", "prior": {"from": "campaigns", "share": "substrate"}}
    cfg = rx.Config.model_validate(
        {
            "grids": [spec],
            "methods": [arm],
            "runs": 1,
            "n_initial": 3,
            "n_total": 5,
            "report_at": [5],
            "predictor": {"members": 2, "hidden": 4, "fit_steps": 5},
        }
    )
    preflight(cfg, "screen.yaml")
    d = prior_data(load_grid(cfg.grids[0]), arm_of(cfg.methods[0]).prior)  # type: ignore[arg-type]
    assert d.sources == (("p2", "A"),) and len(d.index) == 9
    out = rx.run_experiment(cfg, tmp_path / "rx")
    assert "pp: 1 source campaign(s) [p2 + A]" in rx.report(out)


# -- the CI smoke of configs/reactions/transfer.yaml, and the dashboards on its runs ----------------------
@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cfg = _load(SMOKE)
    preflight(cfg, str(SMOKE))
    out = tmp_path_factory.mktemp("transfer") / "rx"
    rx.run_experiment(cfg, out)
    return out


def test_transfer_smoke(smoke_run: Path) -> None:
    df = rx.runs_frame(smoke_run)
    arms = {arm_of(m).name for m in _load(SMOKE).methods}
    assert set(df["method"]) == arms and len(df) == 2 * 2 * len(arms)
    pri = load_events(smoke_run, kind="prior_pretrained")
    assert len(pri) == 2 * 2 * 5  # 5 prior arms × 2 targets × 2 seeds
    for r in pri.itertuples():
        assert list(r.target_campaign) not in [list(s) for s in r.source_campaigns]
    # the three protocol arms with the same prior and seed share one cached file
    assert len(set(pri[~pri["shuffled"]]["cache_key"])) == 2 * 2
    assert len(list((smoke_run / "priors").glob("*.pt"))) == 2 * 2 * 2
    only = df[df["method"] == "prior_only_l0"]
    assert (only["adaptations"] == 0).all() and (only["adaptations_triggered"] == 0).all()
    child = Run.open(smoke_run / str(df[df["method"] == "prior_protocol_l0"]["run_dir"].iloc[0]))
    assert (
        child.config["prior"]["source_campaigns"]
        and child.config["protocol"]["utility"]["uncertainty_penalty"] == 0
    )
    text = rx.report(smoke_run)
    assert "source campaign(s)" in text and "MAE on the target's first 4 observations" in text


def test_dashboards_read_transfer_runs(smoke_run: Path) -> None:
    from rsi_workbench.viz.reactions import arm_label, plot_best_yield_curves
    from rsi_workbench.widgets import gate_tuner, reaction_curves

    runs = rx.runs_frame(smoke_run)
    d = runs[runs["grid"] == "perera-1a+2a"]
    assert arm_label(d, "prior_only_l0") == "prior only"
    assert arm_label(d, "prior_protocol_l0") == "prior + adaptation"
    assert arm_label(d, "gp_ei_prior") == "prior as GP mean" and arm_label(d, "gp_ei") == ""
    fig = plot_best_yield_curves(runs, "perera-1a+2a")
    names = [t.name for t in fig.data if t.name]
    assert any("prior only" in n for n in names) and any("prior + adaptation" in n for n in names)
    adapted = runs[runs["adaptations"] > 0]
    assert not adapted.empty  # the smoke's protocol arms keep adapted predictors
    for r in adapted.itertuples():  # each such arm's curve carries its adaptation marks
        marks = [
            t for t in plot_best_yield_curves(runs, r.grid).data if t.name == f"{r.method}: adaptations kept"
        ]
        assert marks and sum(marks[0].customdata) >= r.adaptations
    view = reaction_curves.build(smoke_run, {})
    assert view.__panel__() is not None and reaction_curves.export_sections(smoke_run)
    child = smoke_run / str(d[d["method"] == "prior_protocol_l0"]["run_dir"].iloc[0])
    tuner = gate_tuner.build(child, {})
    assert tuner.decisions() and gate_tuner.export_sections(child)


def test_gp_ei_uses_the_prior_as_its_mean() -> None:
    """With a prior mean that puts one unrun condition far above the rest, GP-EI picks it; without the
    prior, the same observations give another pick. The prior is an offset, so the observed yields
    stay the EI incumbent."""
    from rsi_workbench.domains.reactions.baselines import BOConfig, GPExpectedImprovement
    from rsi_workbench.domains.reactions.replay import PoolView

    g = _grid()
    x, names = encode_conditions(g)
    obs = np.array([0, 50, 100, 150, 200], dtype=np.int64)
    view = PoolView(x, tuple(names), obs, g.yields[obs].astype(float))
    cfg = BOConfig(fit_steps=5)
    plain = GPExpectedImprovement([1], cfg).select([view])[0][0]
    target = next(i for i in (300, 301, 302) if i != plain)
    mean = np.zeros(g.n)
    mean[target] = 1000.0
    assert GPExpectedImprovement([1], cfg, [mean]).select([view])[0][0] == target
