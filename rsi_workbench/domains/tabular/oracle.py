"""The planted ground truth of what a decision produced, on the synthetic directions.

On a ``synthetic-planted-NN`` direction the information each group carries is known by construction
(:func:`~rsi_workbench.domains.tabular.synthetic.planted_truth`), so the true value of a tabular
hypothesis "X adds information beyond baseline B" needs no analysis: it is ``info(B ∪ X) − info(B)``
with the planted information of a set of groups

    info(S) = 2·[strong informative ∈ S or redundant ∈ S] + 1·[weak informative ∈ S] + 0.5·[context ∈ S]

(the redundant block is a noisy copy of the strong one: it adds 2 beyond a baseline without the strong
block and nothing beyond one with it; noise blocks, the deliberate ``noise`` control and unrecorded
groups add nothing). A Lead decision's oracle value is the mean value of the versions its episode
published (the hypotheses it coordinated; the episode-0 noise control excluded).

:func:`omega_tracking` asks whether a credit weight ω follows that value, the profile the judges gave,
or merely the episode index (Spearman ρ over decisions, pooled and within campaign).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rsi_workbench.discovery.records import DiscoveryRecords, HypothesisVersion
from rsi_workbench.domains.tabular.catalog import NOISE_GROUP
from rsi_workbench.domains.tabular.synthetic import _design, _index, is_synthetic


def planted_information(direction: str, groups: Iterable[str]) -> float:
    """info(S) of a set of groups of a synthetic direction (see the module docstring)."""
    d = _design(_index(direction))
    s = set(groups)
    strong = str(d["strong"]) in s or any(
        r == "redundant" and b in s
        for b, r in d["roles"].items()  # type: ignore[attr-defined]
    )
    return 2.0 * strong + 1.0 * (str(d["weak"]) in s) + 0.5 * ("context" in s)


def hypothesis_oracle_value(h: HypothesisVersion) -> float | None:
    """info(B ∪ X) − info(B) of a version on a synthetic direction (None elsewhere or without a spec)."""
    if not is_synthetic(h.direction):
        return None
    spec = h.content.plan.spec or {}
    base, added = list(spec.get("baseline", ())), list(spec.get("added", ()))
    if not added:
        return None
    return planted_information(h.direction, base + added) - planted_information(h.direction, base)


def is_noise_control(h: HypothesisVersion) -> bool:
    """The episode-0 deliberate control (pure-noise columns beyond the first baseline). A later version
    that re-runs it (a repair of the control on a stateful direction) is a decision's product like any
    other: its oracle value is 0."""
    spec = h.content.plan.spec or {}
    return h.episode == 0 and h.operation == "restart" and list(spec.get("added", ())) == [NOISE_GROUP]


def episode_oracle_values(recs: DiscoveryRecords) -> dict[int, float]:
    """Per episode: the mean oracle value of the versions it published (noise control excluded)."""
    by_ep: dict[int, list[float]] = {}
    for h in recs.hypotheses:
        v = hypothesis_oracle_value(h)
        if v is not None and not is_noise_control(h):
            by_ep.setdefault(h.episode, []).append(v)
    return {ep: statistics.fmean(v) for ep, v in by_ep.items()}


def episode_profiles(recs: DiscoveryRecords) -> dict[int, float]:
    """Per episode: the mean Level-1 weighted profile of the versions it published (what the judges saw)."""
    ep_of = {h.hypothesis_id: h.episode for h in recs.hypotheses}
    by_ep: dict[int, list[float]] = {}
    for p in recs.profiles:
        if p.hypothesis_id in ep_of:
            by_ep.setdefault(ep_of[p.hypothesis_id], []).append(p.weighted)
    return {ep: statistics.fmean(v) for ep, v in by_ep.items()}


def _rho(x: Sequence[float], y: Sequence[float]) -> float:
    from scipy.stats import spearmanr

    if len(x) < 3 or len(set(x)) < 2 or len(set(y)) < 2:
        return math.nan
    return float(spearmanr(x, y).statistic)


def omega_tracking(
    rows: Sequence[Mapping[str, Any]],
    records: Mapping[str, DiscoveryRecords],
    weight_key: str = "omega",
) -> dict[str, Any]:
    """Spearman ρ of a decision weight (``rows[i][weight_key]``, each row a decision sample with
    ``campaign`` and ``episode``) with the episode index, the judged profile of what the episode
    published and its oracle value; pooled and as the mean within-campaign ρ. ``records`` maps a
    campaign name to its records."""
    prof = {c: episode_profiles(r) for c, r in records.items()}
    orac = {c: episode_oracle_values(r) for c, r in records.items()}
    pts = []
    for r in rows:
        c, ep = str(r["campaign"]), int(r["episode"])
        pts.append((float(r[weight_key]), ep, prof.get(c, {}).get(ep), orac.get(c, {}).get(ep), c))
    out: dict[str, Any] = {"decisions": len(pts)}
    for name, k in (("episode", 1), ("profile", 2), ("oracle", 3)):
        p = [q for q in pts if q[k] is not None]
        out[f"n_{name}"] = len(p)
        out[f"rho_{name}"] = _rho([q[0] for q in p], [float(q[k]) for q in p])  # type: ignore[arg-type]
        within = []
        for c in sorted({q[4] for q in p}):
            cp = [q for q in p if q[4] == c]
            v = _rho([q[0] for q in cp], [float(q[k]) for q in cp])  # type: ignore[arg-type]
            if not math.isnan(v):
                within.append(v)
        out[f"rho_{name}_within"] = statistics.fmean(within) if within else math.nan
    oracle = [q for q in pts if q[3] is not None]
    out["rho_episode_oracle"] = _rho([float(q[1]) for q in oracle], [float(q[3]) for q in oracle])  # type: ignore[arg-type]
    return out


__all__ = [
    "episode_oracle_values",
    "episode_profiles",
    "hypothesis_oracle_value",
    "is_noise_control",
    "omega_tracking",
    "planted_information",
]
