"""The code-repair experiment with a model coder (a scripted test double behind the recorder):
invalid samples are recorded with their reasons and never executed, proposal reach is reported,
and one recorded set of coder calls per seed is shared by the methods of that seed."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from code_repair_demo import TASKS

from rsi_workbench.domains.code_repair import coder_settings as coders_mod
from rsi_workbench.domains.code_repair.reach import run_reach
from rsi_workbench.experiments.code_repair import Config, report, run_experiment
from rsi_workbench.experiments.code_repair import runs as runs_mod
from rsi_workbench.models.interface import ChatResult
from rsi_workbench.records import Run
from studies.code_repair_world_compare.world_from_experiment import transitions_from_experiment


class FixingModelDouble:
    """Test double for ``agents.LLM``: for each requested sample, in turn, prose (unparseable), a
    wrong-signature function, and the task's reference in a fenced block (then duplicates of it)."""

    identity = "double:fixing"
    name = "fixing-double"
    capabilities = frozenset({"chat"})

    def __init__(self) -> None:
        self.calls = 0
        self.asked: dict[str, int] = {}
        self.refs = {t["entry_point"]: t["reference"] for t in TASKS}

    def chat(self, messages: Sequence[Any], *, n: int = 1, **_: Any) -> ChatResult:
        self.calls += 1
        prompt = messages[-1]["content"]
        entry = next(e for e in self.refs if f"def {e}(" in prompt)
        answers = ["I would look at the loop.", f"```python\ndef {entry}(*args):\n    return 0\n```"]
        answers += [f"```python\n{self.refs[entry]}```"] * 8
        at = self.asked.get(prompt, 0)  # the script runs on across the calls of one prompt
        self.asked[prompt] = at + n
        texts = answers[at : at + n]
        return ChatResult(texts, ["stop"] * n, 50, 20 * n, 0.0, self.identity, self.name)


@pytest.fixture
def double(monkeypatch) -> FixingModelDouble:
    model = FixingModelDouble()

    def _open(settings: Any, out: Path, seed: int) -> Any:
        return coders_mod.open_llm_coder(settings, out, seed, backend=model)

    monkeypatch.setattr(runs_mod, "open_llm_coder", _open)
    return model


def test_llm_coder_experiment_records_invalid_samples_reach_and_shares_calls(tmp_path, double):
    task_file = tmp_path / "tasks.jsonl"
    task_file.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    cfg = Config.model_validate(
        {
            "tasks": {"path": str(task_file)},
            "methods": ["random_k", "static_verifier"],
            "seeds": [0],
            "coder": {"kind": "llm", "sample_cap": 8},
            "world": {"encoder": "tiny", "folds": 3, "train_epochs": 2, "adapt_epochs": 2},
            "protocol": {"k": 2, "max_rounds": 2, "gate_fraction": 0.34},
        }
    )
    out = run_experiment(cfg, tmp_path / "exp")
    props = {
        m: [e for e in Run.open(out / "runs" / f"{m}-seed0").events("proposal")]
        for m in ("random_k", "static_verifier")
    }
    first = props["random_k"][0].payload
    reasons = [c["reason"] for c in first["candidates"]]
    assert reasons[0].startswith("unparseable") and reasons[1].startswith("changed signature")
    assert reasons[2] == "" and reasons[3].startswith("duplicate")  # k=2 wanted: one valid fix, cap 8
    assert [c["valid"] for c in first["candidates"]].count(True) == 1
    assert all(a["meta"]["raw"] for a in first["actions"])  # each sample's raw answer is kept
    # the invalid ones were never executed: their audit slot is marked, not run
    audit = Run.open(out / "runs" / "random_k-seed0").events("audit")[0].payload["outcomes"]
    assert audit[0]["invalid"] and audit[2]["hidden_all_pass"]
    # the valid recorded candidates, as E0 transitions for world_compare (invalid ones left out)
    trans, counts = transitions_from_experiment(out)
    assert counts["invalid"] > 0 and counts["transitions"] == len(trans) > 0
    assert all(t.program and t.hidden and "*args" not in t.program for t in trans)
    assert any(all(o["status"] == "AC" for o in t.hidden) for t in trans)
    # proposal reach: every task had a candidate passing all hidden tests
    assert run_reach(out / "runs" / "random_k-seed0")["reached"]["llm"] == sorted(t["task_id"] for t in TASKS)
    text = report(out)
    assert "proposal reach (coder: llm)" in text and "3.0/3 tasks" in text
    # one recorded set of coder calls for the seed: the second method's round 1 was replayed
    for m in props:
        assert [p.payload["actions"] for p in props[m] if p.cycle == 1] == [
            p.payload["actions"] for p in props["random_k"] if p.cycle == 1
        ]
    asked = sum(1 + max(a["meta"]["call"] for a in p.payload["actions"]) for m in props for p in props[m])
    recorded = Run.open(out / "coder" / "seed0").events("model_call")
    assert double.calls == len(recorded) < asked
    # the cycle stepper opens each sample's prompt and raw answer from the candidate row
    pytest.importorskip("panel")
    from widgets.cycle_stepper import llm_sample, sample_markdown

    bad = llm_sample(out / "runs" / "random_k-seed0", "demo/add", 1, 0)
    good = llm_sample(out / "runs" / "random_k-seed0", "demo/add", 1, 2)
    assert bad is not None and good is not None
    assert not bad["valid"] and bad["reason"].startswith("unparseable") and bad["raw"].startswith("I would")
    assert good["valid"] and "return a + b" in good["raw"] and "def add(a, b):" in (good["prompt"] or "")
    assert "assert add(1, 2) == 3" in good["prompt"] and "add(5, 7)" not in good["prompt"]  # public only
    assert "**invalid**: unparseable" in sample_markdown(bad)
    # resuming answers everything from the records: the model is not asked again
    calls = double.calls
    assert report(run_experiment(cfg, out, resume=True)) == text and double.calls == calls


def test_hybrid_policy_fills_with_mutants_and_round_trips(tmp_path):
    import random

    from rsi_workbench.domains.code_repair import RepairTask, Sandbox
    from rsi_workbench.domains.code_repair.binding import (
        CodeRepairEnvironment,
        CompileVerifier,
        RepairPolicy,
    )
    from rsi_workbench.domains.code_repair.llm_coder import LLMCoder, is_invalid

    tasks = [RepairTask.model_validate(t) for t in TASKS]
    env = CodeRepairEnvironment(tasks, Sandbox(), track_attempts=True)
    state, _ = env.initial("demo/count")
    coder = LLMCoder(FixingModelDouble(), sample_cap=2)  # prose, wrong signature: no valid sample
    policy = RepairPolicy(env, kind="hybrid", llm=coder)
    cands = policy.propose("demo/count", state, 3, random.Random(0))
    assert [bool(is_invalid(c)) for c in cands] == [True, True, False, False, False]
    assert [c.meta["coder"] for c in cands[2:]] == ["mutation"] * 3
    verdicts = [CompileVerifier().validate("demo/count", state, c) for c in cands]
    assert [ok for ok, _ in verdicts] == [False, False, True, True, True]
    assert verdicts[0][1].startswith("unparseable")
    again = RepairPolicy.from_bytes(env, policy.to_bytes(), coder)
    assert again.kind == "hybrid" and again.version == policy.version and again.version.endswith("-hybrid")
    # an executed attempt is carried by the state (and its JSON) for the next prompt
    obs = env.evaluate("demo/count", state, cands[2])
    nxt = env.advance("demo/count", state, cands[2], obs)
    assert nxt.attempts[-1][0] == cands[2].program
    assert env.load_state(env.dump_state(nxt)) == nxt
    assert "attempts" not in CodeRepairEnvironment(tasks, Sandbox()).dump_state(state)
