"""The Lead protocol: constrained output format, validator, built-in rule Lead."""

from __future__ import annotations

import random

import pytest

from rsi_workbench.discovery.lead import (
    InvalidLeadDecision,
    Lead,
    LeadDecision,
    LeadState,
    NodeSummary,
    RuleLead,
    format_lead_decision,
    parse_lead_decision,
    validate_lead_decision,
)
from rsi_workbench.discovery.workflow import Harness, OperationBudget

D1, D2 = "sklearn-diabetes/progression", "sklearn-breast-cancer/malignant"


def _node(hid, direction=D1, family=None, verdict="supports", weighted=6.0, defects=(), added=("bmi",), **kw):
    return NodeSummary(
        hid, direction, family or hid, "restart", (), 0, weighted, verdict, None, defects, added=added, **kw
    )


def _state(nodes, counts=None, harness=None, n=20):
    return LeadState(3, 0, n, (D1, D2), tuple(nodes), counts or {}, harness or Harness())


def test_rule_lead_is_a_lead_and_explores_unexplored_directions_first():
    lead = RuleLead()
    assert isinstance(lead, Lead)
    d = lead.decide(_state([_node("h0")]), random.Random(0))
    assert d.operation == "restart" and d.direction == D2 and d.parents == ()


def test_rule_lead_repairs_then_crosses_then_evolves():
    h = Harness(roles={"explore_rate": 0.0})
    nodes = [_node("h0"), _node("h1", D2, defects=("unavailable_data",), verdict="blocked", weighted=2.0)]
    d = RuleLead().decide(_state(nodes, harness=h), random.Random(0))
    assert (d.operation, d.parents) == ("repair", ("h1",))
    nodes = [_node("h0"), _node("h1", added=("glucose",)), _node("h2", D2)]
    d = RuleLead().decide(_state(nodes, harness=h), random.Random(0))
    assert d.operation == "crossover" and set(d.parents) == {"h0", "h1"}
    validate_lead_decision(d, _state(nodes, harness=h))
    nodes = [_node("h0"), _node("h2", D2, weighted=7.0)]
    d = RuleLead().decide(_state(nodes, harness=h), random.Random(0))
    assert (d.operation, d.parents) == ("evolve", ("h2",))


def test_format_parse_round_trip():
    st = _state([_node("h0"), _node("h1", added=("glucose",))])
    d = LeadDecision("crossover", ("h0", "h1"), D1)
    text = format_lead_decision(d)
    back = parse_lead_decision(text, st)
    assert (back.operation, back.parents, back.direction) == ("crossover", ("h0", "h1"), D1)
    assert back.raw == text
    r = parse_lead_decision("Operation: restart\nparents: none\ndirection: " + D2, st)
    assert r.parents == () and r.operation == "restart"
    assert "operation: <op>" in st.prompt() and "h1" in st.prompt()


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("operation: mutate\nparents: h0\ndirection: " + D1, "not one of"),
        ("operation: evolve\nparents: h9\ndirection: " + D1, "unknown parent"),
        ("operation: evolve\nparents: h0,h1\ndirection: " + D1, "exactly one parent"),
        ("operation: crossover\nparents: h0\ndirection: " + D1, "at least two"),
        ("operation: restart\nparents: h0\ndirection: " + D1, "no parents"),
        ("operation: evolve\nparents: h0\ndirection: " + D2, "are in"),
        ("operation: restart\nparents: none\ndirection: mars/rovers", "direction"),
        ("operation: evolve\nparents: h0", "lacks line"),
        ("I think we should evolve h0", "lacks line"),
    ],
)
def test_invalid_decisions_are_rejected(text, match):
    st = _state([_node("h0"), _node("h1", added=("glucose",))])
    with pytest.raises(InvalidLeadDecision, match=match):
        parse_lead_decision(text, st)


def test_operation_budget_is_enforced():
    h = Harness(operations=OperationBudget(restart=0.1))
    st = _state([_node("h0")], counts={"restart": 2}, harness=h, n=20)
    assert "restart" not in st.allowed_operations()
    with pytest.raises(InvalidLeadDecision, match="over its budget"):
        validate_lead_decision(LeadDecision("restart", (), D2), st)
    assert RuleLead().decide(st, random.Random(0)).operation != "restart"
    st2 = _state([_node("h0"), _node("h1", added=("glucose",))])
    crossed = LeadState(3, 0, 20, (D1, D2), st2.nodes, {}, Harness(), frozenset({frozenset({"h0", "h1"})}))
    with pytest.raises(InvalidLeadDecision, match="already combined"):
        validate_lead_decision(LeadDecision("crossover", ("h0", "h1"), D1), crossed)
