"""The reactions dashboard and its figures, on a real (tiny) reactions experiment."""

from __future__ import annotations

from pathlib import Path

import pytest

from rsi_workbench.experiments.reactions import experiment as rx
from rsi_workbench.viz.reactions import plot_best_yield_curves, plot_first_hits


@pytest.fixture(scope="module")
def rx_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cfg = rx.Config.model_validate(
        {
            "grids": ["perera2018-suzuki"],
            "methods": ["predictor_utility", "random"],
            "runs": 2,
            "n_initial": 4,
            "n_total": 8,
            "report_at": [4, 8],
            "bootstrap": 100,
            "predictor": {"members": 2, "hidden": 4, "fit_steps": 5, "adapt_steps": 2},
        }
    )
    return rx.run_experiment(cfg, tmp_path_factory.mktemp("rx") / "exp")


def test_curves_and_first_hits_per_method(rx_run: Path) -> None:
    runs = rx.runs_frame(rx_run)
    fig = plot_best_yield_curves(runs, "perera2018-suzuki")
    lines = [t for t in fig.data if t.mode == "lines"]
    assert [t.legendgroup for t in lines] == ["predictor_utility", "random"]
    assert all(len(t.y) == 8 for t in lines)
    # mean best yield never decreases with more experiments
    assert all(b >= a for t in lines for a, b in zip(t.y, t.y[1:]))
    assert len(plot_first_hits(runs, "perera2018-suzuki").data) == 2
    with pytest.raises(ValueError, match="no finished runs for grid 'nope'"):
        plot_best_yield_curves(runs, "nope")


def test_dashboard_applies_to_reactions_experiments_only(rx_run: Path) -> None:
    from rsi_workbench.widgets import reaction_curves
    from rsi_workbench.widgets.commands import dashboards_for

    assert list(dashboards_for(rx_run)) == ["reactions", "events"]
    one = next((rx_run / "runs" / "perera2018-suzuki").iterdir())
    assert "cycles" in dashboards_for(one) and "reactions" not in dashboards_for(one)
    view = reaction_curves.build(rx_run, {})
    assert view.grid == "perera2018-suzuki" and view._curves.object is not None
    secs = reaction_curves.export_sections(rx_run)
    assert len(secs) == 1 and len(secs[0].figures) == 2
