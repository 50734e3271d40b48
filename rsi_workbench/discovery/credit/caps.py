"""Eq. 7: duplicate suppression, local and global family caps, and trajectory weights w.

Proposition 1 (allocation <= q~_h, family totals <= C_glob, w in [0, W_max]) holds by construction.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from rsi_workbench.discovery.credit.inputs import HypothesisNode


@dataclass(frozen=True)
class CappedWeight:
    """q~_h: q after duplicate suppression and the local then global family budgets."""

    hypothesis: str
    q: float
    q_tilde: float
    suppressed_duplicate_of: str | None
    local_scale: float
    global_scale: float


def family_caps(
    q: Mapping[str, float], hypotheses: Mapping[str, HypothesisNode], c_loc: float = 2.0, c_glob: float = 2.0
) -> dict[str, CappedWeight]:
    """Suppress repeated registrations (same ``duplicate_key``; the earliest keeps credit), then scale each
    local lineage family to total <= C_loc and each global scientific family to total <= C_glob."""
    nodes = {h: hypotheses.get(h) or HypothesisNode(h) for h in q}
    first: dict[str, str] = {}
    dup_of: dict[str, str | None] = {}
    for h in sorted(q, key=lambda h: (nodes[h].created_at, h)):
        key = nodes[h].duplicate_key
        if key is not None and key in first:
            dup_of[h] = first[key]
        else:
            dup_of[h] = None
            if key is not None:
                first[key] = h
    q0 = {h: (0.0 if dup_of[h] else max(0.0, v)) for h, v in q.items()}
    loc_tot: dict[str, float] = defaultdict(float)
    for h, v in q0.items():
        loc_tot[nodes[h].loc] += v
    loc_scale = {f: (min(1.0, c_loc / t) if t > 0 else 1.0) for f, t in loc_tot.items()}
    q1 = {h: v * loc_scale[nodes[h].loc] for h, v in q0.items()}
    glob_tot: dict[str, float] = defaultdict(float)
    for h, v in q1.items():
        glob_tot[nodes[h].glob] += v
    glob_scale = {f: (min(1.0, c_glob / t) if t > 0 else 1.0) for f, t in glob_tot.items()}
    return {
        h: CappedWeight(
            h,
            q[h],
            q1[h] * glob_scale[nodes[h].glob],
            dup_of[h],
            loc_scale[nodes[h].loc],
            glob_scale[nodes[h].glob],
        )
        for h in q
    }


def trajectory_weights(
    alpha: Mapping[str, Mapping[str, float]], q_tilde: Mapping[str, float], w_max: float = 2.0
) -> tuple[dict[str, float], dict[tuple[str, str], float]]:
    """b_ih = alpha_ih q~_h and w_i = min(W_max, sum_h b_ih) (eq. 7); returns (w, b)."""
    b: dict[tuple[str, str], float] = {}
    total: dict[str, float] = defaultdict(float)
    for h, shares in alpha.items():
        qt = q_tilde.get(h, 0.0)
        for i, a in shares.items():
            b[(i, h)] = a * qt
            total[i] += a * qt
    return {i: min(w_max, v) for i, v in total.items()}, b
