"""Why the gated predictor loses to GP-EI: the diagnostics table of a ``reactions`` experiment.

``rsi-workbench report --diagnostics DIR`` prints it, so the "why" figures in
``benchmarks/RESULTS.md`` are read from the predictor runs' own protocol events instead of being
worked out by hand; the per-run figures are :mod:`rsi_workbench.domains.reactions.diagnostics`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rsi_workbench.domains.reactions.arms import protocol_rows
from rsi_workbench.domains.reactions.diagnostics import REASONS, effective, failure_reasons, run_diagnostics
from rsi_workbench.experiments.reactions.report import runs_frame as finished
from rsi_workbench.records import Run

__all__ = ["REASONS", "diagnostics", "failure_reasons", "run_diagnostics", "runs_frame", "summary"]


def runs_frame(path: str | Path) -> pd.DataFrame:
    """One row per finished predictor run of a ``reactions`` experiment: :func:`run_diagnostics`."""
    path = Path(path)
    fin = finished(path)
    rows: list[dict[str, Any]] = []
    if fin.empty:
        return pd.DataFrame(rows)
    for r in fin[protocol_rows(fin)].itertuples():
        run = Run.open(path / str(r.run_dir))
        n_init = int(run.config["protocol"]["initial_design"])
        rows.append(
            {"grid": r.grid, "method": r.method, "seed": r.seed, **run_diagnostics(effective(run), n_init)}
        )
    return pd.DataFrame(rows)


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per grid × method: sums of triggers and failures, failure-reason shares (of all predictor-gate
    failures), the held-out measurement range, mean missing update rounds, runs on the prior."""
    rows = []
    for (g, m), d in frame.groupby(["grid", "method"], sort=False):
        failed = int(d["gate_failed"].sum())
        row: dict[str, Any] = {
            "grid": g,
            "method": m,
            "runs": len(d),
            "triggered": int(d["triggered"].sum()),
            "gate_failed": failed,
            "kept_per_run": float(d["kept"].mean()),
        }
        for r in REASONS:
            n = int(d[f"failed_{r}"].sum())
            row[f"failed_{r}"] = n
            row[f"share_{r}"] = n / failed if failed else np.nan
        row["held_out_min"] = float(d["held_out_min"].min())
        row["held_out_max"] = float(d["held_out_max"].max())
        row["missing_mean"] = float(d["missing_mean"].mean())
        row["prior_at_first_guided"] = int((d["prior_at_first_guided"] == True).sum())  # noqa: E712
        rows.append(row)
    return pd.DataFrame(rows)


def diagnostics(path: str | Path) -> str:
    """The "why" table of a ``reactions`` experiment (``rsi-workbench report --diagnostics DIR``)."""
    s = summary(runs_frame(path))
    lines = [f"reactions diagnostics — {path}"]
    if s.empty:
        return "\n".join([*lines, "(no finished predictor runs)"])
    lines.append(
        f"{'grid':<30} {'method':<22} {'runs':>4} {'trig':>6} {'failed':>6} {'score✗':>7} {'rank✗':>6} "
        f"{'no held-out':>11} {'budget':>6} {'held-out n':>10} {'missing':>7} {'on φ0':>5} {'kept/run':>8}"
    )
    for r in s.itertuples():
        held = "-" if np.isnan(r.held_out_min) else f"{r.held_out_min:.0f}–{r.held_out_max:.0f}"
        lines.append(
            f"{r.grid:<30} {r.method:<22} {r.runs:>4} {r.triggered:>6} {r.gate_failed:>6} "
            f"{r.share_score:>7.0%} {r.share_ranking:>6.0%} {r.failed_no_units:>11} {r.failed_budget:>6} "
            f"{held:>10} {r.missing_mean:>7.2f} {r.prior_at_first_guided:>5} {r.kept_per_run:>8.1f}"
        )
    lines.append(
        "\ntrig: adaptations triggered (eq. 11); failed: predictor-gate (eq. 14) failures; score✗ / rank✗: "
        "share of failures whose gate score (Gaussian NLL) did not improve / whose ranking accuracy fell "
        "(a failure can have both); no held-out: failures before any round was held out; held-out n: "
        "measurements the judged gates had; missing: update rounds the selecting predictor was not "
        "trained on, mean over guided selections; on φ0: runs whose retained predictor at the first guided "
        "selection is still the prior; kept/run: adopted refits per run."
    )
    return "\n".join(lines)
