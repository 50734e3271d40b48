"""The program agent on a tiny OpenEvolve directory: the initial program is scored once (its own
event, never the replay root; a resume does not score it again) and every report says "initial →
best", flagging a run where nothing beat it; answers cut at ``max_tokens`` are counted and warned
about; a ``usd`` budget charges each live call its price and refuses calls once spent."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from rsi_workbench.budget import USD, BudgetExceeded, BudgetLedger
from rsi_workbench.experiments.dreaming.program_report import program_report
from rsi_workbench.experiments.dreaming.program_runs import Config, run_experiment
from rsi_workbench.models import ChatResult, ModelPrice, RecordedLLM
from rsi_workbench.records import Run

# the initial program is the optimum: every candidate is worse (or equal), and the report says so
INITIAL = "# EVOLVE-BLOCK-START\ndef guess():\n    return 0.8\n# EVOLVE-BLOCK-END\n"
EVALUATOR = """import importlib.util


def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("candidate", program_path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    x = float(mod.guess())
    return {"combined_score": 1.0 - (x - 0.8) ** 2, "x": x}
"""


def task_dir(root: Path) -> Path:
    d = root / "task"
    d.mkdir()
    (d / "initial_program.py").write_text(INITIAL)
    (d / "evaluator.py").write_text(EVALUATOR)
    return d


def config(root: Path, **kw: Any) -> Config:
    body: dict[str, Any] = {
        "task": {"kind": "openevolve", "dir": str(task_dir(root)), "timeout": 20},
        "arms": ["mutate"],
        "seeds": [0],
        "W": 2,
        "calls": 2,
        "calls_per_round": 2,
        "policy": "greedy_deepest_best",
    }
    return Config(**{**body, **kw})


class CutModel:
    """A scripted model test double: every answer stopped at the token limit (``length``)."""

    def __init__(self, text: str, finish: str = "length"):
        self.text, self.finish = text, finish

    def chat_batch(self, conversations: Sequence[Sequence[Any]], **kw: Any) -> list[ChatResult]:
        return [
            ChatResult([self.text], [self.finish], 10, 10, 0.0, "scripted", "double") for _ in conversations
        ]


def test_initial_program_scored_once_and_reported(tmp_path: Path, monkeypatch: Any) -> None:
    cfg = config(tmp_path)
    out = tmp_path / "run"
    run_experiment(cfg, out)
    run = Run.open(out)
    (init,) = [e.payload for e in run.events("initial_program_scored")]
    assert init["valid"] and init["score"] == 1.0 and init["reason"] == "" and init["metrics"]["x"] == 0.8
    assert run.artifacts.get_json(init["program"]) == INITIAL
    started = run.events("tree_started")[0].payload
    assert started["root_node"] is None  # the replay root stays unscored: no node, no score
    assert all(e.payload["id"] != started["root_node"] for e in run.events("tree_node"))
    text = program_report(out)
    assert "initial program: score 1.000000 (valid)" in text
    assert "initial 1.000000 → best" in text and "no candidate beat the initial program" in text
    assert "NOTHING BEAT THE INITIAL PROGRAM in 1 lane(s)" in text
    from rsi_workbench.widgets import tree_inspector
    from rsi_workbench.widgets.commands import dashboards_for, run_kinds

    assert tree_inspector.applies(out, run_kinds(out)) and "trees" in dashboards_for(
        out
    )  # the trees dashboard shows it too
    assert any("initial 1.000000 → best" in ln for ln in tree_inspector.baseline_lines(out))
    assert "no candidate beat" in tree_inspector.export_sections(out)[0].text
    # a resume reads the score back from the events: nothing is evaluated again
    from rsi_workbench.domains.openevolve import OpenEvolveTask

    def no_evaluation(*a: Any, **kw: Any) -> Any:
        raise AssertionError("evaluated again on resume")

    monkeypatch.setattr(OpenEvolveTask, "evaluate_program", no_evaluation)
    run_experiment(cfg, out, resume=True)
    assert len(Run.open(out).events("initial_program_scored")) == 1


def test_answers_cut_at_max_tokens_are_counted_and_warned(tmp_path: Path, capsys: Any) -> None:
    cfg = config(tmp_path, arms=["program"], max_tokens=16)
    cut = "```python\ndef guess():\n    return 0.7\nfor k in ("  # parses once trimmed: valid, but cut
    run_experiment(cfg, tmp_path / "run", llm=CutModel(cut))
    err = capsys.readouterr().err
    assert "warning: 2 of 2 model answers were cut at max_tokens (16)" in err
    assert "NOTHING BEAT THE INITIAL PROGRAM" in err
    text = program_report(tmp_path / "run")
    assert "cut at max_tokens: 2" in text and "finish_reason 'length'" in text


class PricedDouble:
    """A backend test double: 1000 prompt and 500 completion tokens per answer."""

    identity = "double:priced"
    name = "priced"

    def chat(self, messages: Any, *, n: int = 1, **kw: Any) -> ChatResult:
        return ChatResult(["ok"] * n, ["stop"] * n, 1000, 500, 0.01, self.identity, self.name)


def test_usd_budget_charges_the_price_and_refuses_once_spent(tmp_path: Path) -> None:
    price = ModelPrice(input_per_1k=0.5, output_per_1k=2.0)
    assert price.cost(1000, 500) == pytest.approx(1.5)  # 1000/1000·0.5 + 500/1000·2.0
    assert price.cost(0, 0) == 0.0 and price.cost(2000, 0) == pytest.approx(1.0)
    run = Run.create(tmp_path / "r", {})
    ledger = BudgetLedger.open(run, {USD: 4.0})
    lm = RecordedLLM.wrap(PricedDouble(), run=run, ledger=ledger, price=price)
    ask = [{"role": "user", "content": "a"}]
    lm.chat(ask)
    lm.chat(ask, seed=1)
    assert ledger.remaining(USD) == pytest.approx(1.0)
    lm.chat(ask, seed=2)  # costs 1.5 with 1.0 left: made, charged what is left; the budget is spent
    assert ledger.remaining(USD) == 0.0
    spent = [e.payload for e in run.events("budget_spent") if e.payload["budget"] == USD]
    assert spent[-1]["cost_usd"] == pytest.approx(1.5) and spent[-1]["exhausted"] is True
    assert [e.payload["cost_usd"] for e in run.events("model_call")] == pytest.approx([1.5] * 3)
    with pytest.raises(BudgetExceeded, match="'usd' is spent"):
        lm.chat(ask, seed=3)
    assert len(run.events("model_call")) == 3
    with pytest.raises(ValueError, match="needs the model's price"):
        RecordedLLM.wrap(PricedDouble(), run=run, ledger=ledger)


class AnswerDouble(PricedDouble):
    """A backend test double: a valid (worse) block, 10 prompt and 10 completion tokens per answer."""

    def chat(self, messages: Any, *, n: int = 1, **kw: Any) -> ChatResult:
        text = "```python\ndef guess():\n    return 0.79\n```"
        return ChatResult([text] * n, ["stop"] * n, 10, 10, 0.01, self.identity, self.name)


def test_usd_budget_stops_the_program_lanes_and_is_reported(tmp_path: Path, monkeypatch: Any) -> None:
    from rsi_workbench.experiments.dreaming import program_runs

    with pytest.raises(ValidationError, match="usd_budget needs the model's price"):
        config(tmp_path, arms=["program"], usd_budget=1.0)
    (tmp_path / "b").mkdir()
    cfg = config(
        tmp_path / "b",
        arms=["program"],
        calls=6,
        calls_per_round=6,
        usd_budget=0.02,  # each call 10 in + 10 out at 0.5 / 1.0 per 1k: 0.015 — two calls spend it
        model={"name": "default", "cpu_threads": 1, "price": {"input_per_1k": 0.5, "output_per_1k": 1.0}},
    )
    assert cfg.model_dump()["model"]["price"] == {"input_per_1k": 0.5, "output_per_1k": 1.0}
    assert "usd_budget" not in Config(**{**cfg.model_dump(), "usd_budget": None}).model_dump()

    def open_double(mcfg: Any, run: Any, ledger: Any = None, **kw: Any) -> RecordedLLM:
        return RecordedLLM.wrap(
            AnswerDouble(), run=run, ledger=ledger, price=mcfg.price, role=kw.get("role", "")
        )

    monkeypatch.setattr(program_runs, "open_model", open_double)
    out = tmp_path / "run"
    run_experiment(cfg, out)
    run = Run.open(out)
    assert len(run.events("tree_node")) == 2  # one round of W = 2, then the third call is refused
    assert [e.payload["cost_usd"] for e in run.events("model_call")] == pytest.approx([0.015, 0.015])
    (fin,) = [e.payload for e in run.events("lane_finished")]
    assert "'usd' is spent" in fin["stopped"] and fin["calls"] == 2
    text = program_report(out)
    assert "model cost: $0.0300 over 2 live call(s); usd budget $0.0200: spent $0.0200, left $0.0000" in text
    assert "spent out — 1 lane(s) stopped early" in text
    run_experiment(cfg, out, resume=True)  # resumed: the ledger is rebuilt, nothing more is called
    assert len(Run.open(out).events("model_call")) == 2
