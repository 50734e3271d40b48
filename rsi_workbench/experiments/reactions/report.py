"""Tables of the reactions experiment: runs and best-so-far curves from the events, mean best yield
at the report marks with bootstrap intervals, paired gains, first hits, data use per run, and the
printed report (``rsi-workbench report``) and markdown (RESULTS.md)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rsi_workbench.domains.reactions.arms import protocol_rows
from rsi_workbench.domains.reactions.diagnostics import data_use, data_use_line
from rsi_workbench.domains.reactions.transfer import prior_lines
from rsi_workbench.experiments.reactions.config import Config
from rsi_workbench.experiments.walltime import wall_lines
from rsi_workbench.metrics.bootstrap import interval
from rsi_workbench.models.usage import with_model_calls
from rsi_workbench.records import Run, load_events


def runs_frame(path: str | Path) -> pd.DataFrame:
    """One row per finished run (last record wins on a rerun cohort)."""
    df = load_events(path, kind="run_finished")
    if df.empty:
        return df
    return df.drop_duplicates(subset=["grid", "method", "seed"], keep="last").reset_index(drop=True)


def curves(path: str | Path) -> pd.DataFrame:
    """Mean best observed yield per experiment count, per grid and method (for the dashboards)."""
    df = runs_frame(path)
    rows = []
    for (g, m), d in df.groupby(["grid", "method"], sort=False):
        arr = np.array(d["best_curve"].tolist(), dtype=float)
        for n in range(arr.shape[1]):
            rows.append(
                {
                    "grid": g,
                    "method": m,
                    "experiments": n + 1,
                    "mean_best": float(arr[:, n].mean()),
                    "runs": len(arr),
                }
            )
    return pd.DataFrame(rows, columns=["grid", "method", "experiments", "mean_best", "runs"])


def summary(path: str | Path, runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per grid × method: mean best yield at each report point, hit fraction, first-hit stats, with 95% CIs."""
    run = Run.open(path)
    cfg = Config.model_validate(run.config)
    df = runs_frame(path) if runs is None else runs
    rows = []
    for (g, m), d in df.groupby(["grid", "method"], sort=False):
        best = np.array(d["best_curve"].tolist(), dtype=float)
        fh = np.array([np.nan if v is None or v != v else float(v) for v in d["first_hit"]])
        row: dict[str, Any] = {
            "grid": g,
            "method": m,
            "runs": len(d),
            "pool_max": float(d["pool_max"].iloc[0]),
        }
        for n in cfg.report_at:
            col = best[:, n - 1]
            row[f"best@{n}"] = float(col.mean())
            row[f"best@{n}_ci"] = interval(col, n_resamples=cfg.bootstrap)
        hit = ~np.isnan(fh)
        row["hit_frac"] = float(hit.mean())
        row["hit_frac_ci"] = interval(hit.astype(float), n_resamples=cfg.bootstrap)
        hits = fh[hit]
        row["first_hit_mean"] = float(hits.mean()) if len(hits) else math.nan
        row["first_hit_mean_ci"] = interval(hits, n_resamples=cfg.bootstrap)
        row["first_hit_median"] = float(np.median(hits)) if len(hits) else math.nan
        row["first_hit_max"] = float(hits.max()) if len(hits) else math.nan
        row["adaptations_mean"] = float(d["adaptations"].mean())
        trig = d["adaptations_triggered"] if "adaptations_triggered" in d else None
        row["triggered_mean"] = float(np.nanmean(trig)) if trig is not None and trig.notna().any() else 0.0
        for name in ("predictor_gate_passed", "pair_gate_failed"):
            row[f"{name}_sum"] = int(np.nansum(d[name])) if name in d else 0
        row["triggered_sum"] = int(np.nansum(trig)) if trig is not None else 0
        rows.append(row)
    return pd.DataFrame(rows)


def paired_gain(path: str | Path, a: str, b: str, n: int, runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Mean best@n of method ``a`` minus method ``b``, paired by seed (same initial observations)."""
    run = Run.open(path)
    cfg = Config.model_validate(run.config)
    df = runs_frame(path) if runs is None else runs
    rows = []
    for g, d in df.groupby("grid", sort=False):
        da = d[d.method == a].set_index("seed")["best_curve"]
        db = d[d.method == b].set_index("seed")["best_curve"]
        common = sorted(set(da.index) & set(db.index))
        if not common:
            continue
        diff = np.array([da[s][n - 1] - db[s][n - 1] for s in common])
        lo, hi = interval(diff, n_resamples=cfg.bootstrap)
        rows.append(
            {
                "grid": g,
                "a": a,
                "b": b,
                "n": n,
                "pairs": len(common),
                "gain": float(diff.mean()),
                "lo": lo,
                "hi": hi,
            }
        )
    return pd.DataFrame(rows)


def report(path: str | Path) -> str:
    """Results table per grid (mean best yield at report points, pool-maximum hits, first hit) and wall
    times; printed only (a run or ``report --save`` writes ``report.txt``)."""
    run = Run.open(path)
    cfg = Config.model_validate(run.config)
    frame = runs_frame(path)
    s = summary(path, frame)
    lines = [f"reactions — {path}"]
    if s.empty:
        lines.append("(no finished runs yet)")
    walls = [e.payload["wall_s"] for e in run.events("cohort_finished")]
    use = data_use(path, frame)
    protocol_methods = set(frame[protocol_rows(frame)]["method"]) if not frame.empty else set()
    for g, d in s.groupby("grid", sort=False):
        lines.append(f"\n## {g}  (pool max {d['pool_max'].iloc[0]:.2f})")
        head = f"{'method':<22} {'runs':>4}"
        for n in cfg.report_at:
            head += f" {'best@' + str(n):>22}"
        head += f" {'hit max':>20} {'first hit mean':>22} {'med':>5} {'max':>5} {'adapt trig/kept':>16}"
        lines.append(head)
        for _, r in d.iterrows():
            line = f"{r['method']:<22} {r['runs']:>4}"
            for n in cfg.report_at:
                lo, hi = r[f"best@{n}_ci"]
                line += f" {r[f'best@{n}']:>7.2f} [{lo:6.2f},{hi:6.2f}]"
            lo, hi = r["hit_frac_ci"]
            line += f" {r['hit_frac']:>6.2f} [{lo:4.2f},{hi:4.2f}]"
            lo, hi = r["first_hit_mean_ci"]
            line += f" {r['first_hit_mean']:>7.2f} [{lo:5.2f},{hi:5.2f}]"
            line += f" {r['first_hit_median']:>5.0f} {r['first_hit_max']:>5.0f}"
            line += f" {r['triggered_mean']:>9.1f}/{r['adaptations_mean']:<6.1f}"
            lines.append(line)
        for _, r in d[d["method"].isin(protocol_methods)].iterrows():
            lines.append(
                f"  {r['method']}: {r['triggered_sum']} adaptations triggered; predictor gate (eq. 14) passed "
                f"{r['predictor_gate_passed_sum']}, pair gate (eq. 17) rolled back {r['pair_gate_failed_sum']}"
            )
            lines.append("    " + data_use_line(use, g, r["method"]))
    methods = set(s["method"]) if not s.empty else set()
    for a in ("predictor_utility", "predictor_utility_gp", "predictor_utility_embed"):
        if {a, "gp_ei"} <= methods:
            lines.append(f"\n{a} − gp_ei, mean best yield paired by seed [95% bootstrap CI]:")
            for n in cfg.report_at:
                for _, r in paired_gain(path, a, "gp_ei", n, frame).iterrows():
                    verdict = "better" if r["lo"] > 0 else ("worse" if r["hi"] < 0 else "no clear difference")
                    lines.append(
                        f"  {r['grid']:<30} @{n:<3} {r['gain']:+6.2f} [{r['lo']:+6.2f},{r['hi']:+6.2f}]  {verdict}"
                    )
    lines += prior_lines(run)
    lines.append(
        f"\nfirst hit = experiment index (1-based, initial ones included) of the first yield ≥ pool max − 1e-9; "
        f"mean/median/max over runs that hit. adapt trig/kept: adaptations triggered (eq. 11) / "
        f"retained after both gates (eq. 14, 17), mean per run; gate data = "
        f"{'prequential window of the latest rounds' if cfg.gate_data == 'prequential' else 'held-out rounds'} "
        f"of the run. Data use per run: trained = observations the final predictor was trained on; "
        f"judged only = gate data that never trained it; prior rounds = guided rounds the prior φ0 selected. "
        f"{len(walls)} cohorts, {sum(walls):.0f} s compute."
    )
    cohorts = [
        (f"{e.payload['grid']}/{e.payload['method']} ×{len(e.payload['seeds'])}", e.payload["wall_s"])
        for e in run.events("cohort_finished")
    ]
    how = "from the cohort_finished events; a cohort's runs (×seeds) run together"
    lines += ["", *wall_lines(cohorts, sum(walls) if walls else None, how, per="cohort")]
    return with_model_calls("\n".join(lines), path)


def markdown(path: str | Path) -> str:
    """The results as Markdown tables (one per grid) for ``benchmarks/RESULTS.md``."""
    run = Run.open(path)
    cfg = Config.model_validate(run.config)
    frame = runs_frame(path)
    s = summary(path, frame)
    out: list[str] = []
    for g, d in s.groupby("grid", sort=False):
        out.append(
            f"**{g}** — {int(d['runs'].iloc[0])} runs per method, pool max {d['pool_max'].iloc[0]:.2f}\n"
        )
        cols = [f"best@{n}" for n in cfg.report_at]
        out.append(
            "| method | "
            + " | ".join(cols)
            + " | reach pool max | first hit mean | median | max | adapt trig/kept |"
        )
        out.append("|---" * (len(cols) + 6) + "|")
        for _, r in d.iterrows():
            cells = [f"{r[c]:.2f} [{r[c + '_ci'][0]:.2f}, {r[c + '_ci'][1]:.2f}]" for c in cols]
            lo, hi = r["hit_frac_ci"]
            flo, fhi = r["first_hit_mean_ci"]
            out.append(
                f"| {r['method']} | " + " | ".join(cells) + f" | {r['hit_frac']:.2f} [{lo:.2f}, {hi:.2f}]"
                f" | {r['first_hit_mean']:.1f} [{flo:.1f}, {fhi:.1f}] | {r['first_hit_median']:.0f}"
                f" | {r['first_hit_max']:.0f} | {r['triggered_mean']:.1f} / {r['adaptations_mean']:.1f} |"
            )
        out.append("")
    if not s.empty and {"predictor_utility", "gp_ei"} <= set(s["method"]):
        out.append("| grid | n | predictor_utility − gp_ei (paired by seed) | 95% CI |")
        out.append("|---|---|---|---|")
        for n in cfg.report_at:
            for _, r in paired_gain(path, "predictor_utility", "gp_ei", n, frame).iterrows():
                out.append(f"| {r['grid']} | {n} | {r['gain']:+.2f} | [{r['lo']:+.2f}, {r['hi']:+.2f}] |")
    return "\n".join(out)
