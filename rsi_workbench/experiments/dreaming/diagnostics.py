"""Diagnostics of a ``dreaming`` experiment from its records: the figures ``benchmarks/RESULTS.md``
quotes beyond the report, printed by ``rsi-workbench report --diagnostics DIR`` (the tables:
:mod:`rsi_workbench.domains.math.analysis`)."""

from __future__ import annotations

from pathlib import Path

from rsi_workbench.domains.math.analysis import (
    attempt_outcomes,
    best_by_calls,
    best_found,
    replay_rounds,
    replay_summary,
)


def _e(x: float) -> str:
    return "n/a" if x != x else f"{x:+.2e}"


def diagnostics(path: str | Path) -> str:
    """Mean ± sd and per-seed best at each report mark, the best packing found, replay rounds with
    the replay-to-real gap, and attempt outcomes of a ``dreaming`` experiment."""
    from rsi_workbench.experiments.dreaming.config import Config
    from rsi_workbench.experiments.dreaming.results import load_frames
    from rsi_workbench.records import Run

    path = Path(path)
    cfg = Config(**Run.open(path).config)
    nodes = load_frames(path, "tree_node")
    lines = [f"dreaming diagnostics — {path}"]
    if nodes.empty:
        return "\n".join([*lines, "(no attempts recorded)"])
    marks = sorted({max(1, cfg.calls // 4), max(1, cfg.calls // 2), max(1, 3 * cfg.calls // 4), cfg.calls})
    tab = best_by_calls(nodes, cfg.arms, cfg.seeds, marks)
    lines += ["", "best valid score after N calls: mean ± sd (ddof=0) over seeds [per seed]"]
    for r in tab.itertuples():
        per = ", ".join(f"{getattr(r, f'seed_{s}'):.5f}" for s in cfg.seeds)
        lines.append(f"  {r.arm:<22} @{r.calls:<5} {r.mean:.5f} ± {r.sd:.4f}  [{per}]")
    found = best_found(nodes)
    if len(found):
        lines += [
            "",
            f"best valid score: {float(found['score'].iloc[0])!r} (artifact {found['payload'].iloc[0]})",
        ]
        for r in found.itertuples():
            lines.append(
                f"  reached by {r.arm} seed {r.seed} at call {r.call} (tree {r.tree}): {float(r.score)!r}"
            )
    rounds = replay_rounds(load_frames(path, "policy_deployed"), load_frames(path, "tree_recorded"))
    if len(rounds):
        s = replay_summary(rounds)
        nn = rounds[rounds["revised"]]["next_nodes"].dropna()
        lines += [
            "",
            f"dreaming rounds: {s['revisions']} of {s['rounds']} deployed a revision; predicted replay gain "
            f"over π0 of a deployed revision: mean {_e(s['gain_mean'])}, max {_e(s['gain_max'])}",
            f"replay-to-real gap (next tree's V_online − deployed V^m) over {s['tested']} rounds with a next "
            f"tree: mean {_e(s['gap_mean'])}; after a revision {_e(s['gap_revised'])}; π0 kept "
            f"{_e(s['gap_pi0'])}",
        ]
        if len(nn):
            lines.append(f"nodes of the trees grown after a revision: {int(nn.min())}–{int(nn.max())}")
    out = attempt_outcomes(nodes)
    lines += ["", "attempts by outcome"]
    lines.append(out.to_string(index=False))
    return "\n".join(lines)


__all__ = [
    "attempt_outcomes",
    "best_by_calls",
    "best_found",
    "diagnostics",
    "replay_rounds",
    "replay_summary",
]
