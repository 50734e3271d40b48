"""Outcomes of GUI experiments read from their events: per-seed success at each retained tier, the area
under a seed's tier curve, the paper's action-economy metrics (actions per episode, wrong submits,
repeated clicks) and tier-to-tier gains. Pure readers of a run directory; the ``gui`` experiment's
report prints them.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from rsi_workbench.metrics.bootstrap import t_interval
from rsi_workbench.records import Run

__all__ = ["episode_economy", "paired_seed_difference", "seed_auc", "seed_success", "tier_auc", "tier_gains"]


def seed_success(path: str | Path) -> dict[str, dict[int, dict[int, float]]]:
    """{method: {seed: {tier: success rate}}}: the share of the tier's pair's test episodes (infra
    failures left out) that succeeded, per experiment seed."""
    run = Run.open(path)
    by_pair: dict[str, list[float]] = defaultdict(list)
    for e in run.events("test_episode"):
        if not e.payload["infra_failure"]:
            by_pair[e.payload["pair"]].append(float(bool(e.payload["success"])))
    out: dict[str, dict[int, dict[int, float]]] = {}
    for e in run.events("tier"):
        p = e.payload
        eps = by_pair.get(p["pair"])
        if eps:
            out.setdefault(p["method"], {}).setdefault(int(p["seed"]), {})[int(p["tier"])] = sum(eps) / len(
                eps
            )
    return out


def paired_seed_difference(
    per: dict[str, dict[int, dict[int, float]]], a: str, b: str, tier: int
) -> tuple[float, float, float, int]:
    """Seed-level paired difference a − b of success at ``tier`` (t-interval over the shared seeds)."""
    sa, sb = per.get(a, {}), per.get(b, {})
    diffs = [
        sa[s][tier] - sb[s][tier] for s in sorted(sa.keys() & sb.keys()) if tier in sa[s] and tier in sb[s]
    ]
    return t_interval(diffs)


def episode_economy(path: str | Path) -> dict[str, dict[int, dict[int, dict[str, float]]]]:
    """{method: {seed: {tier: {mean_actions, wrong_submits, repeated_clicks, episodes}}}}: the paper's
    action-economy metrics of each tier's test episodes (infra failures left out), per seed."""
    run = Run.open(path)
    by_pair: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in run.events("test_episode"):
        if not e.payload["infra_failure"]:
            by_pair[e.payload["pair"]].append(e.payload)
    out: dict[str, dict[int, dict[int, dict[str, float]]]] = {}
    for e in run.events("tier"):
        p = e.payload
        eps = by_pair.get(p["pair"])
        if not eps:
            continue
        out.setdefault(p["method"], {}).setdefault(int(p["seed"]), {})[int(p["tier"])] = {
            "mean_actions": sum(float(x["n_actions"]) for x in eps) / len(eps),
            "wrong_submits": float(sum(bool(x["wrong_submit"]) for x in eps)),
            "repeated_clicks": float(sum(int(x["repeated_clicks"]) for x in eps)),
            "episodes": float(len(eps)),
        }
    return out


def tier_auc(per_seed: dict[int, float]) -> float:
    """Area under one seed's tier curve (success per tier, trapezoids), divided by the tiers spanned:
    the mean success over the curve, in [0, 1]; a single tier is its own value."""
    ts = sorted(per_seed)
    if len(ts) == 1:
        return per_seed[ts[0]]
    area = sum((per_seed[a] + per_seed[b]) / 2 * (b - a) for a, b in zip(ts, ts[1:]))
    return area / (ts[-1] - ts[0])


def seed_auc(per: dict[str, dict[int, dict[int, float]]]) -> dict[str, dict[int, float]]:
    """{method: {seed: area under its tier curve}} (:func:`tier_auc`)."""
    return {m: {s: tier_auc(t) for s, t in seeds.items() if t} for m, seeds in per.items()}


def tier_gains(per_seed: dict[int, dict[int, float]], n_tiers: int) -> list[tuple[int, int, int, int]]:
    """Per tier step g → g+1: (g, seeds where success rose, seeds already at 100% at g, seeds)."""
    out = []
    for g in range(n_tiers - 1):
        seeds = [s for s, t in per_seed.items() if g in t and g + 1 in t]
        rose = sum(per_seed[s][g + 1] > per_seed[s][g] for s in seeds)
        ceiling = sum(per_seed[s][g] >= 1.0 for s in seeds)
        out.append((g, rose, ceiling, len(seeds)))
    return out
