"""Discovery-tree diagnostics from a run's event frames (``tree_node``, ``policy_deployed``,
``tree_recorded`` rows): the figures ``rsi-workbench report --diagnostics DIR`` prints for a
``dreaming`` run (:mod:`rsi_workbench.experiments.dreaming.diagnostics`).

Pure functions from event frames to DataFrames:

- :func:`best_by_calls`: best valid score after N calls per arm, mean ± sd over seeds (sd with
  ddof=0, the population sd of the seeds' values) and every seed's value;
- :func:`best_found`: the best valid score of the experiment and, for each (arm, seed) that reached
  it (within ``tol``), the first call at which it did;
- :func:`replay_rounds` / :func:`replay_summary`: per dreaming round, the replay V of π0 and of the
  deployed choice, the predicted gain of a revision, and the replay-to-real gap (the next real tree's
  ``V_online`` minus the deployed policy's replay V^m);
- :func:`attempt_outcomes`: attempts per arm by outcome (valid, invalid without an error, timeouts,
  optimiser exits by code, exceptions).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from rsi_workbench.records import Run


def best_by_calls(
    nodes: pd.DataFrame, arms: Sequence[str], seeds: Sequence[int], marks: Sequence[int]
) -> pd.DataFrame:
    """Rows (arm, calls): mean and sd (ddof=0) over seeds of the best valid score within ``calls``
    attempts, plus ``seed_<s>`` columns (NaN where a seed has no valid attempt yet)."""
    rows = []
    for arm in arms:
        for m in marks:
            row: dict[str, Any] = {"arm": arm, "calls": int(m)}
            vals = []
            for s in seeds:
                d = nodes[(nodes["arm"] == arm) & (nodes["seed"] == s) & (nodes["calls"] <= m)]
                d = d[d["best_so_far"].notna()]
                v = float(d["best_so_far"].max()) if len(d) else np.nan
                row[f"seed_{s}"] = v
                if not np.isnan(v):
                    vals.append(v)
            row["mean"] = float(np.mean(vals)) if vals else np.nan
            row["sd"] = float(np.std(vals)) if vals else np.nan
            row["n_seeds"] = len(vals)
            rows.append(row)
    return pd.DataFrame(rows)


def best_found(nodes: pd.DataFrame, tol: float = 1e-9) -> pd.DataFrame:
    """The experiment's best valid score and, per (arm, seed) whose best is within ``tol`` of it,
    the first call reaching it (sorted by that call)."""
    valid = nodes[nodes["valid"].astype(bool) & nodes["score"].notna()]
    if valid.empty:
        return pd.DataFrame(columns=["arm", "seed", "call", "tree", "score", "payload"])
    best = float(valid["score"].max())
    hit = valid[valid["score"] >= best - tol].sort_values("calls")
    first = hit.groupby(["arm", "seed"], sort=False).head(1)
    return pd.DataFrame(
        {
            "arm": first["arm"].to_numpy(),
            "seed": first["seed"].to_numpy(),
            "call": first["calls"].astype(int).to_numpy(),
            "tree": first["tree"].astype(int).to_numpy(),
            "score": first["score"].astype(float).to_numpy(),
            "payload": first["payload"].to_numpy(),
        }
    ).sort_values(["call", "arm"], ignore_index=True)


def replay_rounds(deployed: pd.DataFrame, recorded: pd.DataFrame) -> pd.DataFrame:
    """One row per dreaming round (a ``policy_deployed`` event) with the next real tree of that seed:
    ``predicted_gain`` = V_chosen − V_pi0; ``gap`` = next V_online − V_chosen (NaN without a next tree)."""
    cols = [
        "seed",
        "tree",
        "chosen",
        "revised",
        "V_pi0",
        "V_chosen",
        "predicted_gain",
        "next_V_online",
        "gap",
        "next_nodes",
    ]
    if deployed.empty:
        return pd.DataFrame(columns=cols)
    rec = recorded[recorded["arm"] == "dreaming"] if len(recorded) else recorded
    rows = []
    for d in deployed.sort_values(["seed", "tree"]).itertuples():
        nxt = rec[(rec["seed"] == d.seed) & (rec["tree"] == d.tree + 1)] if len(rec) else rec
        v_next = _num(nxt["V_online"].iloc[0]) if len(nxt) else np.nan
        v_pi0, v_chosen = (
            _num(d.V_pi0),
            _num(d.V_chosen),
        )  # V may be undefined (None): NaN here, "—" in tables
        rows.append(
            {
                "seed": int(d.seed),
                "tree": int(d.tree),
                "chosen": int(d.chosen),
                "revised": int(d.chosen) != 0,
                "V_pi0": v_pi0,
                "V_chosen": v_chosen,
                "predicted_gain": v_chosen - v_pi0,
                "next_V_online": v_next,
                "gap": v_next - v_chosen,
                "next_nodes": int(nxt["nodes"].iloc[0]) if len(nxt) else np.nan,
            }
        )
    return pd.DataFrame(rows, columns=cols)


def replay_summary(rounds: pd.DataFrame) -> dict[str, Any]:
    """Revisions deployed, their predicted gains over π0, and the mean replay-to-real gap (all rounds
    with a next tree, after a revision, after keeping π0)."""
    rev = rounds[rounds["revised"]] if len(rounds) else rounds
    tested = rounds[rounds["gap"].notna()] if len(rounds) else rounds

    def mean(x: pd.Series) -> float:
        return float(x.mean()) if len(x) else np.nan

    return {
        "rounds": len(rounds),
        "revisions": len(rev),
        "gain_mean": mean(rev["predicted_gain"]) if len(rev) else np.nan,
        "gain_max": float(rev["predicted_gain"].max()) if len(rev) else np.nan,
        "tested": len(tested),
        "gap_mean": mean(tested["gap"]) if len(tested) else np.nan,
        "gap_revised": mean(tested[tested["revised"]]["gap"]) if len(tested) else np.nan,
        "gap_pi0": mean(tested[~tested["revised"]]["gap"]) if len(tested) else np.nan,
    }


_EXIT = re.compile(r"SLSQP exit (\d+)")


def attempt_outcomes(nodes: pd.DataFrame) -> pd.DataFrame:
    """Attempts per arm by outcome: valid, invalid without an error, each failure class (optimiser
    failures split by exit code), and the total."""
    rows = []
    for arm, d in nodes.groupby("arm", sort=False):
        row: dict[str, Any] = {"arm": arm, "attempts": len(d), "valid": int(d["valid"].astype(bool).sum())}
        bad = d[~d["valid"].astype(bool)]
        fc = bad["fail_class"].fillna("invalid")
        err = bad["error"].fillna("").astype(str)
        row["invalid_no_error"] = int(((fc == "invalid") & (err == "")).sum())
        for cls in sorted(set(fc) - {"invalid"} | {"timeout"}):
            if cls == "optimizer_failure":
                codes = err[fc == cls].map(lambda e: (_EXIT.search(e) or [None, "?"])[1])
                for code, n in codes.value_counts().sort_index().items():
                    row[f"optimizer_exit_{code}"] = int(n)
            else:
                row[cls] = int((fc == cls).sum())
        rows.append(row)
    df = pd.DataFrame(rows).fillna(0)
    return df.astype({c: int for c in df.columns if c != "arm"})


def _num(x: object) -> float:
    """A recorded V as a float; an undefined V (None, as Dream-RSI's prefix-only replay allows) is NaN."""
    return np.nan if x is None else float(x)  # type: ignore[arg-type]


#: a model answer stopped by the token limit (the recorded ``finish_reason``)
CUT = "length"


def lane_rows(run: Run) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """``tree_node`` payloads per (arm, seed), in call order."""
    out: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for e in run.events("tree_node"):
        out.setdefault((e.payload["arm"], e.payload["seed"]), []).append(e.payload)
    return out


def cut_count(rows: list[dict[str, Any]]) -> int:
    """Model answers stopped by ``max_tokens`` (recorded ``finish_reason`` "length")."""
    return sum(r.get("finish_reason") == CUT for r in rows)


def outcome_share_lines(lanes: dict[tuple[str, int], list[dict[str, Any]]]) -> list[str]:
    """Per arm (all seeds): valid / invalid / failed (by class) shares, tokens per model call and
    answers cut at ``max_tokens``, as text lines of the program agent's report."""
    lines = [
        "",
        "outcome shares per arm (all seeds): valid / invalid / failed (by class) / no program; tokens per model call",
    ]
    lines.append(
        f"{'arm':<18}{'calls':>6}{'valid':>7}{'invalid':>8}{'failed':>7}  {'failure classes':<34}"
        f"{'prompt tok mean/max':>20}{'completion mean':>16}"
    )
    arms: dict[str, list[dict[str, Any]]] = {}
    for (arm, _), rows in lanes.items():
        arms.setdefault(arm, []).extend(rows)
    for arm, rows in sorted(arms.items()):
        n = len(rows)
        valid = sum(bool(r["valid"]) for r in rows) / n
        invalid = sum(r["fail_class"] == "invalid" for r in rows) / n
        failed = [r for r in rows if not r["valid"] and r["fail_class"] not in ("invalid", None)]
        classes = Counter(
            ("no_program" if r.get("move") == "no_program" else r["fail_class"]) for r in failed
        )
        pt = [int(r["prompt_tokens"]) for r in rows if r.get("prompt_tokens") is not None]
        ct = [int(r["completion_tokens"]) for r in rows if r.get("completion_tokens") is not None]
        ptxt = f"{sum(pt) / len(pt):.0f}/{max(pt)}" if pt else "—"
        ctxt = f"{sum(ct) / len(ct):.0f}" if ct else "—"
        cls = ", ".join(f"{k} {v}" for k, v in sorted(classes.items())) or "—"
        cut = cut_count(rows)
        lines.append(
            f"{arm:<18}{n:>6}{valid:>7.0%}{invalid:>8.0%}{len(failed) / n:>7.0%}  {cls:<34}{ptxt:>20}{ctxt:>16}"
            + (f"  cut at max_tokens: {cut}" if cut else "")
        )
    cuts = sum(cut_count(r) for r in arms.values())
    if cuts:
        lines.append(
            f"cut at max_tokens: {cuts} model answer(s) stopped at the token limit (finish_reason "
            "'length'); their programs are cut short — raise max_tokens"
        )
    return lines


__all__ = [
    "CUT",
    "cut_count",
    "lane_rows",
    "outcome_share_lines",
    "attempt_outcomes",
    "best_by_calls",
    "best_found",
    "replay_rounds",
    "replay_summary",
]
