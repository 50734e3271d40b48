"""Eq. 3-5: the bounded hypothesis weight q_h from a TrueSkill posterior and the assessments.

Conservative score s = mu - kappa*sigma, tie-aware rank within a stratum, reliability factors and the
bounded transform q; a hypothesis with no assessment or no effective comparison stays unknown.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from rsi_workbench.discovery.credit.inputs import Assessment, HypothesisNode, ProgressLabel
from rsi_workbench.discovery.credit.rating import HypothesisRating


@dataclass(frozen=True)
class WeightSettings:
    """Eq. 3-5 constants: kappa, nu, sigma_ref, [q_min, q_max], lambda_p."""

    kappa: float = 2.0
    nu: float = 2.0
    sigma_ref: float = 8.3333
    q_min: float = 0.5
    q_max: float = 2.0
    lambda_p: float = 0.25


def conservative_score(mu: float, sigma: float, kappa: float = 2.0) -> float:
    """s_h = mu_h - kappa * sigma_h (eq. 3): the Phi(-kappa) posterior quantile."""
    return mu - kappa * sigma


def tie_aware_rank(score: float, stratum_scores: Sequence[float], *, presorted: bool = False) -> float:
    """r_h (eq. 3): (#{s_k < s_h} + 1/2 #{s_k = s_h}) / |S|, where S includes h itself."""
    if not stratum_scores:
        raise ValueError("stratum is empty")
    ordered = stratum_scores if presorted else sorted(stratum_scores)
    below = bisect.bisect_left(ordered, score)
    equal = bisect.bisect_right(ordered, score) - below
    return (below + 0.5 * equal) / len(ordered)


def coverage_reliability(n_effective: int, nu: float = 2.0) -> float:
    """rho_cov = n / (n + nu) (eq. 4)."""
    return n_effective / (n_effective + nu)


def uncertainty_reliability(sigma: float, sigma_ref: float = 8.3333) -> float:
    """rho_unc = 1 / (1 + sigma / sigma_ref) (eq. 4)."""
    return 1.0 / (1.0 + sigma / sigma_ref)


def bounded_weight(
    rank: float,
    rho_cov: float,
    rho_unc: float,
    valid: bool,
    progress: bool,
    s: WeightSettings = WeightSettings(),
) -> float:
    """q_h = v_h min{q_max, q_min + (q_max - q_min) r rho_cov rho_unc + lambda_p p_h} (eq. 5)."""
    if not valid:
        return 0.0
    return min(
        s.q_max, s.q_min + (s.q_max - s.q_min) * rank * rho_cov * rho_unc + s.lambda_p * float(progress)
    )


@dataclass(frozen=True)
class HypothesisWeight:
    """Eq. 3-5 for one hypothesis. ``q`` is None when unknown (no assessment or no effective comparison)."""

    hypothesis: str
    stratum: str
    mu: float
    sigma: float
    n_effective: int
    s: float
    rank: float | None
    rho_cov: float
    rho_unc: float
    valid: bool | None  # v_h; None = unknown
    progress: bool | None  # p_h; None = no Progress judgement recorded
    q: float | None
    status: Literal["scored", "invalid", "unknown"]


def default_stratum(h: HypothesisNode) -> str:
    """Default stratum S: hypotheses of the same domain and round."""
    return f"{h.domain}/round{h.round}"


def hypothesis_weights(
    ratings: Mapping[str, HypothesisRating],
    assessments: Iterable[Assessment],
    hypotheses: Mapping[str, HypothesisNode] | None = None,
    settings: WeightSettings = WeightSettings(),
    stratum: Callable[[HypothesisNode], str] = default_stratum,
) -> dict[str, HypothesisWeight]:
    """Eq. 3-5 for every rated hypothesis; ranks are taken among valid, scored peers of the same stratum.

    v_h = 1 needs a documented valid assessment, at least one effective comparison and no marginal
    duplicate judgement; a hypothesis with no assessment or no comparison is ``unknown`` (q = None),
    never zero.
    """
    by_h = merge_assessments(assessments)
    nodes = hypotheses or {}
    strata: dict[str, str] = {h: stratum(nodes.get(h) or HypothesisNode(h)) for h in ratings}
    scores = {h: conservative_score(r.mu, r.sigma, settings.kappa) for h, r in ratings.items()}
    invalid = {h for h, a in by_h.items() if not a.valid or a.marginal_duplicate or a.progress == "duplicate"}
    known = {h for h, r in ratings.items() if r.n_effective > 0 and h in by_h and h not in invalid}
    peers: dict[str, list[float]] = defaultdict(list)
    for h in known:
        peers[strata[h]].append(scores[h])
    for v in peers.values():
        v.sort()
    out: dict[str, HypothesisWeight] = {}
    for h, r in ratings.items():
        got = by_h.get(h)
        progress = (
            None
            if got is None or got.progress is None
            else got.progress in ("substantive_progress", "necessary_repair")
        )
        rc = coverage_reliability(r.n_effective, settings.nu)
        ru = uncertainty_reliability(r.sigma, settings.sigma_ref)
        unknown = HypothesisWeight(
            h,
            strata[h],
            r.mu,
            r.sigma,
            r.n_effective,
            scores[h],
            None,
            rc,
            ru,
            None,
            progress,
            None,
            "unknown",
        )
        if h in invalid:
            out[h] = replace(unknown, valid=False, q=0.0, status="invalid")
        elif h not in known:
            out[h] = unknown
        else:
            rank = tie_aware_rank(scores[h], peers[strata[h]], presorted=True)
            q = bounded_weight(rank, rc, ru, True, bool(progress), settings)
            out[h] = replace(unknown, rank=rank, valid=True, q=q, status="scored")
    return out


def merge_assessments(assessments: Iterable[Assessment]) -> dict[str, Assessment]:
    """One assessment per hypothesis: invalid or duplicate anywhere wins; the most informative progress is kept."""
    by_h: dict[str, Assessment] = {}
    for a in assessments:
        prev = by_h.get(a.hypothesis)
        if prev is None:
            by_h[a.hypothesis] = a
        else:
            by_h[a.hypothesis] = Assessment(
                a.hypothesis,
                valid=prev.valid and a.valid,
                marginal_duplicate=prev.marginal_duplicate or a.marginal_duplicate,
                progress=_merge_progress(prev.progress, a.progress),
            )
    return by_h


def _merge_progress(a: ProgressLabel | None, b: ProgressLabel | None) -> ProgressLabel | None:
    order = {
        None: 0,
        "insufficient_evidence": 1,
        "substantive_progress": 2,
        "necessary_repair": 2,
        "duplicate": 3,
    }
    return a if order[a] >= order[b] else b
