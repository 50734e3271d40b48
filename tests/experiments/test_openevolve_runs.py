"""The project's two OpenEvolve-format directories through ``rsi-workbench run``: the non-LLM
``mutate`` arm grows trees whose nodes hold the evaluator's metrics, the trees replay
(``replay score``) and open in the tree inspector; the program arm (a scripted model test double)
rewrites only the evolve block; ``experiment: dreaming`` runs on an OpenEvolve task and its run
opens in the replay explorer; the shipped config validates."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from rsi_workbench.cli import load_experiment_config, main
from rsi_workbench.domains.openevolve import split_evolve_block
from rsi_workbench.experiments.dreaming.experiment import load_trees
from rsi_workbench.experiments.dreaming.program_runs import Config, run_experiment
from rsi_workbench.models import ChatResult
from rsi_workbench.records import Run

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "openevolve"


def write_config(tmp: Path, name: str, body: dict[str, Any]) -> Path:
    p = tmp / f"{name}.yaml"
    p.write_text(yaml.safe_dump(body))
    return p


def mutate_config(d: str) -> dict[str, Any]:
    return {
        "experiment": "program_agent",
        "task": {"kind": "openevolve", "dir": str(EXAMPLES / d)},
        "arms": ["mutate"],
        "seeds": [0],
        "W": 2,
        "calls": 3,
        "calls_per_round": 3,
        "policy": "greedy_deepest_best",
    }


def test_both_examples_run_replay_and_open(tmp_path: Path, capsys: Any) -> None:
    for d in ("function_minimization", "circle_packing_cascade"):
        out = tmp_path / d
        assert main(["run", str(write_config(tmp_path, d, mutate_config(d))), "--out", str(out)]) == 0
        run = Run.open(out)
        task = run.events("openevolve_task")[0].payload
        assert task["dir"] == str(EXAMPLES / d) and "evaluator.py" in task["files"]
        assert run.events("sandbox_isolation")
        nodes = [e.payload for e in run.events("tree_node")]
        assert len(nodes) == 3 and all(n["move"] == "mutate" and n["mutations"] for n in nodes)
        assert any(n["valid"] for n in nodes) and all("combined_score" in n["metrics"] for n in nodes)
        if d == "circle_packing_cascade":  # the cascade ran stage 2 after stage 1 passed 0.5
            assert all(n["stages"][0] == "evaluate_stage1" for n in nodes)
            assert any(n["stages"] == ["evaluate_stage1", "evaluate_stage2"] for n in nodes)
        initial = split_evolve_block((EXAMPLES / d / "initial_program.py").read_text())
        for n in nodes:
            prog = run.artifacts.get_json(n["payload"])
            blk = split_evolve_block(prog)
            assert (blk.prefix, blk.suffix) == (initial.prefix, initial.suffix)
        trees = load_trees(out)[("mutate", 0)]  # the tree inspector's reader
        assert len(trees) == 1 and len(list(trees[0])) == 3
        path = tmp_path / f"{d}-tree.json"
        trees[0].save(path)
        capsys.readouterr()
        assert (
            main(
                [
                    "replay",
                    "score",
                    str(path),
                    "--policy",
                    "greedy_deepest_best",
                    "breadth_first",
                    "--beta1",
                    "0.0002",
                    "--beta2",
                    "0.0005",
                    "--workers",
                    "2",
                ]
            )
            == 0
        )
        assert "greedy_deepest_best" in capsys.readouterr().out
    from rsi_workbench.widgets.tree_inspector import tree_records

    recs = tree_records(tmp_path / "circle_packing_cascade")
    assert len(recs) == 1 and len(next(iter(recs.values()))) == 3


NEW_BLOCK = """Here is a better search:
```python
# EVOLVE-BLOCK-START
def run_search(objective, bounds, budget, seed):
    import numpy as np

    return np.array([1.3, -0.7])
# EVOLVE-BLOCK-END
```
"""


class ScriptedBlockModel:
    """A scripted model test double: answers its script in order and keeps every prompt."""

    def __init__(self, script: Sequence[str]):
        self.script, self.prompts = list(script), []  # type: ignore[var-annotated]

    def chat_batch(self, conversations: Sequence[Sequence[Any]], **kw: Any) -> list[ChatResult]:
        out = []
        for conv in conversations:
            self.prompts.append(conv[-1]["content"])
            text = self.script[(len(self.prompts) - 1) % len(self.script)]
            out.append(ChatResult([text], ["stop"], 10, 10, 0.0, "scripted", "double"))
        return out


def test_program_arm_rewrites_only_the_block(tmp_path: Path) -> None:
    cfg = Config(**{**mutate_config("function_minimization"), "arms": ["program"], "calls": 3, "W": 1})
    cut = "```python\ndef run_search(objective, bounds, budget, seed):\n    return [1.3, -0.69]\nfor k in ("
    model = ScriptedBlockModel([NEW_BLOCK, "No code, sorry.", cut])
    run_experiment(cfg, tmp_path / "run", llm=model)
    run = Run.open(tmp_path / "run")
    nodes = [e.payload for e in run.events("tree_node")]
    assert [n["move"] for n in nodes] == ["program", "no_program", "program"]
    assert nodes[2]["valid"] and 0.9 < nodes[2]["score"] < 1.0  # cut short: trimmed to what parses
    assert nodes[0]["valid"] and nodes[0]["score"] == 1.0  # the global minimum: the evaluator's verdict
    assert nodes[1]["fail_class"] == "exception"
    initial = (EXAMPLES / "function_minimization" / "initial_program.py").read_text()
    child = run.artifacts.get_json(nodes[0]["payload"])
    a, b = split_evolve_block(initial), split_evolve_block(child)
    assert (a.prefix, a.suffix) == (b.prefix, b.suffix) and "1.3, -0.7" in b.block
    prompt = model.prompts[0]
    assert "def run_search" in prompt and "# ... the evolve block ..." in prompt and "Rastrigin" in prompt
    assert nodes[0]["prompt_tokens"] == 10 and json.dumps(nodes[0]["metrics"])


def test_dreaming_on_an_openevolve_task(tmp_path: Path) -> None:
    body = {
        "experiment": "dreaming",
        "task": {"kind": "openevolve", "dir": str(EXAMPLES / "circle_packing_cascade"), "timeout": 10},
        "arms": ["dreaming"],
        "seeds": [0],
        "W": 2,
        "executor": "serial",
        "workers": 1,
        "calls": 4,
        "calls_per_round": 2,
        "candidates": 2,
    }
    out = tmp_path / "dream"
    assert main(["run", str(write_config(tmp_path, "dream", body)), "--out", str(out)]) == 0
    assert Run.open(out).events("openevolve_task")[0].payload["timeout"] == 10.0
    sub = Run.open(out / "arms" / "dreaming-s0")
    assert len(sub.events("tree_recorded")) == 2 and sub.events("policy_deployed")
    from rsi_workbench.widgets import replay_explorer
    from rsi_workbench.widgets.tree_inspector import tree_records

    assert len(tree_records(out)) == 2
    assert replay_explorer.build(out, {}) is not None


def test_raising_and_hanging_evaluators_are_failed_nodes(tmp_path: Path) -> None:
    evaluators = {
        "raises": ("def evaluate(program_path):\n    raise RuntimeError('broken evaluator')\n", "error"),
        "hangs": ("import time\n\n\ndef evaluate(program_path):\n    time.sleep(600)\n", "timeout"),
    }
    for name, (source, fail_class) in evaluators.items():
        d = tmp_path / name
        d.mkdir()
        (d / "initial_program.py").write_text("# EVOLVE-BLOCK-START\nA = 1.5\n# EVOLVE-BLOCK-END\n")
        (d / "evaluator.py").write_text(source)
        body = {
            **mutate_config("function_minimization"),
            "task": {"kind": "openevolve", "dir": str(d), "timeout": 1},
        }
        body["calls"] = body["calls_per_round"] = body["W"] = 2
        out = tmp_path / f"run-{name}"
        assert main(["run", str(write_config(tmp_path, name, body)), "--out", str(out)]) == 0
        run = Run.open(out)
        nodes = [e.payload for e in run.events("tree_node")]
        assert [n["fail_class"] for n in nodes] == [fail_class] * 2 and not any(n["valid"] for n in nodes)
        assert run.events("lane_finished")[0].payload["best"] is None
        if name == "raises":
            assert "RuntimeError: broken evaluator" in nodes[0]["error"] and "broken" in nodes[0]["traceback"]


def test_shipped_config_points_at_an_example() -> None:
    cfg = load_experiment_config(REPO / "configs" / "dreaming" / "openevolve_task.yaml")
    assert Path(cfg.task.dir) == EXAMPLES / "function_minimization"
    assert "mutate" in cfg.arms
