"""Reading a ``dreaming`` experiment back from its records: event frames across the arm sub-runs,
the recorded discovery trees, replay scores rescored for other β, and best-score-vs-calls curves."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rsi_workbench.domains.math.fidelity import best_at
from rsi_workbench.records import Run, has_events, load_events
from rsi_workbench.replay.simulator import replay_objective
from rsi_workbench.replay.tree import DiscoveryTree

if TYPE_CHECKING:
    import pandas as pd


def load_frames(path: str | Path, kind: str) -> pd.DataFrame:
    """One event kind across every arm/seed sub-run of a dreaming experiment, as one DataFrame."""
    import pandas as pd

    subs = sorted((Path(path) / "arms").glob("*-s*"))
    frames = [load_events(p, kind=kind) for p in subs if has_events(p)]
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def load_trees(path: str | Path) -> dict[tuple[str, int], list[DiscoveryTree]]:
    """Every recorded tree of a dreaming experiment (its arm sub-runs) or of a ``program_agent`` run
    (one run, rows tagged arm and seed), per (arm, seed), in round order (sha256-verified)."""
    out: dict[tuple[str, int], list[DiscoveryTree]] = {}
    subs = sorted((Path(path) / "arms").glob("*-s*"))
    if not subs and has_events(path):
        subs = [Path(path)]
    for sub in subs:
        if not has_events(sub):
            continue
        run = Run.open(sub)
        for e in run.events("tree_recorded"):
            key = (str(e.payload["arm"]), int(e.payload["seed"]))
            obj = run.artifacts.get_json(e.payload["artifact"])
            out.setdefault(key, []).append(
                DiscoveryTree.from_json(obj, source=f"{sub}:{e.payload['artifact']}")
            )
    return out


def rescore_frame(scores: pd.DataFrame, beta1: float, beta2: float) -> pd.DataFrame:
    """Recompute V for other β1, β2 from ``replay_tree_scored`` rows (columns quality, n, k) — pure,
    no replay needed because policies never read β. Adds ``V_rescored`` (``None`` where quality is
    undefined — null/NaN: that replay revealed no valid node); average per candidate with
    ``replay.simulator.mean_value`` (and rank with ``rank_key``) to get V^m as dreaming does."""
    df = scores.copy()
    df["V_rescored"] = [
        replay_objective(None if q is None else float(q), int(n), int(k), beta1, beta2)
        for q, n, k in zip(df["quality"], df["n"], df["k"])
    ]
    return df


def calls_to_reach(nodes: pd.DataFrame, target: float) -> int | None:
    """First call count at which one arm/seed's best valid score reaches ``target`` (None = censored)."""
    hit = nodes[nodes["best_so_far"].notna() & (nodes["best_so_far"] >= target)]
    return None if hit.empty else int(hit["calls"].min())


__all__ = ["best_at", "calls_to_reach", "load_frames", "load_trees", "rescore_frame"]
