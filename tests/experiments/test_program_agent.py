"""The program-writing discovery agent with a scripted model (a test double): each program outcome
keeps its real class, trees replay beside an imported OpenEvolve tree, the prompt's history slice is
bounded, and the replay / text-hint arms run."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from rsi_workbench.cli import load_experiment_config
from rsi_workbench.domains.math import CirclePacking, FirstAutocorrelation
from rsi_workbench.domains.math.program_agent import (
    AttemptView,
    history_hint,
    history_text,
    siblings_text,
)
from rsi_workbench.domains.math.programs import program_spec, run_program
from rsi_workbench.experiments.dreaming.program_runs import Config, report, run_experiment
from rsi_workbench.models import ChatResult
from rsi_workbench.records import Run
from rsi_workbench.replay import DiscoveryTree, Node, baseline, replay, score_policy
from rsi_workbench.replay.importers import import_openevolve

VALID = """Here is a better program:
```python
import numpy as np


def construct_packing():
    n = 6
    xs = (np.arange(n) % 3 + 0.5) / 3
    ys = (np.arange(n) // 3 + 0.5) / 3
    return np.stack([xs, ys, np.full(n, 1 / 6)], axis=1)
```
"""
RAISES = "```python\ndef construct_packing():\n    raise ValueError('no idea')\n```\n"
LOOPS = "```python\ndef construct_packing():\n    while True:\n        pass\n```\n"
INVALID = "```python\ndef construct_packing():\n    return [[0.5, 0.5, 0.4]] * 6\n```\n"
REPO = Path(__file__).resolve().parents[2]
NO_PROGRAM = "I would place the circles on a hexagonal lattice."


class ScriptedProgramModel:
    """A scripted model test double: answers its script in order (cycling) and keeps every prompt."""

    def __init__(self, script: Sequence[str]):
        self.script = list(script)
        self.prompts: list[str] = []

    def chat_batch(self, conversations: Sequence[Sequence[Any]], **kw: Any) -> list[ChatResult]:
        out = []
        for conv in conversations:
            prompt = conv[-1]["content"]
            self.prompts.append(prompt)
            text = self.script[(len(self.prompts) - 1) % len(self.script)]
            out.append(
                ChatResult(
                    [text], ["stop"], len(prompt.split()), len(text.split()), 0.0, "scripted", "double"
                )
            )
        return out


def tiny(**kw: Any) -> Config:
    base = {
        "task": {"kind": "circle_packing", "n": 6},
        "arms": ["program"],
        "seeds": [0],
        "W": 1,
        "calls": 5,
        "calls_per_round": 5,
        "policy": "greedy_deepest_best",
        "program_wall_s": 10.0,  # the first program imports numpy in a cold sandbox: 3 s timed out under CI load
    }
    return Config(**{**base, **kw})


@pytest.fixture(scope="module")
def scripted_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    model = ScriptedProgramModel([VALID, RAISES, LOOPS, INVALID, NO_PROGRAM])
    return run_experiment(tiny(), tmp_path_factory.mktemp("prog") / "run", llm=model)


def test_each_outcome_keeps_its_real_class(scripted_run: Path) -> None:
    rows = [e.payload for e in Run.open(scripted_run).events("tree_node")]
    assert [r["fail_class"] for r in rows] == [None, "exception", "timeout", "invalid", "exception"]
    assert rows[0]["valid"] and rows[0]["score"] == pytest.approx(1.0)
    assert rows[1]["error"] == "ValueError: no idea"
    assert rows[2]["error"].startswith("timeout")
    assert not rows[3]["valid"] and not rows[3]["error"] and "overlap" in rows[3]["reason"]
    assert rows[4]["move"] == "no_program" and rows[4]["error"].startswith("no program")
    assert all(r["prompt_tokens"] > 0 for r in rows)
    text = report(scripted_run)
    assert "not reached" in text and "prompt tok" in text and "timeout 1" in text and "no_program 1" in text


def test_agent_tree_replays_beside_an_openevolve_tree(scripted_run: Path, tmp_path: Path) -> None:
    run = Run.open(scripted_run)
    (ev,) = run.events("tree_recorded")
    ours = DiscoveryTree.from_json(run.artifacts.get_json(ev.payload["artifact"]))
    assert run.artifacts.get_json(ours.nodes["t0n0"].payload).startswith("import numpy")  # the program
    folder = tmp_path / "checkpoint_3" / "programs"
    folder.mkdir(parents=True)
    for i, (parent, score) in enumerate([(None, 0.9), ("p0", 1.2), ("p0", None), ("p1", 1.5)]):
        metrics = {"combined_score": score} if score is not None else {"error": "timeout"}
        prog = {"id": f"p{i}", "parent_id": parent, "iteration_found": i, "metrics": metrics, "code": "pass"}
        (folder / f"p{i}.json").write_text(json.dumps(prog))
    theirs = import_openevolve(tmp_path)
    for policy in ("greedy_deepest_best", "breadth_first", "portfolio"):
        s = score_policy([ours, theirs], baseline(policy), 2, 1e-4, 2e-4)
        assert [r["quality"] for r in s.per_tree] == [pytest.approx(1.0), pytest.approx(1.5)]
    assert replay(ours, baseline("independent_roots"), 1).n == len(ours)


def test_prompt_slice_is_bounded_and_shows_no_sibling_code() -> None:
    nodes = [
        Node("t0n0", "r", 0, 1, 2.1, True, payload="x"),
        Node("t0n1", "r", 1, 1, None, False, "exception", "ValueError: boom\ntrace", "y"),
        Node("t0n2", "r", 2, 2, 9.0, False, "invalid", meta={"reason": "circles 0 and 1 overlap by 0.3"}),
    ]
    view = AttemptView(nodes, [], 0)
    sib = siblings_text(view, "r", 2)
    assert "invalid: circles 0 and 1 overlap" in sib and "ValueError: boom" in sib and "t0n0" not in sib
    hist = history_text(view, 1)
    assert "3 attempts: 1 valid, 1 invalid, 1 failed" in hist and "Best valid score 2.100000 (t0n0)" in hist
    assert "trace" not in hist
    tree = DiscoveryTree.from_nodes(nodes, name="t")
    assert "Summary of earlier rounds" in history_hint([tree]) and history_hint([]) == ""


def test_replay_and_text_hint_arms_against_scipy(tmp_path: Path) -> None:
    model = ScriptedProgramModel([VALID, INVALID])
    cfg = tiny(arms=["scipy", "program_replay", "program_text_hint"], calls=4, calls_per_round=2, W=2)
    out = run_experiment(cfg, tmp_path / "arms", llm=model)
    run = Run.open(out)
    fins = {e.payload["arm"]: e.payload for e in run.events("lane_finished")}
    assert set(fins) == {"scipy", "program_replay", "program_text_hint"}
    assert all(f["calls"] == 4 and f["trees"] == 2 for f in fins.values())
    chosen = run.events("policy_selected")
    assert [e.payload["arm"] for e in chosen] == ["program_replay", "program_replay"]
    assert {r["policy"] for r in chosen[0].payload["candidates"]} >= {"portfolio", "breadth_first"}
    hinted = [p for p in model.prompts if "Summary of earlier rounds" in p]
    assert len(hinted) == 2  # the text-hint lane's second tree only
    assert "replay-selected policy" in report(out)


def test_resume_rebuilds_lanes_from_events(tmp_path: Path) -> None:
    cfg = tiny(calls=2, calls_per_round=1)
    out = run_experiment(cfg, tmp_path / "r", llm=ScriptedProgramModel([VALID]))
    again = ScriptedProgramModel([VALID])
    run_experiment(cfg, out, resume=True, llm=again)
    assert again.prompts == [] and len(Run.open(out).events("tree_node")) == 2


@pytest.mark.slow
def test_smoke_config_on_the_offline_default_model(tmp_path: Path) -> None:
    """``configs/dreaming/program_agent_smoke.yaml`` with the real SmolLM2-135M (about 30 s idle)."""
    cfg = load_experiment_config(REPO / "configs" / "dreaming" / "program_agent_smoke.yaml")
    out = run_experiment(cfg, tmp_path / "smoke")
    run = Run.open(out)
    rows = [e.payload for e in run.events("tree_node")]
    assert [r["arm"] for r in rows].count("program") == 2 and len(run.events("model_call")) == 2
    assert all(r["prompt_tokens"] > 100 for r in rows if r["arm"] == "program")
    assert "program" in report(out) and "scipy" in report(out)


def test_seed_programs_are_valid_in_the_sandbox() -> None:
    task = CirclePacking(26)
    res = run_program(task, program_spec(task).seed_program, wall_s=20.0)
    assert res.valid and res.score == pytest.approx(26 / 12)
    auto = FirstAutocorrelation(m=10)
    res = run_program(auto, program_spec(auto).seed_program, wall_s=20.0)
    assert res.valid and res.evaluation is not None and res.evaluation.value == pytest.approx(2.0)


def test_replay_arm_selects_a_policy_when_no_program_is_valid(tmp_path: Path) -> None:
    cfg = tiny(arms=["program_replay"], calls=2, calls_per_round=1)
    out = run_experiment(cfg, tmp_path / "none", llm=ScriptedProgramModel([INVALID]))
    chosen = [e.payload for e in Run.open(out).events("policy_selected")]
    assert len(chosen) == 2 and chosen[0]["chosen"] == "greedy_deepest_best"  # ties keep the current one
    assert all(r["V"] is None for r in chosen[0]["candidates"])
