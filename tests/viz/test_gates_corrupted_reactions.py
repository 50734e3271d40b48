"""The gates view of a corrupted reactions run (issue 46 item 5): the adaptations its predictor gate
refused are in the data the gates dashboard draws, recomputed exactly as the run recorded them.

The run is the gated prior-mean GP arm of ``configs/reactions/gating_pilot_strong.yaml`` (30% of the
readings 40 points high) on one target and seed, 20 experiments: a few seconds. Its gate data are
prequential, so its observations carry the split ``prequential``; the gates view must take each
decision's update data from the prequential rule (cycles <= k - w_k), or it recomputes reliability
on no data and shows every recorded refusal as "not attempted".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rsi_workbench.config import read_config_file
from rsi_workbench.experiments.reactions import experiment as rx
from rsi_workbench.paths import repo_root
from rsi_workbench.records import Run
from rsi_workbench.viz.gates import gate_matrix_info

TARGET, ARM, SEED = "perera-1c+2c", "protocol_gated", 9001


@pytest.fixture(scope="module")
def corrupted_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    raw = read_config_file(repo_root() / "configs" / "reactions" / "gating_pilot_strong.yaml")
    raw["grids"] = [g for g in raw["grids"] if g["name"] == TARGET]
    raw["methods"] = [m for m in raw["methods"] if m["name"] == ARM]
    raw.update(runs=1, cohort_size=1, first_seed=SEED, n_total=20, report_at=[10, 20], bootstrap=100)
    return rx.run_experiment(rx.Config.model_validate(raw), tmp_path_factory.mktemp("gating") / "exp")


def test_the_gates_view_shows_the_refused_adaptations(corrupted_run: Path) -> None:
    from rsi_workbench.widgets import gate_tuner
    from rsi_workbench.widgets.commands import dashboards_for

    (fin,) = rx.runs_frame(corrupted_run).to_dict(orient="records")
    assert fin["corruption.corrupted_experiments"], "the run misread no experiment"
    sub = corrupted_run / fin["run_dir"]
    misread = {
        e.cycle
        for e in Run.open(sub).events("observation")
        if e.payload["pair"]["observation"]["detail"]["corrupted"]
    }
    assert misread == set(fin["corruption.corrupted_experiments"])  # one experiment per cycle
    refused = {
        e.cycle
        for e in Run.open(sub).events("gate")
        if e.payload["gate"] == "predictor" and not e.payload["passed"]
    }
    assert refused, "the corrupted run's predictor gate refused no adaptation"

    assert "gates" in dashboards_for(sub)  # what `rsi-workbench serve` shows for this run
    view = gate_tuner.build(sub, {})
    decisions = view.decisions()
    assert not [d for d in decisions if d.flipped], "the declared thresholds must reproduce the record"
    shown = {d.cycle for d in decisions if d.decision == "predictor_gate" and d.recomputed == "fail"}
    assert shown == refused
    info = gate_matrix_info(decisions)  # the heatmap the dashboard draws: a red "fail" cell per refusal
    row = info.outcome[info.rows.index(f"{sub.name} · predictor_gate")]
    assert {c for c, o in zip(info.cycles, row) if o == "fail"} == refused
