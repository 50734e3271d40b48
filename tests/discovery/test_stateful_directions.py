"""State-dependent planted directions (issue 48 item 4): the best Lead operation depends on the state.

Deterministic and seeded: the operators' expected oracle values are enumerated exactly, the roles run
through a recording fake session, and the Leads decide from hand-built states."""

from __future__ import annotations

import random
from typing import Any

import pytest

from rsi_workbench.discovery.lead import LeadState, NodeSummary, RuleLead
from rsi_workbench.discovery.workflow import Harness
from rsi_workbench.domains import tabular
from rsi_workbench.domains.tabular import stateful, synthetic
from rsi_workbench.domains.tabular.analysis import CONTROLS, AnalysisSpec
from rsi_workbench.domains.tabular.binding import known_directions
from rsi_workbench.domains.tabular.credit_policy import candidates, rule_choice
from rsi_workbench.domains.tabular.oracle import planted_information
from rsi_workbench.domains.tabular.roles import TabularEvolution, TabularGeneration

INDICES = (0, 3, 16, 21, 33)


def _name(i: int) -> str:
    return f"synthetic-stateful-{i:02d}/outcome"


def _spec(i: int, added: tuple[str, ...], baseline: tuple[str, ...] = ("context",)) -> AnalysisSpec:
    return AnalysisSpec(_name(i), baseline, added, threshold=tabular.direction(_name(i)).threshold)


def test_stateful_directions_are_registered_beside_the_planted_ones() -> None:
    name = _name(16)
    assert name in tabular.STATEFUL_DIRECTIONS and name not in tabular.SYNTHETIC_DIRECTIONS
    assert len(tabular.STATEFUL_DIRECTIONS) == synthetic.N_SYNTHETIC
    assert known_directions([name]) == [name]
    d, p = tabular.direction(name), tabular.direction("synthetic-planted-16/outcome")
    assert d.dataset == "synthetic-stateful-16" != p.dataset  # its own dataset: train/dev stay disjoint
    assert d.groups == p.groups and tabular.planted_truth(name) == tabular.planted_truth(p.name)
    X, y = synthetic.load_synthetic(name)
    Xp, yp = synthetic.load_synthetic(p.name)
    assert X.equals(Xp) and (y == yp).all()  # the same planted data
    assert synthetic.is_stateful(name) and not synthetic.is_stateful(p.name)


@pytest.mark.parametrize("i", INDICES)
def test_the_best_operation_depends_on_the_state(i: int) -> None:
    roles = stateful._roles(_name(i))
    n0, n1, n2 = roles["noise"]
    # after a supported version: evolving it is best
    supported = stateful.operation_values(_spec(i, (roles["strong"],)), "supports")
    # after a falsified fresh question: repairing it is best (its partner is informative)
    fresh = [
        stateful.operation_values(_spec(i, (g,)), v) for g in (n1, roles["weak"]) for v in stateful.FALSIFIED
    ]
    # after a repair that failed again (the dead end): restarting is best
    dead = stateful.repair_spec(_spec(i, (n2,)), "inconclusive", [])[0]
    assert dead.added == (n2,)
    stuck = stateful.operation_values(dead, "inconclusive")
    best = {k: max(v, key=v.__getitem__) for k, v in {"supported": supported, "stuck": stuck}.items()}
    assert best == {"supported": "evolve", "stuck": "restart"}
    for v in fresh:
        assert max(v, key=v.__getitem__) == "repair"
        assert v["repair"] >= v["restart"] + 0.5 and v["evolve"] <= 1.0
    assert supported["evolve"] >= supported["restart"] + 1.0
    assert stuck["restart"] >= stuck["repair"] + 0.5 and stuck["evolve"] == 0.0


def test_repair_partners_and_stuck_evolution() -> None:
    name = _name(16)
    roles = stateful._roles(name)
    n0, n1, n2 = roles["noise"]
    assert stateful.partner(name, n0) == roles["strong"]
    assert stateful.partner(name, n1) == roles["redundant"]
    assert stateful.partner(name, n2) == n2
    assert stateful.partner(name, roles["weak"]) == roles["strong"]
    # a supported version is not repaired by a falsification; a falsified one is, whatever else it adds
    sup = _spec(16, (roles["strong"],))
    assert stateful.repair_spec(sup, "supports", [])[0] == sup
    mixed = _spec(16, (n0, n1))
    assert stateful.repair_spec(mixed, "weakens", [])[0].added == (roles["strong"],)
    # stuck: every extension of a non-supported version is a noise block, so it is worth its parent
    parent = _spec(16, (roles["weak"],))
    for s in stateful.evolve_options(parent, "inconclusive", set()):
        assert s.added[-1] in roles["noise"]
        assert stateful.value(s) == stateful.value(parent) == 1.0
    # developing a supported version never loses what it had
    assert all(stateful.value(s) >= 2.0 for s in stateful.evolve_options(sup, "supports", set()))
    assert stateful.value(_spec(16, (n0,), ("context", n0))) == 0.0
    assert planted_information(name, ["context", roles["strong"]]) == 2.5


class _Session:
    """Records tool calls; ``read_hypothesis`` returns the canned parents."""

    def __init__(self, parents: dict[str, dict[str, Any]]) -> None:
        self.parents = parents
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def call(self, name: str, **kw: Any) -> Any:
        self.calls.append((name, kw))
        if name == "read_hypothesis":
            return self.parents[kw["hypothesis_id"]]
        if name == "publish_draft":
            return {"draft_id": f"d{len(self.calls)}"}
        return {}


def _parent(spec: AnalysisSpec, verdict: str | None, status: str = "ok") -> dict[str, Any]:
    return {
        "spec": spec.to_dict(),
        "status": status,
        "results": {"verdict": verdict} if verdict else {},
        "defects": [],
    }


def test_roles_apply_the_planted_operators_on_stateful_directions_only() -> None:
    name = _name(16)
    roles = stateful._roles(name)
    n0 = roles["noise"][0]
    falsified = _spec(16, (n0,))
    sess = _Session({"h1": _parent(falsified, "inconclusive")})
    ctx = {"session": sess, "operation": "repair", "parents": ["h1"], "lineage_keys": set()}
    (cand,) = TabularEvolution().propose(ctx, 1, random.Random(0))
    assert cand.meta["spec"].added == (roles["strong"],)
    # the same falsified question on the plain planted direction: the repair only fixes defects
    plain = AnalysisSpec("synthetic-planted-16/outcome", ("context",), (n0,), threshold=0.01)
    sess2 = _Session({"h1": _parent(plain, "inconclusive")})
    (cand2,) = TabularEvolution().propose({**ctx, "session": sess2}, 1, random.Random(0))
    assert cand2.meta["spec"].added == (n0,)
    # evolve of a not-supported (here: failed) version is stuck
    sess3 = _Session({"h1": _parent(_spec(16, (roles["weak"],)), None, status="failed")})
    (cand3,) = TabularEvolution().propose(
        {**ctx, "session": sess3, "operation": "evolve"}, 1, random.Random(3)
    )
    assert cand3.meta["spec"].added[-1] in roles["noise"]
    # a stateful restart asks a complete question on recorded data, seeded
    gen = {"session": _Session({}), "direction": name, "tried": set(), "unavailable_rate": 1.0}
    specs = [TabularGeneration().propose(gen, 1, random.Random(s))[0].meta["spec"] for s in range(12)]
    assert all(s.controls == CONTROLS and not tabular.spec_defects(s) for s in specs)
    again = [TabularGeneration().propose(gen, 1, random.Random(s))[0].meta["spec"] for s in range(12)]
    assert specs == again


def _node(hid: str, ep: int, verdict: str, added: str, *, direction: str, weighted: float) -> NodeSummary:
    return NodeSummary(hid, direction, hid, "restart", (), ep, weighted, verdict, None, added=(added,))


def test_a_falsified_version_is_repairable_for_the_policy_leads_not_the_rule_lead() -> None:
    name = _name(16)
    roles = stateful._roles(name)
    for direction, offered in ((name, True), ("synthetic-planted-16/outcome", False)):
        nodes = (
            _node("h0", 0, "supports", roles["strong"], direction=direction, weighted=7.0),
            _node("h1", 1, "inconclusive", roles["noise"][1], direction=direction, weighted=4.0),
        )
        state = LeadState(1, 0, 12, (direction,), nodes, {"restart": 2}, Harness())
        reps = candidates(state, "repair")
        assert bool(reps) is offered
        if offered:
            assert [d.parents for d in reps] == [("h1",)]
            assert rule_choice(state, "repair").parents == ("h1",)  # type: ignore[union-attr]
        # the rule Lead sees no defect: it never repairs a falsified version
        assert RuleLead().decide(state, random.Random(0)).operation != "repair"
