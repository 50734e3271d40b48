"""Every decision of the retained-pair protocol as a pure function of records and declared thresholds.

Selection (eq. 7), admission of imagined trajectories (eq. 8), reliability (eq. 10), the adaptation
trigger (eq. 11), component gates (eq. 13–14), assembly (eq. 15–16), the pair gate (eq. 17),
retention (eq. 18), disjoint data splits and budget fit. Each returns a frozen record whose
``to_event()`` holds its inputs, thresholds and outcome, so a decision can be recomputed later with
other thresholds without re-running anything.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

from pydantic import Field

from rsi_workbench.config import StrictModel
from rsi_workbench.protocol.metrics import (
    METRICS_VERSION,
    brier,
    ece,
    gaussian_nll,
    mean_abs_z,
    mean_absolute_error,
)

Reliability = Literal["reliable", "unreliable", "insufficient"]
Score = Literal["brier", "gaussian_nll"]
"""The proper score gates compare: 5-class Brier for class readouts, Gaussian NLL for regression ones."""


def derive_seed(*parts: object) -> int:
    """A stable 63-bit seed from any parts (same on every machine and every resume)."""
    h = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(h[:8], "big") >> 1


def derive_rng(*parts: object) -> random.Random:
    return random.Random(derive_seed(*parts))


# --------------------------------------------------------------------------------------------
# Selection (eq. 7) and admission (eq. 8)
# --------------------------------------------------------------------------------------------
class UtilitySpec(StrictModel):
    """w_d,j of eq. 7 and the optional uncertainty penalty Δ_d = λ_d U(u_τ)."""

    weights: dict[str, float] = Field(
        default_factory=lambda: {"p_all_pass": 1.0, "pass_fraction": 0.25},
        description="utility weights w_d,j by utility-term name (code repair: 1.0 and 0.25)",
    )
    uncertainty_penalty: float = Field(default=0.0, ge=0.0, description="λ_d; 0 disables Δ_d")


def utility(terms: Mapping[str, float], spec: UtilitySpec, uncertainty: float | None = None) -> float:
    """R_d(τ̂) = Σ_j w_d,j r_τ,j − λ_d U(u_τ) (eq. 7); a missing term is an error, not a zero."""
    missing = [k for k in spec.weights if k not in terms]
    if missing:
        raise KeyError(f"utility terms {missing} missing from prediction terms {sorted(terms)}")
    r = sum(w * float(terms[k]) for k, w in spec.weights.items())
    if spec.uncertainty_penalty and uncertainty is not None:
        r -= spec.uncertainty_penalty * float(uncertainty)
    return r


@dataclass(frozen=True)
class ScoredCandidate:
    """One candidate as selection sees it: validity v_τ, predicted utility R_d, uncertainty, cost."""

    index: int
    valid: bool
    reason: str = ""
    utility: float | None = None
    uncertainty: float | None = None
    cost: float = 1.0


class SelectionRule(Protocol):
    """Orders feasible candidates best-first; ``kind`` says whether it is utility ranking or acquisition."""

    name: str
    kind: Literal["utility", "random", "acquisition"]

    def rank(self, candidates: Sequence[ScoredCandidate], rng: random.Random) -> list[int]: ...


class UtilityArgmax:
    """Utility ranking (eq. 7): highest R_d first; ties broken by proposal order."""

    name = "utility_argmax"
    kind: Literal["utility", "random", "acquisition"] = "utility"

    def rank(self, candidates: Sequence[ScoredCandidate], rng: random.Random) -> list[int]:
        if any(c.utility is None for c in candidates):
            raise ValueError("utility_argmax needs a predicted utility for every feasible candidate")
        return [c.index for c in sorted(candidates, key=lambda c: (-(c.utility or 0.0), c.index))]


class RandomK:
    """Random-K: a uniformly random order of the K feasible candidates (ignores predictions)."""

    name = "random_k"
    kind: Literal["utility", "random", "acquisition"] = "random"

    def rank(self, candidates: Sequence[ScoredCandidate], rng: random.Random) -> list[int]:
        order = [c.index for c in candidates]
        rng.shuffle(order)
        return order


class InformationGain:
    """Information-gain acquisition: most uncertain first (reported separately from utility ranking)."""

    name = "info_gain"
    kind: Literal["utility", "random", "acquisition"] = "acquisition"

    def rank(self, candidates: Sequence[ScoredCandidate], rng: random.Random) -> list[int]:
        if any(c.uncertainty is None for c in candidates):
            raise ValueError("info_gain needs an uncertainty for every feasible candidate")
        return [c.index for c in sorted(candidates, key=lambda c: (-(c.uncertainty or 0.0), c.index))]


RULES: dict[str, type[UtilityArgmax] | type[RandomK] | type[InformationGain]] = {
    "utility_argmax": UtilityArgmax,
    "random_k": RandomK,
    "info_gain": InformationGain,
}


def fit_budget(
    order: Sequence[int], costs: Mapping[int, float], remaining: float, batch_size: int
) -> list[int]:
    """Take candidates in ``order`` while their summed cost fits the remaining feedback budget."""
    chosen: list[int] = []
    total = 0.0
    for i in order:
        if len(chosen) >= batch_size:
            break
        if total + costs[i] <= remaining + 1e-12:
            chosen.append(i)
            total += costs[i]
    return chosen


@dataclass(frozen=True)
class SelectionDecision:
    """Which feasible candidate(s) get external feedback, and why."""

    rule: str
    rule_kind: str
    candidates: list[dict[str, Any]]
    removed_invalid: list[int]
    order: list[int]
    selected: list[int]
    budget_remaining: float
    batch_size: int
    outcome: Literal["selected", "no_valid_candidate", "refused_budget"]

    def to_event(self) -> dict[str, Any]:
        return asdict(self)


def select(
    candidates: Sequence[ScoredCandidate],
    rule: SelectionRule,
    *,
    budget_remaining: float,
    rng: random.Random,
    batch_size: int = 1,
) -> SelectionDecision:
    """Remove invalid candidates, rank the rest by ``rule``, and keep what fits the budget (eq. 7)."""
    feasible = [c for c in candidates if c.valid]
    removed = [c.index for c in candidates if not c.valid]
    order = rule.rank(feasible, rng) if feasible else []
    chosen = fit_budget(order, {c.index: c.cost for c in feasible}, budget_remaining, batch_size)
    outcome: Literal["selected", "no_valid_candidate", "refused_budget"]
    outcome = "selected" if chosen else ("no_valid_candidate" if not feasible else "refused_budget")
    return SelectionDecision(
        rule=rule.name,
        rule_kind=rule.kind,
        candidates=[asdict(c) for c in candidates],
        removed_invalid=removed,
        order=order,
        selected=chosen,
        budget_remaining=budget_remaining,
        batch_size=batch_size,
        outcome=outcome,
    )


class AdmissionCriteria(StrictModel):
    """Eq. 8's training admission of imagined trajectories (separate from choosing what to evaluate)."""

    enabled: bool = Field(default=False, description="imagination learning; off ⇒ D_sim is empty")
    min_utility: float = Field(default=0.5, description="r_d^min")
    max_uncertainty: float | None = Field(
        default=None, description="u_d^max for C_d^U; None disables the check"
    )
    allowed_evidence: list[str] = Field(default_factory=lambda: ["E1"], description="E_d^train")


@dataclass(frozen=True)
class AdmissionDecision:
    admitted: bool
    valid: bool
    utility: float | None
    uncertainty: float | None
    evidence: str
    conjuncts: dict[str, bool]

    def to_event(self) -> dict[str, Any]:
        return asdict(self)


def admit_imagined(
    valid: bool, utility_value: float | None, uncertainty: float | None, evidence: str, c: AdmissionCriteria
) -> AdmissionDecision:
    """e_τ = 1{v=1} 1{R ≥ r_min} C^U 1{ℓ ∈ E_train} (eq. 8); always 0 when imagination learning is off."""
    cu = True if c.max_uncertainty is None or uncertainty is None else uncertainty <= c.max_uncertainty
    conj = {
        "enabled": c.enabled,
        "valid": bool(valid),
        "utility_ok": utility_value is not None and utility_value >= c.min_utility,
        "uncertainty_ok": cu,
        "evidence_ok": evidence in c.allowed_evidence,
    }
    return AdmissionDecision(all(conj.values()), bool(valid), utility_value, uncertainty, evidence, conj)


# --------------------------------------------------------------------------------------------
# Reliability (eq. 10) and the adaptation trigger (eq. 11)
# --------------------------------------------------------------------------------------------
class ReliabilityCriteria(StrictModel):
    """Declared criteria of Reliability(W; H_k, K_k) with shipped defaults (all overridable)."""

    min_predictions: int = Field(
        default=20, ge=1, description="below this many evaluated units in scope: insufficient"
    )
    min_groups: int = Field(
        default=3, ge=1, description="below this many distinct tasks covered: insufficient"
    )
    max_brier: float = Field(default=0.25, description="5-class Brier above this: unreliable")
    max_ece: float = Field(default=0.1, description="ECE above this: unreliable")


@dataclass(frozen=True)
class ReliabilityVerdict:
    verdict: Reliability
    version: str
    n_predictions: int
    n_groups: int
    n_excluded_other_versions: int
    metrics: dict[str, float | None]
    criteria: dict[str, Any]
    reasons: list[str]

    def to_event(self) -> dict[str, Any]:
        return asdict(self)


def reliability(
    units: Sequence[tuple[str, str, Sequence[float], int]],
    version: str,
    criteria: ReliabilityCriteria,
    *,
    metrics_version: int = METRICS_VERSION,
) -> ReliabilityVerdict:
    """ρ_k^W ∈ {reliable, unreliable, insufficient} (eq. 10) from (task, version, probs, label) units.

    Only units predicted by ``version`` are attributable to the current predictor; others are
    counted as excluded. Coverage below the declared minimum is *insufficient*, never reliable.
    ECE bins follow ``metrics_version`` (the run's; :mod:`rsi_workbench.metrics`).
    """
    mine = [u for u in units if u[1] == version]
    n, groups = len(mine), len({u[0] for u in mine})
    probs = [list(u[2]) for u in mine]
    labels = [int(u[3]) for u in mine]
    m = {"brier": brier(probs, labels), "ece": ece(probs, labels, version=metrics_version)}
    limits = {"brier": criteria.max_brier, "ece": criteria.max_ece}
    return _verdict(m, limits, n, groups, len(units) - n, version, criteria)


def _verdict(
    metrics: dict[str, float | None],
    limits: Mapping[str, float],
    n: int,
    groups: int,
    excluded: int,
    version: str,
    criteria: ReliabilityCriteria | RegressionReliabilityCriteria,
) -> ReliabilityVerdict:
    """Coverage first (too few units or tasks: insufficient), then each metric against its max."""
    reasons: list[str] = []
    if n < criteria.min_predictions:
        reasons.append(f"{n} evaluated predictions < min_predictions {criteria.min_predictions}")
    if groups < criteria.min_groups:
        reasons.append(f"{groups} tasks covered < min_groups {criteria.min_groups}")
    verdict: Reliability
    if reasons:
        verdict = "insufficient"
    else:
        for name, limit in limits.items():
            v = metrics[name] or 0.0
            if v > limit:
                reasons.append(f"{name} {v:.4f} > max_{name} {limit}")
        verdict = "unreliable" if reasons else "reliable"
    return ReliabilityVerdict(verdict, version, n, groups, excluded, metrics, criteria.model_dump(), reasons)


class RegressionReliabilityCriteria(StrictModel):
    """Declared criteria of Reliability(W; H_k, K_k) for a Gaussian (mean, std) readout."""

    min_predictions: int = Field(
        default=2,
        ge=1,
        description="below this many observed predictions of the current version: insufficient",
    )
    min_groups: int = Field(
        default=1, ge=1, description="below this many distinct tasks covered: insufficient"
    )
    max_mae: float = Field(default=10.0, gt=0, description="mean |y − ŷ| above this: unreliable")
    max_mean_abs_z: float = Field(
        default=2.0, gt=0, description="mean |y − ŷ|/σ̂ above this (overconfident): unreliable"
    )


def regression_reliability(
    units: Sequence[tuple[str, str, float, float, float]],
    version: str,
    criteria: RegressionReliabilityCriteria,
) -> ReliabilityVerdict:
    """ρ_k^W (eq. 10) for a Gaussian readout from (task, version, ŷ, σ̂, y) units.

    As :func:`reliability`: only units predicted by ``version`` count, too few is *insufficient*
    (never reliable); unreliable when the mean absolute error or the mean |z| exceeds its threshold.
    """
    mine = [u for u in units if u[1] == version]
    n, groups = len(mine), len({u[0] for u in mine})
    triples = [(float(u[2]), float(u[3]), float(u[4])) for u in mine]
    m = {
        "mae": mean_absolute_error(triples),
        "mean_abs_z": mean_abs_z(triples),
        "gaussian_nll": gaussian_nll(triples),
    }
    limits = {"mae": criteria.max_mae, "mean_abs_z": criteria.max_mean_abs_z}
    return _verdict(m, limits, n, groups, len(units) - n, version, criteria)


class AdaptationCriteria(StrictModel):
    """When an adaptation attempt u_k^W may happen (eq. 11)."""

    enabled: bool = Field(default=False, description="the adaptation path; off ⇒ u_k^W = 0 always")
    min_examples: int = Field(
        default=20, ge=1, description="D_adapt,k is sufficient with at least this many units"
    )


@dataclass(frozen=True)
class TriggerDecision:
    triggered: bool
    conjuncts: dict[str, bool]
    verdict: str
    n_adapt_examples: int
    budget_remaining: float
    estimated_cost: float
    criteria: dict[str, Any]

    def to_event(self) -> dict[str, Any]:
        return asdict(self)


def adaptation_trigger(
    verdict: Reliability,
    n_adapt_examples: int,
    budget_remaining: float,
    estimated_cost: float,
    criteria: AdaptationCriteria,
) -> TriggerDecision:
    """u_k^W = 1{unreliable} 1{D_adapt sufficient} 1{B_update ≥ ĉ_adapt} (eq. 11), 0 if the path is off."""
    conj = {
        "path_enabled": criteria.enabled,
        "unreliable": verdict == "unreliable",
        "data_sufficient": n_adapt_examples >= criteria.min_examples,
        "budget_sufficient": budget_remaining + 1e-12 >= estimated_cost,
    }
    return TriggerDecision(
        all(conj.values()),
        conj,
        verdict,
        n_adapt_examples,
        budget_remaining,
        estimated_cost,
        criteria.model_dump(),
    )


class PolicyUpdateCriteria(StrictModel):
    """When a policy/workflow update attempt u_k^π may happen (eq. 9); off is the fixed-coder setting."""

    enabled: bool = Field(default=False, description="u_k^π = 0 always when off (the paper's fixed coder)")
    min_records: int = Field(
        default=8, ge=1, description="D_policy,k must hold at least this many observations"
    )
    cost: float = Field(default=1.0, ge=0.0, description="update-compute units charged per update attempt")


@dataclass(frozen=True)
class PolicyTrigger:
    triggered: bool
    conjuncts: dict[str, bool]
    n_records: int
    budget_remaining: float
    criteria: dict[str, Any]

    def to_event(self) -> dict[str, Any]:
        return asdict(self)


def policy_trigger(n_records: int, budget_remaining: float, criteria: PolicyUpdateCriteria) -> PolicyTrigger:
    """u_k^π: the declared schedule (every cycle) with enough learning evidence and budget."""
    conj = {
        "path_enabled": criteria.enabled,
        "data_sufficient": n_records >= criteria.min_records,
        "budget_sufficient": budget_remaining + 1e-12 >= criteria.cost,
    }
    return PolicyTrigger(all(conj.values()), conj, n_records, budget_remaining, criteria.model_dump())


# --------------------------------------------------------------------------------------------
# Gates (eq. 13–17) and retention (eq. 18)
# --------------------------------------------------------------------------------------------
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


class PolicyGateCriteria(StrictModel):
    """Q_π (eq. 13): the proposed policy's best observed utility per gate unit must improve."""

    min_utility_gain: float = Field(
        default=0.0, description="pass needs utility(proposed) − utility(current) > this"
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
        reasons.append(f"utility gain {up - uc:.4f} ≤ min_utility_gain {c.min_utility_gain}")  # type: ignore[operator]
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


# --------------------------------------------------------------------------------------------
# Data splits
# --------------------------------------------------------------------------------------------
class SplitOverlap(AssertionError):
    """Update data, gate data and the audit set share an item."""


def assert_disjoint(**splits: Iterable[Hashable]) -> None:
    """Raise :class:`SplitOverlap` naming both splits and the shared items if any two overlap."""
    sets = {k: set(v) for k, v in splits.items()}
    names = sorted(sets)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            common = sets[a] & sets[b]
            if common:
                shown = sorted(map(str, common))[:5]
                raise SplitOverlap(f"splits {a!r} and {b!r} overlap in {len(common)} item(s), e.g. {shown}")


def split_tasks(task_ids: Sequence[str], gate_fraction: float, seed: int) -> dict[str, list[str]]:
    """Deterministic per-task split into update and gate tasks (the hidden audit lives elsewhere)."""
    ranked = sorted(task_ids, key=lambda t: derive_seed("split", seed, t))
    n_gate = round(len(ranked) * gate_fraction)
    if 0 < gate_fraction and n_gate == 0 and len(ranked) > 1:
        n_gate = 1
    gate = set(ranked[:n_gate])
    return {"update": [t for t in task_ids if t not in gate], "gate": [t for t in task_ids if t in gate]}


def observation_split(cycle: int, gate_fraction: float) -> Literal["update", "gate"]:
    """Held-out history: which split the observations of ``cycle`` belong to, evenly spaced.

    Cycle k is gate data iff ⌊k·f⌋ > ⌊(k−1)·f⌋ (f = 0.25: cycles 4, 8, 12, …); the same for every
    method and seed, so matched runs hold out the same rounds.
    """
    if not 0.0 <= gate_fraction < 1.0:
        raise ValueError(f"gate_fraction must be in [0, 1), got {gate_fraction}")
    return (
        "gate"
        if math.floor(cycle * gate_fraction + 1e-12) > math.floor((cycle - 1) * gate_fraction + 1e-12)
        else "update"
    )


def initial_design_select(
    candidates: Sequence[ScoredCandidate],
    *,
    seed: int,
    cycle: int,
    task_id: str,
    budget_remaining: float,
    batch_size: int = 1,
) -> SelectionDecision:
    """A space-filling start: uniform random choice among the feasible candidates, ignoring every
    prediction, from an rng that depends only on (seed, cycle, task) — so every method of one seed
    that proposes the same candidates runs the same initial experiments."""
    return select(
        candidates,
        RandomK(),
        budget_remaining=budget_remaining,
        rng=derive_rng(seed, "initial_design", cycle, task_id),
        batch_size=batch_size,
    )
