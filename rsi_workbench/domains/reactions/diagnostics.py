"""Why the gated predictor loses to GP-EI: what one protocol run of a campaign did, from its records.

Everything here is read from a predictor run's own protocol events (contract 2); the ``reactions``
experiment's report and ``rsi-workbench report --diagnostics DIR`` tabulate it. Per predictor run (one protocol run directory; cut-off cycle
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

from rsi_workbench.domains.reactions.arms import protocol_rows
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


def effective(run: Run) -> list[Event]:
    """The run's events with cut-off cycle attempts removed (``protocol.loop.effective_events``)."""
    from rsi_workbench.protocol.loop import effective_events

    return effective_events(run)


def data_use(path: str | Path, frame: pd.DataFrame) -> pd.DataFrame:
    """Per predictor run of ``frame`` (finished runs of the experiment in ``path``, read from its protocol
    events): observations that trained the final predictor, that only judged it, and the guided rounds
    the prior stayed in use (:func:`run_diagnostics`)."""
    rows = []
    for r in frame[protocol_rows(frame)].itertuples() if not frame.empty else []:
        prun = Run.open(Path(path) / str(r.run_dir))
        d = run_diagnostics(effective(prun), int(prun.config["protocol"]["initial_design"]))
        rows.append({"grid": r.grid, "method": r.method, "seed": r.seed, **d})
    return pd.DataFrame(rows, columns=["grid", "method", "seed", "trained", "judged_only", "prior_rounds"])


def data_use_line(use: pd.DataFrame, grid: str, method: str) -> str:
    """One report line: the data use of a grid × method's runs (:func:`data_use`)."""
    d = use[(use["grid"] == grid) & (use["method"] == method)]
    if d.empty:
        return "data use: -"

    def dist(col: str) -> str:
        v = d[col].to_numpy(dtype=float)
        return f"{v.mean():.1f} (min {v.min():.0f}, max {v.max():.0f})"

    on_prior = int((d["prior_rounds"] > 0).sum())
    return (
        f"data use per run: trained the final predictor {dist('trained')}; only judged it "
        f"{dist('judged_only')}; guided rounds on the prior {dist('prior_rounds')}, {on_prior}/{len(d)} runs > 0"
    )
