"""Why the gated predictor loses to GP-EI: diagnostics of a ``reactions`` experiment, from records.

Everything here is read from the predictor runs' own protocol events (contract 2), so the "why"
figures in ``benchmarks/RESULTS.md`` are printed by ``rsi-workbench report --diagnostics DIR``
instead of being worked out by hand. Per predictor run (one protocol run directory; cut-off cycle
attempts discarded as on resume):

- predictor-gate failures (eq. 14) by recorded reason: the gate score (Gaussian NLL) did not improve,
  ranking accuracy fell (a failure can have both), no held-out round existed yet, or the update
  budget ran out; and how many held-out measurements the judged gates had;
- update rounds missing from the selecting predictor: at each guided selection (cycle k after the
  initial design), the update-split observations made before cycle k minus the number the retained
  predictor version was trained on (``records`` of the ``predictor_proposed`` event that made it;
  0 for the prior φ_0), averaged over the run's guided selections;
- whether the prior φ_0 is still the retained predictor at the first guided selection;
- the run's observations that trained its final predictor (``records`` of the ``predictor_proposed``
  event that made it), those that only judged it (gate data that never trained it: the held-out
  rounds, or under prequential gates the observations still after the final version's cut-off), and
  the guided rounds in which the prior φ_0 still selected.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rsi_workbench.records import Event, Run

#: failure reasons of a predictor gate, by the recorded reason's prefix (``protocol.decisions``)
REASONS = ("score", "ranking", "no_units", "budget", "other")


def failure_reasons(gate: dict[str, Any]) -> set[str]:
    """Which of :data:`REASONS` a failed predictor-gate event records (a failure can have several)."""
    score = str(gate.get("thresholds", {}).get("score", "brier"))
    out: set[str] = set()
    for r in gate.get("reasons", []):
        if r.startswith("no gate units"):
            out.add("no_units")
        elif r.startswith(f"{score} gain"):
            out.add("score")
        elif r.startswith("ranking drop"):
            out.add("ranking")
        elif r.startswith("update budget"):
            out.add("budget")
        else:
            out.add("other")
    return out


def run_diagnostics(events: Sequence[Event], initial_design: int) -> dict[str, Any]:
    """Gate-failure reasons, held-out measurements, missing update rounds and prior-at-first-guided
    for one protocol run's effective events (in order); ``initial_design`` = cycles before guidance."""
    trained: dict[str, int] = {}  # predictor version -> update records it was trained on
    retained_records = 0
    prior: str | None = None
    n_update = 0  # update-split observations so far
    missing: list[int] = []
    prior_at_first: bool | None = None
    triggered = 0
    kept = 0
    fails = dict.fromkeys(REASONS, 0)
    failed = 0
    judged_units: list[int] = []
    n_gate = n_preq = prior_rounds = 0
    final: str | None = None
    for e in events:
        p = e.payload
        if e.kind == "cycle_started":
            if prior is None:
                prior = p["predictor_version"]
            if e.cycle is not None and e.cycle > initial_design:
                retained_records = trained.get(p["predictor_version"], retained_records)
                missing.append(n_update - retained_records)
                if e.cycle == initial_design + 1:
                    prior_at_first = p["predictor_version"] == prior
                prior_rounds += p["predictor_version"] == prior
        elif e.kind == "observation" and p.get("pair", {}).get("split") == "update":
            n_update += 1
        elif e.kind == "observation":
            split = p.get("pair", {}).get("split")
            n_gate += split == "gate"
            n_preq += split == "prequential"
        elif e.kind == "adaptation_trigger" and p.get("triggered"):
            triggered += 1
        elif e.kind == "predictor_proposed":
            trained[p["to"]] = int(p["records"])
        elif e.kind == "gate" and p.get("gate") == "predictor":
            reasons = failure_reasons(p)
            if "no_units" not in reasons and "budget" not in reasons:
                judged_units.append(int(p.get("n_units", 0)))
            if not p.get("passed"):
                failed += 1
                for r in reasons:
                    fails[r] += 1
        elif e.kind == "retain":
            v = p.get("predictor_version")
            final = v
            if v is not None and v == p.get("proposed_predictor_version"):
                kept += 1
            if v is not None and v in trained:
                retained_records = trained[v]
            elif v == prior:
                retained_records = 0
    return {
        "triggered": triggered,
        "gate_failed": failed,
        **{f"failed_{r}": n for r, n in fails.items()},
        "kept": kept,
        "held_out_min": min(judged_units) if judged_units else np.nan,
        "held_out_max": max(judged_units) if judged_units else np.nan,
        "missing_mean": float(np.mean(missing)) if missing else np.nan,
        "prior_at_first_guided": prior_at_first,
        "trained": (n_trained := trained.get(final, 0) if final is not None else 0),
        "judged_only": n_gate + max(0, n_preq - n_trained),
        "prior_rounds": prior_rounds,
    }


def _effective(run: Run) -> list[Event]:
    """The run's events with cut-off cycle attempts removed (``protocol.loop.effective_events``)."""
    from rsi_workbench.protocol.loop import effective_events

    return effective_events(run)


def runs_frame(path: str | Path) -> pd.DataFrame:
    """One row per finished predictor run of a ``reactions`` experiment: :func:`run_diagnostics`."""
    from rsi_workbench.experiments.reactions.arms import protocol_rows
    from rsi_workbench.experiments.reactions.experiment import runs_frame as finished

    path = Path(path)
    fin = finished(path)
    rows: list[dict[str, Any]] = []
    if fin.empty:
        return pd.DataFrame(rows)
    for r in fin[protocol_rows(fin)].itertuples():
        run = Run.open(path / str(r.run_dir))
        n_init = int(run.config["protocol"]["initial_design"])
        rows.append(
            {"grid": r.grid, "method": r.method, "seed": r.seed, **run_diagnostics(_effective(run), n_init)}
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
