"""State-dependent planted directions: which Lead operation is worth most depends on the research state.

On ``synthetic-stateful-NN/outcome`` (planted-NN's design and data under its own dataset name) the
built-in roles apply planted operators, so that a Lead that reads the state can beat one that does
not (issue 48 item 4). A version is *falsified* when it executed and its pre-fixed criteria did not
support the claim (verdict ``weakens`` or ``inconclusive``).

- **restart** (Generation): a new, untried single-group question beyond one of the direction's
  baselines, with both controls and recorded data only (no fixable defect).
- **evolve** a supported version: the lineage develops: X is extended with an untried group (worth
  at least the parent). **evolve** a version that was not supported: the lineage is *stuck*: X is
  extended with a planted noise block (worth exactly the parent).
- **repair** a falsified version (the Lead may now repair it, :func:`repairable`): the falsification
  points at a planted *partner* measurement, which replaces X (:func:`partner`: the first noise block
  → the strong informative block, the second → the redundant copy of it, the third → itself: a dead
  end; the weak → the strong, the strong or redundant → the weak). A repair of anything else fixes
  its defects as in the other directions.
- **crossover**: unchanged.

So after a supported version evolving is best, after a falsified fresh question repairing is, and
after a repair that failed again (a dead end: repairing it again changes nothing, evolving it is
stuck) restarting is. The built-in :class:`~rsi_workbench.discovery.lead.RuleLead` never repairs a
falsified version (it sees no defect) and keeps evolving its best version: it is wrong in two of the
three states. :func:`operation_values` gives each operation's expected planted oracle value
(``oracle.planted_information``) in a given state, exactly (enumerating the operators' random moves).
"""

from __future__ import annotations

import random
import statistics
from typing import Any

from rsi_workbench.domains.tabular.analysis import CONTROLS, AnalysisSpec
from rsi_workbench.domains.tabular.catalog import direction
from rsi_workbench.domains.tabular.synthetic import _design, _index, is_stateful

FALSIFIED = ("weakens", "inconclusive")


def falsified(verdict: str | None) -> bool:
    """An executed version whose decision criteria did not support its claim."""
    return verdict in FALSIFIED


def repairable(node: Any) -> bool:
    """Whether a Lead may repair this version (a ``NodeSummary``) for being falsified: on a stateful
    direction, falsified and not yet repaired (defects make any version repairable, as elsewhere)."""
    return is_stateful(node.direction) and falsified(node.verdict) and not node.repaired


def _roles(name: str) -> dict[str, Any]:
    d = _design(_index(name))
    roles: dict[str, str] = d["roles"]  # type: ignore[assignment]
    noise = [b for b, r in roles.items() if r == "noise"]  # in planted order (the first is in a baseline)
    redundant = next(b for b, r in roles.items() if r == "redundant")
    return {"strong": str(d["strong"]), "weak": str(d["weak"]), "redundant": redundant, "noise": noise}


def partner(name: str, group: str) -> str:
    """The planted measurement a falsification of ``group`` points at (see the module docstring)."""
    r = _roles(name)
    n0, n1, n2 = r["noise"]
    table = {n0: r["strong"], n1: r["redundant"], n2: n2, r["weak"]: r["strong"]}
    table |= {r["strong"]: r["weak"], r["redundant"]: r["weak"], "context": r["strong"]}
    return table.get(group, group)


def restart_options(name: str, tried: set[tuple[tuple[str, ...], tuple[str, ...]]]) -> list[AnalysisSpec]:
    """Every question a stateful restart may ask (untried single groups beyond each baseline)."""
    d = direction(name)
    out = []
    for base in d.baselines:
        groups = [g for g in d.groups if g not in base]
        fresh = [g for g in groups if (base, (g,)) not in tried] or groups
        out += [AnalysisSpec(name, base, (g,), threshold=d.threshold, controls=CONTROLS) for g in fresh]
    return out


def restart_spec(
    name: str, rng: random.Random, tried: set[tuple[tuple[str, ...], tuple[str, ...]]]
) -> AnalysisSpec:
    """A new question: a random baseline, then a random untried group; complete controls."""
    d = direction(name)
    base = rng.choice(d.baselines)
    options = [s for s in restart_options(name, tried) if s.baseline == base]
    return rng.choice(options)


def evolve_options(parent: AnalysisSpec, verdict: str | None, avoid: set[str]) -> list[AnalysisSpec]:
    """The extensions an evolve may make: any untried recorded group after support, noise when stuck."""
    from rsi_workbench.domains.tabular.hypotheses import spec_key

    d = direction(parent.direction)
    used = set(parent.baseline) | set(parent.added)
    pool = [g for g in d.groups if g not in used]
    if verdict != "supports":
        noise = [g for g in pool if g in _roles(parent.direction)["noise"]]
        pool = noise or pool
    specs = [_with(parent, added=parent.added + (g,)) for g in pool]
    fresh = [s for s in specs if spec_key(s) not in avoid]
    return fresh or specs or [parent]


def evolve_spec(
    parent: AnalysisSpec, verdict: str | None, rng: random.Random, avoid: set[str]
) -> tuple[AnalysisSpec, str]:
    """Develop a supported version, or drift in a stuck lineage (see :func:`evolve_options`)."""
    spec = rng.choice(evolve_options(parent, verdict, avoid))
    why = (
        "extend X with " + ", ".join(g for g in spec.added if g not in parent.added) if spec != parent else ""
    )
    return spec, (why or "no change possible") + ("" if verdict == "supports" else " (stuck lineage)")


def repair_spec(
    parent: AnalysisSpec, verdict: str | None, defects: list[str]
) -> tuple[AnalysisSpec, list[str]]:
    """Repair a falsified version by its planted partner (then any defect as elsewhere)."""
    from rsi_workbench.domains.tabular.hypotheses import repair_spec as fix_defects

    spec, changes = parent, []
    if falsified(verdict):
        new = (partner(parent.direction, parent.added[0]),)
        if new != parent.added[:1] or len(parent.added) > 1:
            spec = _with(parent, added=new)
            changes.append(f"the falsification points at {new[0]}: it replaces {', '.join(parent.added)}")
    spec, more = fix_defects(spec, [d for d in defects if d != "execution_failed"])
    return spec, changes + more


def _with(spec: AnalysisSpec, **kw: Any) -> AnalysisSpec:
    from dataclasses import replace

    return replace(spec, **kw)


def value(spec: AnalysisSpec) -> float:
    """The planted oracle value info(B ∪ X) − info(B) of a spec."""
    from rsi_workbench.domains.tabular.oracle import planted_information

    b = list(spec.baseline)
    return planted_information(spec.direction, b + list(spec.added)) - planted_information(spec.direction, b)


def operation_values(
    parent: AnalysisSpec | None,
    verdict: str | None,
    tried: set[tuple[tuple[str, ...], tuple[str, ...]]] = frozenset(),  # type: ignore[assignment]
    avoid: set[str] = frozenset(),  # type: ignore[assignment]
    *,
    name: str | None = None,
) -> dict[str, float]:
    """Expected oracle value of the version each operation publishes when the Lead's parent is
    ``parent`` with execution verdict ``verdict`` (exact: every random move of the operator)."""
    name = name or (parent.direction if parent else None)
    if name is None:
        raise ValueError("operation_values: name a direction or a parent")
    per_base = [
        statistics.fmean(value(s) for s in restart_options(name, tried) if s.baseline == b)
        for b in direction(name).baselines
    ]
    out = {"restart": statistics.fmean(per_base)}
    if parent is not None:
        out["evolve"] = statistics.fmean(value(s) for s in evolve_options(parent, verdict, avoid))
        if falsified(verdict):
            out["repair"] = value(repair_spec(parent, verdict, [])[0])
    return out


__all__ = [
    "FALSIFIED",
    "evolve_options",
    "evolve_spec",
    "falsified",
    "is_stateful",
    "operation_values",
    "partner",
    "repair_spec",
    "repairable",
    "restart_options",
    "restart_spec",
    "value",
]
