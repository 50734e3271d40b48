"""Feedback that can mislead: the declared corruption is deterministic, misreads the same experiments
of a seed in every arm (shared random numbers), and is recorded in the events."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from rsi_workbench.domains.reactions.corruption import Corruption, CorruptionSpec
from rsi_workbench.domains.reactions.grid import PERERA_2018, load_grid
from rsi_workbench.experiments.reactions import experiment as rx
from rsi_workbench.records import Run

SPEC = CorruptionSpec(fraction=0.2, shift=-30, seed=7)


def test_the_corruption_is_deterministic_and_exact() -> None:
    a = Corruption(SPEC, "perera-1a+2a", 4001, 40)
    assert a.experiments == Corruption(SPEC, "perera-1a+2a", 4001, 40).experiments
    assert len(a.experiments) == 8 and all(1 <= j <= 40 for j in a.experiments)
    others = [
        Corruption(SPEC, "perera-1a+2a", 4002, 40),
        Corruption(SPEC, "perera-1b+2c", 4001, 40),
        Corruption(SPEC.model_copy(update={"seed": 8}), "perera-1a+2a", 4001, 40),
    ]
    assert all(o.experiments != a.experiments for o in others)  # seed, grid and own seed all matter
    j = min(a.experiments)
    assert a.read(j, 50.0) == (20.0, True) and a.read(j, 10.0) == (0.0, True)  # shifted, clipped at 0
    clean = next(i for i in range(1, 41) if i not in a.experiments)
    assert a.read(clean, 50.0) == (50.0, False)
    with pytest.raises(ValueError, match="clip"):
        CorruptionSpec(fraction=0.2, shift=1, clip=(5, 5))


def test_arms_share_the_misread_experiments(tmp_path: Path) -> None:
    """A protocol arm and a baseline of the same seed see the same experiments misread; readings are
    recorded in the observation events, the summaries hold true yields, readings and the list."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = PERERA_2018.model_copy(
            update={"name": "perera-1b+2c", "campaign": ["1b, 6-Br-Q", "2c, Trifluoroborate"]}
        )
        grid = load_grid(spec)
    cfg = rx.Config.model_validate(
        {
            "grids": [spec.model_dump(mode="json")],
            "methods": [
                "gp_ei",
                {"name": "gp_refit", "kind": "predictor_utility_gp", "updates": "every_observation"},
            ],
            "runs": 2,
            "cohort_size": 2,
            "n_initial": 4,
            "n_total": 10,
            "report_at": [5, 10],
            "bootstrap": 100,
            "gate_data": "prequential",
            "bo": {"fit_steps": 5},
            "corruption": {"fraction": 0.3, "shift": -30, "seed": 3},
        }
    )
    out = rx.run_experiment(cfg, tmp_path / "x")
    runs = {(e["method"], e["seed"]): e for e in rx.runs_frame(out).to_dict(orient="records")}
    log = Run.open(out)
    fin = {(e.payload["method"], e.payload["seed"]): e.payload for e in log.events("run_finished")}
    for s in (4001, 4002):
        want = sorted(Corruption(cfg.corruption, "perera-1b+2c", s, 10).experiments)  # type: ignore[arg-type]
        assert len(want) == 3
        for m in ("gp_ei", "gp_refit"):
            f = fin[(m, s)]
            assert f["corruption"]["corrupted_experiments"] == want
            ys, rd = np.array(f["yields"]), np.array(f["readings"])
            np.testing.assert_array_equal(ys, grid.yields[np.array(f["indices"])])  # outcome: true yields
            for j in range(10):
                shifted = float(np.clip(ys[j] - 30, 0, 100))
                assert rd[j] == (shifted if j + 1 in want else ys[j])
        # the shared initial design: identical readings in both arms
        assert fin[("gp_ei", s)]["readings"][:4] == fin[("gp_refit", s)]["readings"][:4]
        assert runs[("gp_ei", s)]["seed"] == s
        # observation events carry the flag: the baseline's in the experiment log, the protocol's in its run
        base = [e.payload for e in log.events("observation") if e.payload["seed"] == s]
        assert sorted(p["experiment"] for p in base if p["corrupted"]) == want
        child = Run.open(out / fin[("gp_refit", s)]["run_dir"])
        obs = [e.payload["pair"]["observation"] for e in child.events("observation")]
        assert sorted(o["detail"]["experiment"] for o in obs if o["detail"]["corrupted"]) == want
        assert all(o["utility_terms"]["yield"] == o["detail"]["yield"] for o in obs)  # the reading


def test_oracle_gates_read_true_yields_and_the_predictor_never_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The oracle arm's gates see the grid's true yields of their records; every record any adaptation
    is handed carries the reading (misread ones included), never the true yield."""
    from rsi_workbench.domains.reactions import binding, corruption

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = PERERA_2018.model_copy(
            update={"name": "perera-1b+2c", "campaign": ["1b, 6-Br-Q", "2c, Trifluoroborate"]}
        )
        grid = load_grid(spec)
    oracle = {
        "name": "oracle",
        "kind": "predictor_utility_gp",
        "gates": "oracle",
        "decision": "expected_improvement",
    }
    cfg = rx.Config.model_validate(
        {
            "grids": [spec.model_dump(mode="json")],
            "methods": [oracle],
            "runs": 1,
            "n_initial": 4,
            "n_total": 14,
            "report_at": [5, 14],
            "gate_data": "prequential",
            "gate_window": 2,
            "reliability": {"min_predictions": 1, "max_mae": 0.5},  # always unreliable: adapt every cycle
            "bo": {"fit_steps": 5},
            "corruption": {"fraction": 0.5, "shift": -30, "seed": 1},
        }
    )
    trained: list[tuple[int, float]] = []
    gated: list[tuple[int, float]] = []
    adapt, view = binding.GPPredictor.adapt, corruption.UncorruptedGateView.held_out_records

    def spy_adapt(self, records, *, seed):  # type: ignore[no-untyped-def]
        trained.extend((int(r.action["index"]), r.observation.utility_terms["yield"]) for r in records)
        return adapt(self, records, seed=seed)

    def spy_view(self, k=None):  # type: ignore[no-untyped-def]
        recs = view(self, k)
        gated.extend((int(r.action["index"]), r.observation.utility_terms["yield"]) for r in recs)
        return recs

    monkeypatch.setattr(binding.GPPredictor, "adapt", spy_adapt)
    monkeypatch.setattr(corruption.UncorruptedGateView, "held_out_records", spy_view)
    summ = rx.run_protocol(grid, rx.arm_of(rx.MethodSpec.model_validate(oracle)), 4001, cfg, tmp_path / "o")
    reading = dict(zip(summ["indices"], summ["readings"], strict=True))
    truth = dict(zip(summ["indices"], summ["yields"], strict=True))
    misread = {i for i in truth if truth[i] != reading[i]}
    assert misread and trained and gated
    assert all(y == reading[i] for i, y in trained)  # the predictor trains on readings only
    assert {i for i, _ in trained} & misread  # ... and misread ones did reach it
    assert all(y == truth[i] for i, y in gated)  # the gates read the true yields
    assert {i for i, _ in gated} & misread
    assert rx.MethodSpec.model_validate(oracle).gates == "oracle"
    with pytest.raises(ValueError, match="oracle"):
        rx.Config.model_validate({**cfg.model_dump(mode="json"), "corruption": None})
    with pytest.raises(ValueError, match="oracle"):
        rx.MethodSpec.model_validate({**oracle, "updates": "every_observation"})


def test_the_pilot_config_declares_its_arms() -> None:
    from rsi_workbench.config import read_config_file

    root = Path(__file__).resolve().parents[3]
    cfg = rx.Config.model_validate(read_config_file(root / "configs" / "reactions" / "gating_pilot.yaml"))
    arms = {a.name: a for a in map(rx.arm_of, cfg.methods)}
    assert set(arms) == {
        "prior_only",
        "gp_ei_prior",
        "protocol_gated",
        "protocol_ungated",
        "protocol_oracle_gates",
    }
    assert cfg.corruption is not None and cfg.runs >= 10 and len(cfg.grids) == 6
    protocol = [
        arms[n] for n in ("prior_only", "protocol_gated", "protocol_ungated", "protocol_oracle_gates")
    ]
    assert all(a.kind == "predictor_utility_gp" and a.prior is not None for a in protocol)
    assert all(a.decision == "expected_improvement" for a in protocol)
    assert (
        arms["protocol_oracle_gates"].gates == "oracle"
        and arms["protocol_ungated"].updates == "every_observation"
    )
    assert not arms["prior_only"].adaptation and arms["gp_ei_prior"].kind == "gp_ei"
