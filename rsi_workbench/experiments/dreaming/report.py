"""The ``dreaming`` experiment's table, from its records: compute-to-quality per arm (best valid score
after N agent calls, calls to the target), each dreaming round's replay choice against the next real
tree (the replay-to-real gap), calls to fractions of the best known, and per-arm tree totals."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rsi_workbench.domains.math import DiscoveryTask
from rsi_workbench.domains.math.policy_writer import written_policy_lines
from rsi_workbench.experiments.dreaming.config import Config, make_task, target_score
from rsi_workbench.experiments.dreaming.results import best_at, calls_to_reach, load_frames
from rsi_workbench.experiments.walltime import wall_lines
from rsi_workbench.models.usage import with_model_calls
from rsi_workbench.records import Run

if TYPE_CHECKING:
    import pandas as pd


def _header(path: Path, cfg: Config, task: DiscoveryTask) -> list[str]:
    tgt = target_score(task, cfg.target_fraction)
    return [
        f"dreaming experiment — {path}",
        f"task {task.name}  best known {task.best_known}  target {cfg.target_fraction:g}×best = {tgt}",
        f"W={cfg.W} calls/arm={cfg.calls} calls/round={cfg.calls_per_round} seeds={cfg.seeds} "
        f"β1={cfg.beta1:g} β2={cfg.beta2:g}{' (adaptive)' if cfg.adaptive_beta else ''} M={cfg.candidates}",
    ]


def _best_vs_calls(cfg: Config, nodes: pd.DataFrame, fins: dict[tuple[Any, Any], Any]) -> list[str]:
    """Best valid score at a quarter, half, three quarters and all of the budget (mean over seeds),
    and each seed's calls to the target (``>B``: censored at its budget)."""
    import numpy as np

    marks = sorted({max(1, cfg.calls // 4), max(1, cfg.calls // 2), max(1, 3 * cfg.calls // 4), cfg.calls})
    lines = [
        "",
        "best valid score after N agent calls (mean over seeds) and calls to reach the target per seed",
        f"{'arm':<22}"
        + "".join(f"{'@' + str(m):>11}" for m in marks)
        + "   calls to target (per seed; '>B' = censored)",
    ]
    for arm in cfg.arms:
        row = f"{arm:<22}"
        for m in marks:
            got = (
                [best_at(nodes[(nodes["arm"] == arm) & (nodes["seed"] == s)], m) for s in cfg.seeds]
                if len(nodes)
                else []
            )
            vals = [float(v) for v in got if v is not None]
            row += f"{np.mean(vals):>11.6f}" if vals else f"{'-':>11}"
        reach = []
        for s in cfg.seeds:
            f = fins.get((arm, s))
            if f is None:
                reach.append("n/a")
            elif f["calls_to_target"] is None:
                reach.append(f">{f['calls']}")
            else:
                reach.append(str(f["calls_to_target"]))
        lines.append(row + "   " + ", ".join(reach))
    return lines


def _dreaming_rounds(dep: pd.DataFrame, rec: pd.DataFrame) -> list[str]:
    """Per dreaming round: replay V of π0 and of the deployed choice, then the next real tree's best
    score and online V (the replay-to-real gap)."""
    lines = [
        "",
        "dreaming rounds: replay V of π0 vs the deployed choice, and the next real tree",
        f"{'arm':<16} {'seed':>4} {'after tree':>10} {'chosen':>6} {'V_pi0':>10} {'V_chosen':>10} "
        f"{'next best':>10} {'next V_online':>13} {'gap':>10}",
    ]
    for _, d in dep.sort_values(["arm", "seed", "tree"]).iterrows():
        nxt = rec[(rec["arm"] == d["arm"]) & (rec["seed"] == d["seed"]) & (rec["tree"] == d["tree"] + 1)]
        nb = (
            f"{nxt['best_score'].iloc[0]:.6f}"
            if len(nxt) and nxt["best_score"].iloc[0] == nxt["best_score"].iloc[0]
            else "-"
        )
        nv = _fmt_v(nxt["V_online"].iloc[0]) if len(nxt) else "-"
        gap = (
            "-"
            if "—" in (nv, _fmt_v(d["V_chosen"])) or nv == "-"
            else f"{float(nv) - float(d['V_chosen']):+.6f}"
        )
        lines.append(
            f"{d['arm']:<16} {int(d['seed']):>4} {int(d['tree']):>10} {int(d['chosen']):>6} {_fmt_v(d['V_pi0']):>10} "
            f"{_fmt_v(d['V_chosen']):>10} {nb:>10} {nv:>13} {gap:>10}"
        )
    changed = int((dep["chosen"] != 0).sum())
    lines.append(
        f"revisions deployed: {changed}/{len(dep)} rounds; gap = next V_online − V_chosen (replay to real)"
    )
    if any(_fmt_v(v) == "—" for v in [*dep["V_pi0"], *dep["V_chosen"], *rec.get("V_online", [])]):
        lines.append("— = undefined V: that replay (or online tree) revealed no valid node")
    return lines


def _fmt_v(v: Any) -> str:
    """A replay score for the table, or "—" when undefined (recorded null, read back as None/NaN)."""
    return "—" if v is None or v != v else f"{float(v):.6f}"


def _calls_to_fractions(cfg: Config, task: DiscoveryTask, nodes: pd.DataFrame) -> list[str]:
    """Calls each seed needed to reach 99.5%, 99.8% and the target fraction of the best known."""
    fracs = [0.995, 0.998, cfg.target_fraction]
    lines = [
        "",
        "calls to reach a fraction of the best known (per seed; '>N' = censored at N calls)",
        f"{'arm':<22}" + "".join(f"{fr:>22.3%}" for fr in fracs),
    ]
    for arm in cfg.arms:
        row = f"{arm:<22}"
        for frac in fracs:
            tg = target_score(task, frac)
            cells = []
            for s in cfg.seeds:
                ns = nodes[(nodes["arm"] == arm) & (nodes["seed"] == s)]
                if ns.empty:
                    cells.append("n/a")
                    continue
                c = calls_to_reach(ns, tg) if tg is not None else None
                cells.append(str(c) if c is not None else f">{int(ns['calls'].max())}")
            row += f"{', '.join(cells):>22}"
        lines.append(row)
    return lines


def _tree_totals(cfg: Config, rec: pd.DataFrame) -> list[str]:
    lines = ["", f"{'arm':<22} {'trees':>5} {'nodes':>6} {'invalid':>7} {'errors':>6} {'wall s':>8}"]
    for arm in cfg.arms:
        r = rec[rec["arm"] == arm]
        if len(r):
            lines.append(
                f"{arm:<22} {len(r):>5} {int(r['nodes'].sum()):>6} {int(r['invalid'].sum()):>7} "
                f"{int(r['errors'].sum()):>6} {r['wall_s'].sum():>8.1f}"
            )
    return lines


def report(path: str | Path) -> str:
    """Best score vs calls per arm (mean over seeds), calls to the target (censored runs marked), and
    per-round dreaming choices with the replay-to-real gap."""
    path = Path(path)
    run = Run.open(path)
    cfg = Config(**run.config)
    task = make_task(cfg.task)
    fins = {(e.payload["arm"], e.payload["seed"]): e.payload for e in run.events("arm_finished")}
    nodes = load_frames(path, "tree_node")
    lines = _header(path, cfg, task) + _best_vs_calls(cfg, nodes, fins)
    dep = load_frames(path, "policy_deployed")
    rec = load_frames(path, "tree_recorded")
    if len(dep):
        lines += _dreaming_rounds(dep, rec)
        lines += written_policy_lines(
            load_frames(path, "replay_scored"), load_frames(path, "policy_failed_online")
        )
        if "label" in dep.columns:  # labelled candidates: which won each round, replay fidelity
            from rsi_workbench.experiments.dreaming.fidelity import report_lines

            lines += report_lines(path)
    if len(nodes) and task.best_known is not None:
        lines += _calls_to_fractions(cfg, task, nodes)
    if len(rec):
        lines += _tree_totals(cfg, rec)
    sessions = [float(e.payload["wall_s"]) for e in run.events("experiment_session")]
    arms = [(f"{a}-seed{s}", float(p.get("wall_s", 0.0))) for (a, s), p in fins.items()]
    how = f"from the events; arms' recorded rounds, {len(sessions)} session(s)"
    lines += ["", *wall_lines(arms, sum(sessions) if sessions else None, how)]
    return with_model_calls("\n".join(lines), path)  # printed only (report --save writes report.txt)


__all__ = ["report"]
