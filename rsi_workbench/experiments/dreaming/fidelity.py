"""Replay fidelity of a ``dreaming`` run read from its records: per-seed summaries and the report's
candidate-set and fidelity sections (the measure itself: :mod:`rsi_workbench.domains.math.fidelity`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rsi_workbench.domains.math.fidelity import (
    FidelitySettings,
    fidelity,
    fidelity_lines,
    seed_summary,
    verdict,
    wins_lines,
)
from rsi_workbench.experiments.dreaming.config import Config
from rsi_workbench.experiments.dreaming.results import load_frames
from rsi_workbench.records import Run


def marks_of(cfg: Config) -> list[int]:
    """The call counts a summary keeps best@ for: quarters of the budget and the fidelity budget."""
    c = cfg.calls
    extra = [cfg.fidelity.budget] if cfg.fidelity and cfg.fidelity.budget else []
    return sorted({max(1, c // 4), max(1, c // 2), max(1, 3 * c // 4), c, *extra})


def seed_summaries(path: str | Path) -> list[dict[str, Any]]:
    """One compact summary per seed of a dreaming experiment (:func:`~.fidelity.seed_summary`)."""
    path = Path(path)
    run = Run.open(path)
    cfg = Config(**run.config)
    fins = {(e.payload["arm"], int(e.payload["seed"])) for e in run.events("arm_finished")}
    nodes, scored = load_frames(path, "tree_node"), load_frames(path, "replay_scored")
    sums = [seed_summary(s, cfg.calls, list(cfg.arms), marks_of(cfg), nodes, scored, fins) for s in cfg.seeds]
    return [s for s in sums if s is not None]


def report_lines(path: str | Path) -> list[str]:
    """The dreaming report's candidate-set and fidelity sections (empty without labelled rounds)."""
    cfg = Config(**Run.open(Path(path)).config)
    sums = seed_summaries(path)
    lines = wins_lines(sums, [a for a in cfg.arms if a.startswith("dreaming")])
    if "dreaming_diverse" in cfg.arms:
        st = cfg.fidelity or FidelitySettings()
        lines += fidelity_lines(fidelity(sums, st, cfg.calls))
        fams = cfg.dreaming.candidates.families if cfg.dreaming else []
        lines += ["", *verdict(sums, st, fams, cfg.calls)]
    return lines


__all__ = ["marks_of", "report_lines", "seed_summaries"]
