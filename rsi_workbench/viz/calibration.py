"""Calibration views of protocol runs: reliability diagram, and Brier / ECE / ranking accuracy per cycle.

Units are every proposed candidate's predicted class probabilities against its audited outcome on
the public tests (``audit`` events: metrics only, never feedback); runs without audits fall back
to the executed candidates (``observation`` events). Metrics are the one copy the engine's
verdicts use (:mod:`rsi_workbench.metrics`), with the ECE bins and ranking ties of the metrics
version each run was made with, so a diagram's ECE is the ECE its reliability verdict read.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from rsi_workbench.metrics import ReliabilityBin, metrics_version_of, reliability_diagram
from rsi_workbench.protocol.decisions import UtilitySpec, utility
from rsi_workbench.protocol.metrics import brier, ranking_accuracy
from rsi_workbench.viz._style import kind_colours
from rsi_workbench.viz.protocol import ProtocolRun, RunLike, as_protocol_runs
from rsi_workbench.viz.scales import int_axis

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go


class CalibrationInfo(NamedTuple):
    """Prediction quality of one or more protocol runs: per-cycle metrics and reliability-diagram bins."""

    runs: list[str]
    per_cycle: pd.DataFrame  # run, cycle, units, brier, ece, ranking_accuracy, source
    bins: dict[str, list[ReliabilityBin]]  # run -> reliability-diagram bins over all its units


def _run_units(
    run: ProtocolRun,
) -> tuple[dict[int, tuple[list[list[float]], list[int]]], dict[int, list[list[tuple[float, float]]]], str]:
    """Per cycle: (probs, labels) units and ranking groups of (predicted, observed utility)."""
    spec = UtilitySpec(**run.settings.get("utility", {}))
    units: dict[int, tuple[list[list[float]], list[int]]] = {}
    groups: dict[int, list[list[tuple[float, float]]]] = {}
    audits = {(e.cycle, e.payload["task_id"]): e.payload["outcomes"] for e in run.of("audit")}
    source = "audit (all proposed candidates)" if audits else "observations (executed candidates)"
    obs = {
        (e.cycle, e.payload["task_id"], int(e.payload["index"])): e.payload["pair"]["observation"]
        for e in run.of("observation")
    }
    for p in run.of("proposal"):
        k, t = int(p.cycle or 0), p.payload["task_id"]
        probs, labels = units.setdefault(k, ([], []))
        grp: list[tuple[float, float]] = []
        for c in p.payload["candidates"]:
            pred = c.get("prediction")
            if not pred:
                continue
            i = int(c["index"])
            out = audits[(p.cycle, t)][i] if audits.get((p.cycle, t)) else obs.get((p.cycle, t, i))
            if out is None:
                continue
            for pr, lab in zip(pred["probs"], out.get("labels", [])):
                probs.append(list(pr))
                labels.append(int(lab))
            if c.get("utility") is not None:
                grp.append((float(c["utility"]), utility(out["utility_terms"], spec)))
        if len(grp) > 1:
            groups.setdefault(k, []).append(grp)
    return units, groups, source


def calibration_info(runs: RunLike | Sequence[ProtocolRun], n_bins: int = 10) -> CalibrationInfo:
    """Brier, ECE and ranking accuracy per cycle, and reliability bins per run, of protocol runs: one
    loaded run, a sequence of them, or a directory (one run or a whole experiment).

    ```python
    cal = calibration_info("runs/notebooks/code_repair")
    cal.per_cycle.groupby("run")["brier"].last()
    ```
    """
    import pandas as pd

    runs = as_protocol_runs(runs)

    rows = []
    bins: dict[str, list[ReliabilityBin]] = {}
    for run in runs:
        units, groups, source = _run_units(run)
        mv = metrics_version_of(run.settings)
        allp: list[list[float]] = []
        ally: list[int] = []
        for k in sorted(units):
            probs, labels = units[k]
            if not labels:
                continue
            allp.extend(probs)
            ally.extend(labels)
            rows.append(
                {
                    "run": run.name,
                    "cycle": k,
                    "units": len(labels),
                    "brier": brier(probs, labels),
                    "ece": reliability_diagram(probs, labels, n_bins, version=mv).ece,
                    "ranking_accuracy": ranking_accuracy(groups.get(k, []), version=mv),
                    "source": source,
                }
            )
        if ally:
            bins[run.name] = reliability_diagram(allp, ally, n_bins, version=mv).bins
    cols = ["run", "cycle", "units", "brier", "ece", "ranking_accuracy", "source"]
    return CalibrationInfo([r.name for r in runs], pd.DataFrame(rows, columns=cols), bins)


def _get_calibration_info(runs: RunLike | Sequence[ProtocolRun] | CalibrationInfo) -> CalibrationInfo:
    return runs if isinstance(runs, CalibrationInfo) else calibration_info(runs)


def plot_reliability_diagram(
    runs: RunLike | Sequence[ProtocolRun] | CalibrationInfo, *, title: str = "reliability diagram"
) -> go.Figure:
    """Top-label confidence vs accuracy per bin for each run (the diagonal is perfect calibration).

    ``runs``: what :func:`calibration_info` takes (a run, runs, an experiment directory) or its result.

    ```python
    plot_reliability_diagram("runs/notebooks/code_repair").show()
    ```
    """
    import plotly.graph_objects as go

    info = _get_calibration_info(runs)

    colours = kind_colours(info.bins)
    fig = go.Figure(
        go.Scatter(
            x=[0, 1],
            y=[0, 1],
            mode="lines",
            line={"dash": "dot", "color": "#999"},
            name="perfect",
            hoverinfo="skip",
        )
    )
    for name, bs in info.bins.items():
        b = [x for x in bs if x.n > 0]
        fig.add_trace(
            go.Scatter(
                x=[x.confidence for x in b], y=[x.accuracy for x in b], mode="lines+markers", name=name,
                marker={"size": [6 + 14 * (x.n / max(y.n for y in b)) ** 0.5 for x in b], "color": colours[name]},
                customdata=[[x.lo, x.hi, x.n] for x in b],
                hovertemplate="confidence %{x:.2f} · accuracy %{y:.2f}<br>bin %{customdata[0]:.1f}–%{customdata[1]:.1f}, %{customdata[2]} units<extra>" + name + "</extra>",
            )
        )  # fmt: skip
    fig.update_layout(
        title=title, xaxis={"title": "confidence (top-label probability)", "range": [0, 1]},
        yaxis={"title": "accuracy", "range": [0, 1]}, height=380, template="plotly_white",
        margin={"l": 10, "r": 10, "t": 40, "b": 40},
    )  # fmt: skip
    return fig


def plot_calibration_curves(
    runs: RunLike | Sequence[ProtocolRun] | CalibrationInfo, *, title: str = "prediction quality per cycle"
) -> go.Figure:
    """Brier, ECE and candidate ranking accuracy per cycle, one line per run.

    ``runs``: what :func:`calibration_info` takes (a run, runs, an experiment directory) or its result.

    ```python
    plot_calibration_curves("runs/notebooks/code_repair").show()
    ```
    """
    from plotly.subplots import make_subplots

    info = _get_calibration_info(runs)

    fig = make_subplots(rows=1, cols=3, subplot_titles=("5-class Brier ↓", "ECE ↓", "ranking accuracy ↑"))
    colours = kind_colours(info.runs)
    df = info.per_cycle
    for name in info.runs:
        d = df[df["run"] == name]
        for col, metric in enumerate(("brier", "ece", "ranking_accuracy"), start=1):
            fig.add_scatter(
                x=d["cycle"], y=d[metric], mode="lines+markers", name=name, legendgroup=name,
                showlegend=col == 1, line={"color": colours[name]}, row=1, col=col,
                hovertemplate=f"cycle %{{x}} · {metric} %{{y:.3f}}<extra>{name}</extra>",
            )  # fmt: skip
    fig.update_xaxes(title_text="cycle", **int_axis(df["cycle"]))
    fig.update_layout(
        title=title, height=340, template="plotly_white", margin={"l": 10, "r": 10, "t": 60, "b": 40}
    )
    return fig


def predictor_training_info(path: str | Path) -> pd.DataFrame:
    """One row per trained predictor fold of an experiment (``predictors/seed*/`` runs): its size,
    temperature and final loss terms, from the ``predictor_trained`` events.

    ```python
    predictor_training_info("runs/notebooks/code_repair")[["kind", "fold", "temperature"]]
    ```
    """
    import pandas as pd

    from rsi_workbench.records import list_runs, load_events

    rows = []
    for r in list_runs(Path(path)):
        if r.parent.name != "predictors":
            continue
        df = load_events(r, kind="predictor_trained", flatten=False)
        for p in df["payload"]:
            losses = {f"loss.{k}": v for k, v in (p.get("final_loss") or {}).items()}
            rows.append(
                {"training_run": r.name, "kind": p.get("kind"), "fold": p.get("fold"), "version": p.get("version"),
                 "train_rows": p.get("train_rows"), "temperature": p.get("temperature"), **losses}
            )  # fmt: skip
    return pd.DataFrame(rows)


def _get_predictor_training_info(run: str | Path | pd.DataFrame) -> pd.DataFrame:
    return predictor_training_info(run) if isinstance(run, str | Path) else run


def plot_training_losses(
    run: str | Path | pd.DataFrame, *, title: str = "predictor training: final loss terms per fold"
) -> go.Figure:
    """Grouped bars of each final loss term, one bar per (predictor kind, fold).

    ``run``: an experiment directory or its :func:`predictor_training_info` frame.

    ```python
    plot_training_losses("runs/notebooks/code_repair").show()
    ```
    """
    import plotly.graph_objects as go

    df = _get_predictor_training_info(run)

    terms = [c for c in df.columns if c.startswith("loss.") and c != "loss.total"]
    fig = go.Figure()
    for _, r in df.iterrows():
        fig.add_bar(x=[t[5:] for t in terms], y=[r[t] for t in terms], name=f"{r['kind']} fold {r['fold']}")
    fig.update_layout(barmode="group", title=title, height=340, template="plotly_white", yaxis_title="loss",
                      margin={"l": 10, "r": 10, "t": 40, "b": 40})  # fmt: skip
    return fig
