"""The episode workflow knows no domain: a toy ResearchDomain runs a whole campaign through the engine."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from rsi_workbench.agents import Candidate
from rsi_workbench.discovery.campaign import run_campaign
from rsi_workbench.discovery.credit import assign_credit, credit_records_from
from rsi_workbench.discovery.graph import ResearchGraph
from rsi_workbench.discovery.lead import LeadDecision, RuleLead
from rsi_workbench.discovery.records import DiscoveryRecords, HypothesisVersion, load_records
from rsi_workbench.discovery.report import campaign_report
from rsi_workbench.discovery.roles import ToolError
from rsi_workbench.discovery.workflow import Harness
from rsi_workbench.records import Run


class _Budgets(BaseModel):
    agent_calls: int = 500
    external_feedback: int = 50


class ToyConfig(BaseModel):
    seed: int = 0
    round: int = 0
    episodes: int = 4
    directions: list[str] = ["toy/a", "toy/b"]
    budgets: _Budgets = _Budgets()
    executor: Literal["serial", "process"] = "serial"
    workers: int = 1


def toy_execute(task: dict[str, Any], workdir: str) -> dict[str, Any]:
    out = Path(workdir)
    out.mkdir(parents=True, exist_ok=True)
    x = task["inputs"]["x"]
    (out / "metrics.json").write_text(json.dumps({"x": x}))
    verdict = "supports" if x % 2 else "inconclusive"
    return {
        "status": "ok",
        "outputs": {"metrics.json": str(out / "metrics.json")},
        "checks": {"criteria_decidable": True},
        "results": {"verdict": verdict, "baseline": 0.5, "delta": 0.01 * x, "ci_lo": 0.0, "ci_hi": 0.02 * x},
    }


class ToyDomain:
    """A domain whose plans are ``{"x": int}`` and whose 'analysis' reports x back."""

    name = "toy"
    controls_offered = 1
    execute = staticmethod(toy_execute)

    def defects(self, h: HypothesisVersion, status: str | None) -> list[str]:
        return []

    def added(self, h: HypothesisVersion) -> tuple[str, ...]:
        return (f"x{h.content.plan.spec['x']}",)

    def inspect_data(self, direction: str, groups: list[str]) -> dict[str, Any]:
        if groups:
            raise ToolError(f"toy data has no groups {groups}")
        return {"direction": direction}

    def validate_plan(self, spec: dict[str, Any]) -> None:
        if not isinstance(spec["x"], int):
            raise ValueError("x must be an integer")

    def worker_context(
        self, role: str, dec: LeadDecision, recs: DiscoveryRecords, graph: ResearchGraph, episode: int
    ) -> dict[str, Any]:
        return {"episode": episode}

    def link_sources(self, run: Run, recs: DiscoveryRecords, h: HypothesisVersion, episode: int) -> None:
        return None

    def compile_task(self, h: HypothesisVersion, task_id: str) -> dict[str, Any]:
        x = h.content.plan.spec["x"]
        return {
            "task_id": task_id,
            "inputs": {"x": x},
            "environment": {"python": "3"},
            "required_outputs": ["metrics.json"],
            "checks": ["criteria_decidable"],
            "dependencies": [],
            "fingerprint": f"toy-{x}",
            "executable": True,
        }

    def run_blocked(self, task: dict[str, Any], workdir: Path) -> dict[str, Any]:
        return {"status": "blocked"}


def _content(x: int) -> dict[str, Any]:
    return {
        "claim": {
            "population": "toy",
            "scope": "toy",
            "observable": "x",
            "uncertainty": "none",
            "statement": f"x = {x} is odd",
        },
        "plan": {
            "data": ["toy"],
            "comparison": "parity",
            "controls": ["none"],
            "analysis": "report x",
            "spec": {"x": x},
        },
        "criteria": {
            "supports": "odd",
            "weakens": "even",
            "inconclusive": "never",
            "metric": "delta",
            "threshold": 0.01,
        },
        "alternatives": {
            "competing": ["even"],
            "confounders": ["none"],
            "measurement_limits": ["none"],
            "discriminating": ["x mod 2"],
        },
    }


class ToyProposer:
    name = "toy-proposer"

    def propose(self, context: dict[str, Any], k: int, rng: random.Random) -> list[Candidate]:
        s = context["session"]
        if "direction" in context:
            s.call("inspect_data", direction=context["direction"], groups=["missing"])  # a failed action
        for p in context.get("parents", []):
            s.call("read_hypothesis", hypothesis_id=p)
        x = rng.randrange(100) + context["episode"]
        draft = s.call("publish_draft", content=_content(x), note="toy")
        bad = s.call("publish_draft", content={"claim": {}}, note="invalid: no node")
        assert "error" in bad
        return [Candidate(json.dumps(_content(x)), meta={"draft": draft})]


def test_a_toy_domain_runs_a_whole_campaign(tmp_path):
    cfg = ToyConfig()
    out = run_campaign(
        ToyDomain(),
        cfg,
        tmp_path / "toy",
        lead=RuleLead(),
        harness=Harness(),
        generation=ToyProposer(),
        evolution=ToyProposer(),
        progress=False,
    )
    recs = load_records(out)
    assert len(recs.episodes) == cfg.episodes
    assert recs.hypotheses and {h.domain for h in recs.hypotheses} == {"toy"}
    assert {c.domain for c in recs.critiques} == {"toy"} and recs.critiques
    assert len(recs.executions) == len(recs.hypotheses) and {e.status for e in recs.executions} == {"ok"}
    assert len(recs.profiles) == len(recs.hypotheses)
    assert any(t.failed for t in recs.turns)  # the failed tool call is a recorded failed action
    assert {h.operation for h in recs.hypotheses} >= {"restart", "evolve"} and recs.progress
    assert any(c.contribution == "support" for c in recs.contributions)  # a parent's metrics file was read
    credit = assign_credit(credit_records_from(recs))
    assert sum(credit.release.omega.values()) > 0
    text = campaign_report(out)
    assert "research graph:" in text and "level 1" in text
