"""The campaign report: graph size and depth, operation shares, budgets, and DFM-Bench profile tables.

Levels follow DFM-Bench: level 1 hypothesis profiles (eight axes), axis means by episode window,
level 3 development paths. A domain may name its deliberate controls (e.g. a pure-noise
analysis) so the report can say where they rank.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rsi_workbench import budget
from rsi_workbench.discovery.assess import (
    axis_means,
    campaign_allocation,
    operation_shares,
    path_scores,
    profile_table,
)
from rsi_workbench.discovery.records import DiscoveryRecords, load_records
from rsi_workbench.records import Run

if TYPE_CHECKING:
    import pandas as pd

PROFILE_COLUMNS = [
    "hypothesis_id",
    "operation",
    "direction",
    "verdict",
    "importance",
    "novelty",
    "evidence",
    "falsifiability",
    "data_solvability",
    "feasibility",
    "alternatives",
    "actionability",
    "weighted",
    "execution_ready",
]


def campaign_report(path: str | Path, controls: Callable[[DiscoveryRecords], list[str]] | None = None) -> str:
    """The campaign's tables (printed; a run or ``report --save`` writes ``report.txt``); ``controls``
    names the control versions."""
    run = Run.open(path)
    recs = load_records(run)
    alloc = campaign_allocation(recs, recorded_budgets(run))
    prof = profile_table(recs)
    lines = [f"DiscoveryRSI campaign — {path}", ""]
    lines += graph_lines(alloc, operation_shares(recs))
    if len(prof):
        lines += profile_lines(prof, controls(recs) if controls else [])
        lines += [""] + profile_tables(recs, prof)
    return "\n".join(lines)


def recorded_budgets(run: Run) -> dict[str, Any]:
    """The budget ledger's report rebuilt from the run's ``budget_opened`` / ``budget_spent`` events."""
    budgets = budget.BudgetLedger.open(None, {}).report()
    opened = run.events("budget_opened")
    if opened:
        led = budget.BudgetLedger({k: float(v) for k, v in opened[0].payload["budgets"].items()})
        for e in run.events("budget_spent"):
            led.spent[e.payload["budget"]] += float(e.payload["amount"])
        budgets = led.report()
    return budgets


def graph_lines(alloc: dict[str, Any], ops: pd.DataFrame) -> list[str]:
    """Research-graph size, operation shares (overall, by half, per episode), labels and spend."""
    lines = [
        f"research graph: {alloc['hypotheses']} hypothesis versions, {alloc['lineage_edges']} lineage edges, "
        f"{alloc['families']} families, max depth {alloc['max_depth']}, {alloc['directions']} directions, "
        f"{alloc['episodes']} episodes",
        "operation shares: "
        + ", ".join(f"{k} {v:.0%}" for k, v in alloc.get("operation_shares", {}).items()),
    ]
    if len(ops):
        half = max(1, len(ops) // 2)
        for name, part in (("first half", ops.iloc[:half]), ("second half", ops.iloc[half:])):
            if len(part):
                lines.append(
                    f"  {name} (episodes {int(part.episode.min()) + 1}-{int(part.episode.max()) + 1}): "
                    + ", ".join(
                        f"{op} {part[op].mean():.0%}" for op in ("evolve", "repair", "crossover", "restart")
                    )
                )
        letter = {"evolve": "E", "repair": "R", "crossover": "X", "restart": "S"}
        seq = "".join(letter[op] for _, r in ops.iterrows() for op in letter if r[op])
        lines.append(f"operation per episode (E evolve, R repair, X crossover, S restart): {seq}")
    lines.append(f"progress labels: {alloc['progress_labels']}")
    lines.append(f"executions: {alloc['executions']}; duplicate analyses: {alloc['duplicate_analyses']}")
    lines.append(f"critiques: {alloc['critiques']}; branch synthesis: {alloc['branch_synthesis']}")
    if "budget_use" in alloc:
        lines.append("budget use: " + ", ".join(f"{k} {v:.0%}" for k, v in alloc["budget_use"].items()))
    return lines


def profile_lines(prof: pd.DataFrame, controls: list[str]) -> list[str]:
    """Mean weighted profile first vs last episode, by episode third, and where the controls rank."""
    first, last = prof.episode.min(), prof.episode.max()
    f_mean = prof[prof.episode == first].weighted.mean()
    l_mean = prof[prof.episode == last].weighted.mean()
    lines = [
        "",
        f"mean weighted profile: first episode {f_mean:.2f} (n={int((prof.episode == first).sum())}), "
        f"last episode {l_mean:.2f} (n={int((prof.episode == last).sum())}), all {prof.weighted.mean():.2f}",
    ]
    n_ep = int(prof.episode.max()) + 1
    if n_ep >= 6:
        thirds = [(a * n_ep // 3, (a + 1) * n_ep // 3) for a in range(3)]
        lines.append(
            "mean weighted profile by episode third: "
            + ", ".join(
                f"episodes {lo + 1}-{hi}: {prof[(prof.episode >= lo) & (prof.episode < hi)].weighted.mean():.2f}"
                for lo, hi in thirds
            )
        )
    control = prof[prof.hypothesis_id.isin(controls)]
    if len(control):
        lines.append(
            f"noise control: weighted {control.weighted.mean():.2f} "
            f"(rank {int((prof.weighted < control.weighted.min()).sum()) + 1} of {len(prof)} from the bottom)"
        )
    return lines


def profile_tables(recs: DiscoveryRecords, prof: pd.DataFrame) -> list[str]:
    """DFM-Bench level 1 profiles, axis means by episode window and level 3 development paths."""
    import pandas as pd

    lines: list[str] = []
    with pd.option_context("display.width", 250, "display.max_columns", 30, "display.max_rows", 500):
        lines.append("level 1 — hypothesis profiles (1–10; weights 20/20/15/10/10/10/10/5):")
        lines.append(prof[PROFILE_COLUMNS].round(2).to_string(index=False))
        lines += ["", "axis means by episode window (weights in brackets):"]
        lines.append(axis_means(recs).round(2).to_string())
        ps = path_scores(recs)
        if len(ps):
            lines += ["", "level 3 — development paths (weights 5/30/20/20/10/10/5):"]
            lines.append(ps.round(2).to_string(index=False))
    return lines
