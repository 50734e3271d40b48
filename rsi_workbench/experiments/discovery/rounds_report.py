"""The report of a ``discovery_rounds`` experiment: split, campaigns, acceptance tables, path deltas.

Pure functions of the recorded runs (nothing is re-run). DFM-Bench level 3 path scores
(:func:`rsi_workbench.discovery.assess.path_scores`) are averaged over a campaign's leaves; a dev
pair's path score averages its dev campaigns; a path delta is one round's mean minus the previous
round's (different, fresh questions: a change of the system, not of the question).
"""

from __future__ import annotations

from pathlib import Path

from rsi_workbench.discovery.assess import PATH_WEIGHTS
from rsi_workbench.domains.tabular.improve import acceptance_table, campaign_summary, selection_table
from rsi_workbench.records import Run

__all__ = ["acceptance_table", "campaign_summary", "rounds_report", "selection_table"]


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
