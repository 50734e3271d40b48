"""Which candidate spends scarce external feedback: utility (eq. 7), selection rules, budget fit,
the initial design, and the admission of imagined trajectories for training (eq. 8).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

from pydantic import Field

from rsi_workbench.config import StrictModel
from rsi_workbench.protocol.seeds import derive_rng


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
    """Orders feasible candidates best-first; ``kind`` says whether it is utility ranking or acquisition.

    Pass one to ``Loop.open(..., rule=MyRule())`` or name it ``protocol.rule: pkg.mod:MyRule``
    (:func:`resolve_rule`). Example (upper confidence bound)::

        class UCB:
            name, kind = "ucb", "acquisition"

            def rank(self, candidates, rng):
                score = lambda c: (c.utility or 0.0) + 2.0 * (c.uncertainty or 0.0)
                return [c.index for c in sorted(candidates, key=lambda c: (-score(c), c.index))]
    """

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

RULE_KINDS = ("utility", "random", "acquisition")


def resolve_rule(rule: str | SelectionRule) -> SelectionRule:
    """A selection rule from one of the :data:`RULES` names, an import path ``pkg.mod:Name`` (a
    class, instantiated without arguments, or an instance), or a rule object itself.

    A rule of one's own needs ``name``, ``kind`` (one of :data:`RULE_KINDS`) and
    ``rank(candidates, rng) -> list[int]`` (feasible candidate indices, best first). Example::

        class LowestCost:
            name, kind = "lowest_cost", "utility"

            def rank(self, candidates, rng):
                return [c.index for c in sorted(candidates, key=lambda c: (c.cost, c.index))]
    """
    from rsi_workbench.plugins import PluginError, import_object

    obj: Any = rule
    if isinstance(rule, str):
        if rule in RULES:
            return RULES[rule]()
        try:
            obj = import_object(rule)
        except PluginError as e:
            raise ValueError(f"selection rule {e}") from None
        obj = obj() if isinstance(obj, type) else obj
    missing = [a for a in ("name", "kind", "rank") if not hasattr(obj, a)]
    if missing:
        raise TypeError(f"selection rule {obj!r} lacks {missing} (a SelectionRule has name, kind, rank)")
    if obj.kind not in RULE_KINDS:
        raise ValueError(f"selection rule {obj.name!r}: kind {obj.kind!r} is not one of {RULE_KINDS}")
    return obj  # type: ignore[no-any-return]


def rule_provenance(rule: SelectionRule) -> dict[str, str]:
    """What a run records of the rule it used: name, kind and the import path of its class."""
    from rsi_workbench.plugins import object_path

    return {"name": str(rule.name), "kind": str(rule.kind), "class": object_path(rule)}


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


@dataclass
class Selection:
    """The loop's selection collaborator: which candidates of one proposal spend external feedback
    (eq. 7) and which imagined ones are admitted for training (eq. 8), under the declared rule,
    utility weights, admission criteria, batch size and initial design — each a parameter here
    (``ProtocolSettings.rule``, ``.utility``, ``.admission``, ``.batch_size``, ``.initial_design``).
    Its methods are the pure decisions of this module applied with those parameters."""

    rule: SelectionRule
    utility_spec: UtilitySpec = field(default_factory=UtilitySpec)
    admission: AdmissionCriteria = field(default_factory=lambda: AdmissionCriteria())
    batch_size: int = 1
    initial_design: int = 0

    def predicted_utility(self, terms: Mapping[str, float], uncertainty: float | None) -> float:
        """R_d of a prediction's utility terms less the uncertainty penalty (eq. 7)."""
        return utility(terms, self.utility_spec, uncertainty)

    def in_initial_design(self, cycle: int) -> bool:
        return cycle <= self.initial_design

    def choose(
        self, candidates: Sequence[ScoredCandidate], *, seed: int, cycle: int, task_id: str, budget: float
    ) -> SelectionDecision:
        """The initial design's random pick in the first cycles, else the rule under ``budget``."""
        if self.in_initial_design(cycle):
            return initial_design_select(
                candidates,
                seed=seed,
                cycle=cycle,
                task_id=task_id,
                budget_remaining=budget,
                batch_size=self.batch_size,
            )
        return select(
            candidates,
            self.rule,
            budget_remaining=budget,
            rng=derive_rng(seed, "select", cycle, task_id),
            batch_size=self.batch_size,
        )

    def rank_unbounded(
        self, candidates: Sequence[ScoredCandidate], *, seed: int, cycle: int, task_id: str
    ) -> SelectionDecision:
        """The rule's pick with no budget limit and batch 1 (what a gate measures a pair's decisions by)."""
        return select(
            candidates,
            self.rule,
            budget_remaining=float("inf"),
            rng=derive_rng(seed, "select", cycle, task_id),
        )

    def admit(
        self, valid: bool, utility_value: float | None, uncertainty: float | None, evidence: str
    ) -> AdmissionDecision:
        """Eq. 8 under the declared admission criteria."""
        return admit_imagined(valid, utility_value, uncertainty, evidence, self.admission)
