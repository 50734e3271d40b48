"""Tabular hypotheses "feature group X adds information about outcome Y beyond baseline B".

:func:`hypothesis_content` writes (c, π, d, a) for a plan; :func:`restart_spec`,
:func:`evolve_spec`, :func:`repair_spec` and :func:`crossover_spec` are the seeded, deterministic
operators the built-in Generation and Evolution roles use; :func:`spec_defects` names what a
repair should fix. Everything is plain data (dicts) so the discovery engine validates it.
"""

from __future__ import annotations

import random
from typing import Any

from rsi_workbench.domains.tabular.analysis import CONTROLS, AnalysisSpec
from rsi_workbench.domains.tabular.catalog import NOISE_GROUP, Direction, direction

# the closest recorded measurement a repair substitutes for data the cohort lacks
PROXIES = {
    "brca_status": "concave_points",
    "patient_age": "texture",
    "hba1c": "glucose",
    "medication": "bp",
}
_CONTROL_TEXT = {
    "permutation": "permutation control: refit B + X with X shuffled across patients",
    "added_alone": "added-alone control: fit X without B (no information vs. redundant with B)",
}
_METRIC_TEXT = {"auc": "AUC", "r2": "R²"}


def _names(groups: tuple[str, ...]) -> str:
    return " + ".join(g.replace("_", " ") for g in groups) or "nothing"


def hypothesis_content(spec: AnalysisSpec) -> dict[str, Any]:
    """Claim, plan, decision criteria (fixed before results) and alternatives for a plan."""
    d = direction(spec.direction)
    m = _METRIC_TEXT[d.metric]
    pct = f"{spec.interval:.0%}"
    unavailable = [g for g in spec.required_groups() if not d.available(g)] + list(spec.deferred)
    return {
        "claim": {
            "population": d.population,
            "scope": f"{d.outcome_text}, patients with {_names(spec.baseline)} recorded",
            "observable": f"held-out {m} of {d.outcome_text} from out-of-fold predictions",
            "uncertainty": f"whether {_names(spec.added)} carry information about {d.outcome_text} "
            f"beyond {_names(spec.baseline)}",
            "statement": f"{_names(spec.added)} add information about {d.outcome_text} beyond a "
            f"baseline of {_names(spec.baseline)}",
        },
        "plan": {
            "data": [f"{d.dataset}: {d.describe(g)}" for g in spec.required_groups()],
            "comparison": f"B = model on {_names(spec.baseline)} vs B + X = the same model adding "
            f"{_names(spec.added)}; same patients, same folds",
            "controls": [_CONTROL_TEXT[c] for c in spec.controls],
            "analysis": f"nested cross-validation: {spec.outer_folds} fixed patient-level outer folds "
            f"(split seed {spec.split_seed}), inner {spec.inner_folds}-fold tuning of the regularisation; "
            f"Δ{m} of pooled out-of-fold predictions with a paired patient bootstrap "
            f"({spec.n_bootstrap} resamples) {pct} interval",
            "dependencies": [f"{g}: {d.describe(g)}" for g in unavailable],
            "spec": spec.to_dict(),
        },
        "criteria": {
            "supports": f"the lower bound of the {pct} interval of Δ{m} exceeds {spec.threshold}",
            "weakens": f"the upper bound of the {pct} interval of Δ{m} is below {spec.threshold}",
            "inconclusive": f"the {pct} interval of Δ{m} contains {spec.threshold}",
            "metric": d.metric,
            "threshold": spec.threshold,
            "interval": spec.interval,
        },
        "alternatives": {
            "competing": [
                "the gain is chance or overfitting of the larger model",
                f"{_names(spec.added)} only mirror information already in {_names(spec.baseline)}",
            ],
            "confounders": [f"{_names(spec.baseline)} (adjusted for by the baseline model)"]
            + ["acquisition or site differences the cohort does not record"],
            "measurement_limits": [f"single cohort ({d.dataset}); no external validation"]
            + [f"{g} is not recorded (kept as a dependency)" for g in unavailable],
            "discriminating": [_CONTROL_TEXT[c] for c in spec.controls],
        },
    }


def data_summary(name: str, groups: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """What the Generation role's ``inspect_data`` tool returns: availability and columns per group
    (every recorded group when ``groups`` is empty)."""
    d = direction(name)
    groups = list(groups) or list(d.groups)
    return {
        "direction": name,
        "population": d.population,
        "metric": d.metric,
        "groups": {
            g: {"available": d.available(g), "columns": d.columns([g]) if d.available(g) else []}
            for g in groups
        },
        "unavailable": dict(d.unavailable),
    }


def _candidates(d: Direction, exclude: set[str]) -> list[str]:
    return [g for g in d.groups if g not in exclude]


def control_spec(name: str) -> AnalysisSpec:
    """The deliberate control: pure-noise columns "adding information" beyond the first baseline."""
    d = direction(name)
    return AnalysisSpec(name, d.baselines[0], (NOISE_GROUP,), threshold=d.threshold)


def restart_spec(
    name: str,
    rng: random.Random,
    tried: set[tuple[tuple[str, ...], tuple[str, ...]]],
    *,
    unavailable_rate: float,
    missing_control_rate: float = 0.35,
) -> AnalysisSpec:
    """A new question in a direction: an untried added group beyond one of the candidate baselines."""
    d = direction(name)
    baseline = rng.choice(d.baselines)
    if d.unavailable and rng.random() < unavailable_rate:
        added: tuple[str, ...] = (rng.choice(sorted(d.unavailable)),)
    else:
        options = [g for g in _candidates(d, set(baseline)) if (baseline, (g,)) not in tried]
        added = (rng.choice(options or _candidates(d, set(baseline))),)
    controls: tuple[str, ...] = CONTROLS
    if rng.random() < missing_control_rate:
        controls = (rng.choice(CONTROLS),)
    return AnalysisSpec(name, baseline, added, threshold=d.threshold, controls=controls)


def evolve_spec(parent: AnalysisSpec, rng: random.Random, avoid: set[str]) -> tuple[AnalysisSpec, str]:
    """Develop a version: extend or swap X, narrow a combined X, or test X beyond a stronger baseline.

    ``avoid`` holds the plans (as :func:`spec_key`) of the lineage; the role tries not to repeat them.
    """
    d = direction(parent.direction)
    used = set(parent.baseline) | set(parent.added)
    moves: list[tuple[AnalysisSpec, str]] = []
    for g in _candidates(d, used):
        moves.append((_replace(parent, added=parent.added + (g,)), f"extend X with {g}"))
        moves.append(
            (_replace(parent, baseline=parent.baseline + (g,)), f"test X beyond a baseline adding {g}")
        )
        if len(parent.added) == 1:
            moves.append((_replace(parent, added=(g,)), f"swap X for {g}"))
    if len(parent.added) > 1:
        for g in parent.added:
            rest = tuple(x for x in parent.added if x != g)
            moves.append((_replace(parent, added=rest), f"narrow X by dropping {g}"))
    rng.shuffle(moves)
    for spec, why in moves:
        if spec_key(spec) not in avoid:
            return spec, why
    return moves[0] if moves else (parent, "no change possible")


def repair_spec(parent: AnalysisSpec, defects: list[str]) -> tuple[AnalysisSpec, list[str]]:
    """Fix recorded defects: substitute a proxy for unavailable data (kept as a deferred dependency),
    add missing controls, remove baseline/added overlap."""
    d = direction(parent.direction)
    spec, changes = parent, []
    if "unavailable_data" in defects:
        missing = [g for g in spec.required_groups() if not d.available(g)]
        used = set(spec.baseline) | set(spec.added)
        added = [g for g in spec.added if d.available(g)]
        for g in missing:
            proxy = PROXIES.get(g)
            if proxy is None or proxy in used or not d.available(proxy):
                proxy = next((c for c in _candidates(d, used)), None)
            if proxy is not None:
                added.append(proxy)
                used.add(proxy)
                changes.append(f"substitute {proxy} for unavailable {g} (kept as a deferred dependency)")
        baseline = tuple(g for g in spec.baseline if d.available(g))
        spec = _replace(
            spec, baseline=baseline, added=tuple(added), deferred=tuple(spec.deferred) + tuple(missing)
        )
    if "missing_control" in defects and set(spec.controls) != set(CONTROLS):
        spec = _replace(spec, controls=CONTROLS)
        changes.append("add the missing discriminating control(s)")
    overlap = set(spec.baseline) & set(spec.added)
    if overlap:
        spec = _replace(spec, baseline=tuple(g for g in spec.baseline if g not in overlap))
        changes.append(f"remove {sorted(overlap)} from the baseline")
    return spec, changes


def crossover_spec(parents: list[AnalysisSpec]) -> AnalysisSpec:
    """Combine branches: the union of the parents' added groups beyond their common-or-union baseline."""
    added = tuple(dict.fromkeys(g for p in parents for g in p.added))
    baseline = tuple(dict.fromkeys(g for p in parents for g in p.baseline if g not in added))
    controls = tuple(c for c in CONTROLS if any(c in p.controls for p in parents))
    deferred = tuple(dict.fromkeys(g for p in parents for g in p.deferred))
    return _replace(
        parents[0],
        baseline=baseline,
        added=added,
        controls=controls,
        threshold=min(p.threshold for p in parents),
        deferred=deferred,
    )


def spec_defects(spec: AnalysisSpec, status: str | None = None) -> list[str]:
    """Defects a repair can fix: unavailable required data, a missing control, a failed execution."""
    d = direction(spec.direction)
    out = []
    if any(not d.available(g) for g in spec.required_groups()):
        out.append("unavailable_data")
    if set(spec.controls) != set(CONTROLS):
        out.append("missing_control")
    if status == "failed":
        out.append("execution_failed")
    return out


def spec_key(spec: AnalysisSpec) -> str:
    """What the analysis *is* (direction, baseline set, added set, controls) — for duplicate checks."""
    return "|".join(
        [
            spec.direction,
            ",".join(sorted(spec.baseline)),
            ",".join(sorted(spec.added)),
            ",".join(sorted(spec.controls)),
        ]
    )


def _replace(spec: AnalysisSpec, **kw: Any) -> AnalysisSpec:
    from dataclasses import replace

    return replace(spec, **kw)


def validate_spec(spec: dict[str, Any]) -> AnalysisSpec:
    """A machine-readable plan from any author (e.g. a model): known direction, groups as lists,
    a positive threshold, known controls. Unknown groups are allowed — they compile to explicit,
    unavailable dependencies."""
    if not isinstance(spec, dict):
        raise ValueError("plan.spec must be a mapping")
    missing = [k for k in ("direction", "baseline", "added", "threshold") if k not in spec]
    if missing:
        raise ValueError(f"plan.spec lacks {missing}")
    direction(str(spec["direction"]))
    known = set(AnalysisSpec.__dataclass_fields__)
    extra = sorted(set(spec) - known)
    if extra:
        raise ValueError(f"plan.spec has unknown key(s) {extra}; allowed: {sorted(known)}")
    for key in ("baseline", "added", "controls", "deferred"):
        if key in spec and not (
            isinstance(spec[key], list | tuple) and all(isinstance(g, str) for g in spec[key])
        ):
            raise ValueError(f"plan.spec.{key} must be a list of group names")
    if not spec["added"]:
        raise ValueError("plan.spec.added must name at least one group")
    if not isinstance(spec["threshold"], int | float) or spec["threshold"] <= 0:
        raise ValueError("plan.spec.threshold must be a positive number")
    bad = sorted(set(spec.get("controls", [])) - set(CONTROLS))
    if bad:
        raise ValueError(f"plan.spec.controls: unknown {bad}; allowed: {list(CONTROLS)}")
    return AnalysisSpec.from_dict(dict(spec))
