"""The report of a ``discovery_rounds`` experiment: split, campaigns, acceptance tables, path deltas.

Pure functions of the recorded runs (nothing is re-run). DFM-Bench level 3 path scores
(:func:`rsi_workbench.discovery.assess.path_scores`) are averaged over a campaign's leaves; a dev
pair's path score averages its dev campaigns; a path delta is one round's mean minus the previous
round's (different, fresh questions: a change of the system, not of the question).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from rsi_workbench.discovery.assess import PATH_WEIGHTS, path_scores
from rsi_workbench.discovery.records import load_records
from rsi_workbench.records import Run


def campaign_summary(path: Path) -> dict[str, Any]:
    """One campaign: size, mean weighted profile, mean path score (and its seven dimensions), turns
    and failed turns by role, live and replayed model calls."""
    recs = load_records(path)
    ps = path_scores(recs)
    turns = Counter(t.role for t in recs.turns)
    failed = Counter(t.role for t in recs.turns if t.failed)
    r = Run.open(path)
    return {
        "episodes": len(recs.episodes),
        "hypotheses": len(recs.hypotheses),
        "profile": _mean([p.weighted for p in recs.profiles]),
        "path_score": float(ps["path_score"].mean()) if len(ps) else float("nan"),
        **{d: float(ps[d].mean()) if len(ps) else float("nan") for d in PATH_WEIGHTS},
        "failed_turns": {k: f"{failed[k]}/{n}" for k, n in sorted(turns.items())},
        "critiques": len(recs.critiques),
        "progress_labels": len(recs.progress),
        "model_calls": len(r.events("model_call")),
        "model_replays": len(r.events("model_replay")),
    }


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


def dev_path_score(runs: list[str]) -> float:
    """Mean DFM-Bench path score over a pair's dev campaigns."""
    vals = []
    for p in runs:
        ps = path_scores(load_records(Path(p)))
        if len(ps):
            vals.append(float(ps["path_score"].mean()))
    return _mean(vals)


def acceptance_table(improve_dir: Path) -> tuple[Any, dict[str, Any]]:
    """Accept_dev's four pairs with their dev path scores and Δpath against the incumbent pair."""
    import pandas as pd

    dec = Run.open(improve_dir).events("accept_decision")[-1].payload
    rows = []
    for e in dec["evidence"]:
        rows.append(
            {
                "theta": e["lead"],
                "psi": e["harness"],
                "value": e["value"],
                "quality": e["quality"],
                "best": e["best"],
                "reliability": e["reliability"],
                "invalid": e["invalid_decisions"],
                "agent_calls": e["agent_calls"],
                "path": dev_path_score(list(e["runs"])),
                "accepted": e["theta"] == dec["theta_next_digest"]
                and e["harness"] == dec["psi_next"]["version"],
            }
        )
    df = pd.DataFrame(rows)
    if len(df):
        df["d_path"] = df["path"] - df["path"].iloc[0]  # the first pair is the incumbent (theta_k, psi_k)
    return df, dec


def selection_table(improve_dir: Path) -> Any:
    """Select_dev of psi+ (eq. 10): the incumbent harness and each candidate under theta_k, on dev."""
    import pandas as pd

    rows = [
        {
            "psi": e.payload["score"]["harness"],
            "value": e.payload["score"]["value"],
            "quality": e.payload["score"]["quality"],
            "path": dev_path_score(list(e.payload["score"]["runs"])),
        }
        for e in Run.open(improve_dir).events("dev_evaluation")
        if e.payload["stage"] == "select_harness"
    ]
    return pd.DataFrame(rows)


def rounds_report(path: Path) -> str:
    import pandas as pd

    run = Run.open(path)
    cfg = run.config
    lines = [
        f"DiscoveryRSI closed rounds — {path}",
        "",
        "split (fresh directions per round; dev sets disjoint, by dataset):",
    ]
    for k, r in enumerate(cfg["rounds"]):
        lines.append(f"  R{k}: campaign {r['directions']}  dev {r['dev_directions']}")
    roles = (cfg["campaign"].get("roles") or {}) if isinstance(cfg.get("campaign"), dict) else {}
    lines.append(
        "  roles: "
        + (
            ", ".join(f"{k}={v['model']['name']}" for k, v in roles.items() if v)
            if roles
            else "all rule roles"
        )
    )
    summaries = []
    wide = pd.option_context("display.width", 250, "display.max_columns", 30)
    with wide:
        for e in run.events("rounds_campaign"):
            k = int(e.payload["round"])
            s = campaign_summary(path / e.payload["path"])
            summaries.append(
                {"round": f"R{k}", "theta": e.payload["theta"]["name"], "psi": e.payload["psi"], **s}
            )
            lines += [
                "",
                f"R{k} campaign ({e.payload['theta']['name']}, psi {e.payload['psi']}): "
                f"{s['episodes']} episodes, {s['hypotheses']} versions, mean profile {s['profile']:.3f}, "
                f"mean path score {s['path_score']:.3f}; critiques {s['critiques']}, progress labels "
                f"{s['progress_labels']}; failed turns {s['failed_turns']}; model calls "
                f"{s['model_calls']} live, {s['model_replays']} replayed",
            ]
            acc = next(
                (a.payload for a in run.events("rounds_accepted") if int(a.payload["round"]) == k), None
            )
            if acc is None:
                continue
            df, dec = acceptance_table(path / acc["path"])
            sel = selection_table(path / acc["path"])
            if len(sel) > 1:
                lines += [
                    "psi+ = Select_dev({psi} u Psi_cand | theta_k) (eq. 10):",
                    sel.round(3).to_string(index=False),
                ]
            lines += [
                f"R{k} Accept_dev over {{theta, theta+}} x {{psi, psi+}} on {dec['dev_directions']} (eq. 11):",
                df.round(3).to_string(index=False),
                f"  accepted: theta_next = {dec['theta_next']}, psi_next = {dec['psi_next']['version']}",
            ]
        if summaries:
            df = pd.DataFrame(summaries)
            cols = ["round", "theta", "psi", "hypotheses", "profile", "path_score", *PATH_WEIGHTS]
            delta = df[["profile", "path_score", *PATH_WEIGHTS]].diff().iloc[1:]
            delta.insert(0, "rounds", [f"R{i - 1}->R{i}" for i in range(1, len(df))])
            lines += [
                "",
                "DFM-Bench path scores per round (campaign means over leaves):",
                df[cols].round(3).to_string(index=False),
                "",
                "path deltas (this round minus the previous; fresh questions each round):",
                delta.round(3).to_string(index=False) if len(delta) else "  (one round only)",
            ]
    return "\n".join(lines)
