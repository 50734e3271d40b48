"""Eq. 9: training weights omega, frozen once into a :class:`TrainingRelease` for ``sft.py``."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from rsi_workbench.discovery.credit.inputs import TrajectoryNode


@dataclass(frozen=True)
class TrainingRelease:
    """Frozen eq. 9 weights: omega_i per trajectory, with the eta and group denominators it used."""

    omega: Mapping[str, float]
    eta: Mapping[str, float]
    groups_per_domain: Mapping[str, int]
    group_totals: Mapping[str, float]  # "domain/group" -> sum of w in that group

    def to_json(self) -> dict[str, object]:
        return {
            "omega": dict(self.omega),
            "eta": dict(self.eta),
            "groups_per_domain": dict(self.groups_per_domain),
            "group_totals": dict(self.group_totals),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, object]) -> TrainingRelease:
        return cls(
            dict(d["omega"]),  # type: ignore[call-overload]
            dict(d["eta"]),  # type: ignore[call-overload]
            dict(d["groups_per_domain"]),  # type: ignore[call-overload]
            dict(d["group_totals"]),  # type: ignore[call-overload]
        )


def training_weights(
    w: Mapping[str, float],
    trajectories: Mapping[str, TrajectoryNode],
    eta: Mapping[str, float] | None = None,
) -> TrainingRelease:
    """omega_i = eta_d/|G_d| * w_i / sum_{k in (d, g)} w_k (eq. 9), frozen once for a training release.

    Only trajectories with w_i > 0 enter; ``eta`` defaults to uniform over the domains present and must
    sum to 1. The result is never renormalized per minibatch.
    """
    live = {i: v for i, v in w.items() if v > 0.0}
    for i in live:
        if i not in trajectories:
            raise ValueError(f"trajectory weight for unknown trajectory {i!r}")
    domains = sorted({trajectories[i].domain for i in live})
    if eta is None:
        eta = {d: 1.0 / len(domains) for d in domains} if domains else {}
    else:
        if not math.isclose(sum(eta.values()), 1.0, abs_tol=1e-9):
            raise ValueError(
                f"eta: domain coefficients must sum to 1; got {sum(eta.values())} from {dict(eta)}"
            )
        missing = [d for d in domains if d not in eta]
        if missing:
            raise ValueError(f"eta: no coefficient for domain(s) {missing}; allowed keys: {sorted(eta)}")
    group_tot: dict[tuple[str, str], float] = defaultdict(float)
    for i, v in live.items():
        t = trajectories[i]
        group_tot[(t.domain, t.group)] += v
    n_groups: dict[str, int] = defaultdict(int)
    for d, _g in group_tot:
        n_groups[d] += 1
    omega = {}
    for i, v in live.items():
        t = trajectories[i]
        omega[i] = eta[t.domain] / n_groups[t.domain] * v / group_tot[(t.domain, t.group)]
    return TrainingRelease(
        omega, dict(eta), dict(n_groups), {f"{d}/{g}": tot for (d, g), tot in group_tot.items()}
    )
