"""Definition 1 validation, lineage shapes, and shared artifacts that are not lineage."""

from __future__ import annotations

import copy
import re

import pytest

from rsi_workbench.discovery.graph import LineageError, ResearchGraph
from rsi_workbench.discovery.records import (
    DiscoveryRecords,
    HypothesisVersion,
    InvalidHypothesis,
    SupportLink,
    validate_hypothesis,
)
from rsi_workbench.domains import tabular

CONTENT = tabular.hypothesis_content(
    tabular.AnalysisSpec("sklearn-diabetes/progression", ("demographics",), ("bmi",), 0.01)
)


def _h(hid: str, op: str, parents: list[str], episode: int = 0) -> HypothesisVersion:
    return HypothesisVersion(
        hypothesis_id=hid,
        family=parents[0] if parents else hid,
        version=1 if parents else 0,
        parents=parents,
        operation=op,
        episode=episode,
        round=0,
        domain="tabular",
        direction="sklearn-diabetes/progression",
        content=validate_hypothesis(CONTENT),
        publisher=f"e{episode:03d}-generation",
        created_at=0.0,
        draft_id="d0",
    )


def test_complete_hypothesis_validates():
    h = validate_hypothesis(CONTENT)
    assert h.criteria.metric == "r2" and h.criteria.threshold == 0.01
    assert h.plan.controls and h.alternatives.discriminating


@pytest.mark.parametrize(
    ("component", "name"),
    [
        ("claim", "claim (c)"),
        ("plan", "plan (π)"),
        ("criteria", "decision criteria (d)"),
        ("alternatives", "alternatives (a)"),
    ],
)
def test_validation_rejects_each_missing_component(component, name):
    bad = copy.deepcopy(CONTENT)
    del bad[component]
    with pytest.raises(InvalidHypothesis, match=re.escape(name) + ".*missing"):
        validate_hypothesis(bad)


@pytest.mark.parametrize(
    ("component", "field"),
    [
        ("claim", "population"),
        ("claim", "uncertainty"),
        ("plan", "comparison"),
        ("plan", "controls"),
        ("criteria", "supports"),
        ("criteria", "weakens"),
        ("criteria", "inconclusive"),
        ("criteria", "threshold"),
        ("alternatives", "confounders"),
        ("alternatives", "discriminating"),
    ],
)
def test_validation_rejects_missing_or_empty_fields(component, field):
    bad = copy.deepcopy(CONTENT)
    del bad[component][field]
    with pytest.raises(InvalidHypothesis, match=field):
        validate_hypothesis(bad)
    empty = copy.deepcopy(CONTENT)
    if isinstance(CONTENT[component][field], str):
        empty[component][field] = "  "
        with pytest.raises(InvalidHypothesis, match=field):
            validate_hypothesis(empty)


def test_decision_criteria_are_required_not_defaulted():
    bad = copy.deepcopy(CONTENT)
    bad["criteria"] = {}
    with pytest.raises(InvalidHypothesis, match="decision criteria"):
        validate_hypothesis(bad)


def test_lineage_shapes_restart_revision_crossover():
    g = ResearchGraph()
    g.add(_h("a", "restart", []))
    g.add(_h("b", "restart", []))
    g.add(_h("c", "evolve", ["a"], 1))
    g.add(_h("x", "crossover", ["c", "b"], 2))
    assert g.nodes["x"].parents == ["c", "b"]
    assert g.roots() == ["a", "b"] and g.depth("x") == 2
    assert g.ancestors("x") == {"a", "b", "c"}
    assert sorted(g.lineage_edges()) == [("a", "c"), ("b", "x"), ("c", "x")]
    with pytest.raises(ValueError, match="restart has no parents"):
        _h("r", "restart", ["a"])
    with pytest.raises(ValueError, match="at least two parents"):
        _h("y", "crossover", ["a"])
    with pytest.raises(ValueError, match="exactly one parent"):
        _h("z", "repair", ["a", "b"])
    with pytest.raises(LineageError, match="unknown parent"):
        g.add(_h("w", "evolve", ["nope"]))


def test_shared_artifact_creates_no_lineage_edge():
    recs = DiscoveryRecords()
    recs.hypotheses += [_h("a", "restart", []), _h("b", "restart", [], 1)]
    recs.support_links += [
        SupportLink(hypothesis_id="a", source_id="split:shared", relation="uses_split"),
        SupportLink(hypothesis_id="b", source_id="split:shared", relation="uses_split"),
    ]
    g = ResearchGraph.from_records(recs)
    assert g.related_by_support("a", "b")
    assert g.lineage_edges() == []
    assert g.ancestors("b") == set() and g.depth("b") == 0
