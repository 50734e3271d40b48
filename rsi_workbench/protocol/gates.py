"""Which pair is retained: component gates (eq. 13–14), assembly (eq. 15–16), the pair gate (eq. 17)
and retention with asymmetric rollback (eq. 18).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from pydantic import Field

from rsi_workbench.config import StrictModel

Score = Literal["brier", "gaussian_nll"]
"""The proper score gates compare: 5-class Brier for class readouts, Gaussian NLL for regression ones."""


class PredictorGateCriteria(StrictModel):
    """Q_W (eq. 14): the proposed predictor must improve its proper score and not lose ranking accuracy.

    ``score`` names the proper score: ``brier`` (5-class, class readouts) or ``gaussian_nll``
    (regression readouts); ``min_brier_gain`` is the required gain in that score.
    """

    score: Score = Field(default="brier", description="proper score the gate compares")

    min_brier_gain: float = Field(
        default=0.0, description="pass needs brier(current) − brier(proposed) > this"
    )
    max_ranking_drop: float = Field(
        default=0.0, description="pass needs ranking(current) − ranking(proposed) ≤ this"
    )


TieBreak = Literal["none", "fewer_actions"]


class PolicyGateCriteria(StrictModel):
    """Q_π (eq. 13): the proposed policy's best observed utility per gate unit must improve.

    ``tie_break: fewer_actions`` (opt-in) also passes a proposed policy whose utility ties the
    current one's (within ``tie_tolerance``) when it reaches its best action with fewer actions:
    ``actions_to_best``, per gate unit the 1-based position in the policy's proposal order of the
    first proposal that attains the unit's best observed utility, averaged over units, must fall.
    """

    min_utility_gain: float = Field(
        default=0.0, description="pass needs utility(proposed) − utility(current) > this"
    )
    tie_break: TieBreak = Field(
        default="none",
        description="none: the utility gain alone decides; fewer_actions: a tie in utility (|gain| ≤ "
        "tie_tolerance) passes when the proposed policy's actions_to_best is lower",
    )
    tie_tolerance: float = Field(
        default=1e-9, ge=0, description="|utility gain| at or below this counts as a tie (tie_break only)"
    )


class PairGateCriteria(StrictModel):
    """Q_pair (eq. 17): the assembled pair's decisions must not lose utility, nor its predictor fit.

    ``max_brier_increase`` bounds the increase of the declared ``score`` (Brier or Gaussian NLL).
    """

    score: Score = Field(default="brier", description="proper score the gate compares")

    max_utility_drop: float = Field(
        default=0.0, description="pass needs utility(current) − utility(assembled) ≤ this"
    )
    max_brier_increase: float = Field(
        default=0.0, description="pass needs brier(assembled) − brier(current) ≤ this"
    )


@dataclass(frozen=True)
class GateDecision:
    """One gate's verdict with the metrics it saw and its thresholds."""

    gate: Literal["policy", "predictor", "pair"]
    passed: bool
    skipped: bool
    current: dict[str, float | None]
    proposed: dict[str, float | None]
    thresholds: dict[str, Any]
    reasons: list[str]
    n_units: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_event(self) -> dict[str, Any]:
        return asdict(self)


def _missing(*vals: float | None) -> bool:
    return any(v is None or (isinstance(v, float) and math.isnan(v)) for v in vals)


def predictor_gate(
    current: Mapping[str, float | None],
    proposed: Mapping[str, float | None],
    c: PredictorGateCriteria,
    n_units: int,
) -> GateDecision:
    """G_k^W (eq. 14) on gate data: Brier must improve and ranking accuracy must not fall."""
    reasons: list[str] = []
    sc = c.score
    bc, bp = current.get(sc), proposed.get(sc)
    rc, rp = current.get("ranking_accuracy"), proposed.get("ranking_accuracy")
    if _missing(bc, bp):
        reasons.append(f"no gate units with observed outcomes: cannot show a {sc} improvement")
    elif not (bc - bp > c.min_brier_gain):  # type: ignore[operator]
        reasons.append(f"{sc} gain {bc - bp:.4f} ≤ min_brier_gain {c.min_brier_gain}")  # type: ignore[operator]
    if not _missing(rc, rp) and rc - rp > c.max_ranking_drop:  # type: ignore[operator]
        reasons.append(f"ranking drop {rc - rp:.4f} > max_ranking_drop {c.max_ranking_drop}")  # type: ignore[operator]
    return GateDecision(
        "predictor", not reasons, False, dict(current), dict(proposed), c.model_dump(), reasons, n_units
    )


def policy_gate(
    current: Mapping[str, float | None],
    proposed: Mapping[str, float | None],
    c: PolicyGateCriteria,
    n_units: int,
) -> GateDecision:
    """G_k^π (eq. 13) on gate data: mean best observed utility per unit must improve."""
    reasons: list[str] = []
    uc, up = current.get("utility"), proposed.get("utility")
    if _missing(uc, up):
        reasons.append("no gate units: cannot show a utility improvement")
    elif not (up - uc > c.min_utility_gain):  # type: ignore[operator]
        gain = up - uc  # type: ignore[operator]
        ac, ap = current.get("actions_to_best"), proposed.get("actions_to_best")
        tie = c.tie_break == "fewer_actions" and abs(gain) <= c.tie_tolerance
        if tie and not _missing(ac, ap) and ap < ac:  # type: ignore[operator]
            extra = {"tie_break": f"utility tie ({gain:.4f}); actions_to_best {ac:.3f} → {ap:.3f}"}
            return GateDecision(
                "policy", True, False, dict(current), dict(proposed), c.model_dump(), [], n_units, extra
            )
        reasons.append(f"utility gain {gain:.4f} ≤ min_utility_gain {c.min_utility_gain}")
        if tie:
            reasons.append(f"tie not broken: actions_to_best {ac} → {ap} is not fewer")
    return GateDecision(
        "policy", not reasons, False, dict(current), dict(proposed), c.model_dump(), reasons, n_units
    )


@dataclass(frozen=True)
class Assembly:
    """θ̄_{k+1}, φ̄_{d,k+1} of eq. 15–16: which proposed components enter the pair evaluation."""

    policy_changed: bool
    predictor_changed: bool
    inputs: dict[str, bool]

    @property
    def anything_changed(self) -> bool:
        return self.policy_changed or self.predictor_changed

    def to_event(self) -> dict[str, Any]:
        return {**asdict(self), "anything_changed": self.anything_changed}


def assemble(u_pi: bool, g_pi: bool | None, u_w: bool, g_w: bool | None) -> Assembly:
    """Eq. 15–16: a component enters the pair only when attempted and its component gate passed;
    a failed component gate keeps that component's current version (asymmetric failure)."""
    return Assembly(
        bool(u_pi and g_pi),
        bool(u_w and g_w),
        {"u_pi": u_pi, "G_pi": bool(g_pi), "u_W": u_w, "G_W": bool(g_w)},
    )


def pair_gate_skipped() -> GateDecision:
    """G_k^pair = 1 with no new evaluation when neither component changed (eq. 17)."""
    return GateDecision("pair", True, True, {}, {}, {}, ["nothing changed: G_pair = 1, no evaluation"], 0)


def pair_gate(
    current: Mapping[str, float | None],
    assembled: Mapping[str, float | None],
    c: PairGateCriteria,
    n_units: int,
    signatures_matched: bool,
) -> GateDecision:
    """G_k^pair (eq. 17): the assembled pair vs the current pair on compatibility data under matched
    conditions; decision utility must not drop and predictor fit on its own proposals must not worsen."""
    if not signatures_matched:
        raise AssertionError("pair gate compared pairs under different state signatures")
    reasons: list[str] = []
    uc, ua = current.get("utility"), assembled.get("utility")
    sc = c.score
    bc, ba = current.get(sc), assembled.get(sc)
    if _missing(uc, ua):
        reasons.append("no compatibility units")
    elif uc - ua > c.max_utility_drop:  # type: ignore[operator]
        reasons.append(f"utility drop {uc - ua:.4f} > max_utility_drop {c.max_utility_drop}")  # type: ignore[operator]
    if not _missing(bc, ba) and ba - bc > c.max_brier_increase:  # type: ignore[operator]
        reasons.append(f"{sc} increase {ba - bc:.4f} > max_brier_increase {c.max_brier_increase}")  # type: ignore[operator]
    return GateDecision(
        "pair",
        not reasons,
        False,
        dict(current),
        dict(assembled),
        c.model_dump(),
        reasons,
        n_units,
        {"signatures_matched": True},
    )


@dataclass(frozen=True)
class RetainDecision:
    """(θ_{k+1}, φ_{d,k+1}) of eq. 18 as versions, with what was proposed and what was kept."""

    policy_version: str
    predictor_version: str | None
    proposed_policy_version: str | None
    proposed_predictor_version: str | None
    pair_passed: bool
    rolled_back: bool

    def to_event(self) -> dict[str, Any]:
        return asdict(self)


def retain(
    current: tuple[str, str | None],
    assembled: tuple[str, str | None],
    pair: GateDecision,
    proposed: tuple[str | None, str | None] = (None, None),
) -> RetainDecision:
    """Eq. 18: keep the assembled pair if G_pair = 1, otherwise roll back *both* to the current pair."""
    keep = assembled if pair.passed else current
    return RetainDecision(
        keep[0], keep[1], proposed[0], proposed[1], pair.passed, (not pair.passed) and assembled != current
    )
