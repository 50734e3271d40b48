"""Token totals in reports and the LLM-calls view, on runs whose calls a scripted test double made."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rsi_workbench.models import ChatResult, RecordedLLM
from rsi_workbench.models.usage import model_usage, usage_lines, with_model_calls
from rsi_workbench.records import Run


class ScriptedLLMDouble:
    """Test double for a model: answers from a script, with fixed token counts per answer."""

    identity, name = "double:scripted", "scripted"

    def __init__(self, script: list[str]):
        self.script = list(script)
        self.calls = 0

    def chat(self, messages, *, n=1, temperature=0.0, top_p=1.0, max_tokens=512, stop=None, seed=None):
        self.calls += 1
        texts = [self.script.pop(0) for _ in range(n)]
        return ChatResult(texts, ["stop"] * (n - 1) + ["length"], 10, 3 * n, 0.25, self.identity, self.name)


def _ask(text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "You are terse."}, {"role": "user", "content": text}]


def _make_calls(run: Run) -> None:
    """generation: 2 calls (one with n=2); critique: 1 call -> 30 tokens in, 12 out, 0.75 s."""
    gen = RecordedLLM.wrap(ScriptedLLMDouble(["a1", "b1", "b2"]), run=run, role="generation")
    gen.chat(_ask("propose one"))
    gen.chat(_ask("propose two"), n=2, temperature=1.0, seed=3)
    RecordedLLM.wrap(ScriptedLLMDouble(["looks <ok>"]), run=run, role="critique").chat(_ask("judge a1"))


@pytest.fixture
def smoke(tmp_path: Path) -> Path:
    """A records_smoke run as its experiment writes it (one dataset checked), without model calls."""
    from rsi_workbench.experiments import records_smoke

    out = tmp_path / "smoke"
    with Run.create(out, records_smoke.Config(datasets=["wine"]), kind="records_smoke") as run:
        sha = run.artifacts.put_json({"dataset": "wine", "rows": 178}, name="wine.summary.json")
        event = {"dataset": "wine", "ok": True, "detail": "sha256 ok", "rows": 178, "artifact": sha}
        run.append("dataset_checked", event, cycle=0)
        run.append("smoke_finished", {"datasets": 1})
    return out


def test_report_without_calls_is_unchanged_and_with_calls_prints_totals(smoke: Path, tmp_path: Path) -> None:
    from rsi_workbench.experiments import records_smoke

    before = records_smoke.report(smoke)
    assert "model calls" not in before and with_model_calls(before, smoke) == before
    assert usage_lines(model_usage(smoke)) == ["model calls: none"]

    run_dir = tmp_path / "run"
    shutil.copytree(smoke, run_dir)
    with Run.open(run_dir, mode="a") as run:
        _make_calls(run)
    text = records_smoke.report(run_dir)
    head, tail = text.split("\n\nmodel calls: ")
    # the report itself is untouched (the calls' request and response artifacts are verified too)
    assert head == before.replace(str(smoke), str(run_dir)).replace("1 artifacts", "7 artifacts")
    assert tail.splitlines() == [
        "3 live (30 tokens in + 12 out = 42, 0.8 s)",
        "  critique    1 live (10 tokens in + 3 out = 13, 0.2 s)",
        "  generation  2 live (20 tokens in + 9 out = 29, 0.5 s)",
    ]

    # a resumed session asks the same: answered from the records, noted as replays, charged nothing
    with Run.open(run_dir, mode="a") as run:
        double = ScriptedLLMDouble([])
        gen = RecordedLLM.wrap(double, run=run, role="generation")
        assert gen.chat(_ask("propose one")).replayed and double.calls == 0
    u = model_usage(run_dir)
    assert (u.live, u.replayed, u.prompt_tokens, u.completion_tokens, u.replayed_tokens) == (3, 1, 30, 12, 13)
    assert "1 replayed (13 tokens, not charged)" in records_smoke.report(run_dir).splitlines()[-1]


def test_totals_of_an_experiment_tree_sum_its_runs(tmp_path: Path) -> None:
    for name in ("runs/a", "runs/b"):
        with Run.create(tmp_path / "exp" / name, {}) as run:
            _make_calls(run)
    Run.create(tmp_path / "exp", {}).close()  # the experiment's own log, no calls
    from rsi_workbench.records.compact import compact_run

    assert compact_run(tmp_path / "exp" / "runs" / "a").skipped is None  # a compacted run counts too
    assert (tmp_path / "exp" / "runs" / "a" / "events.jsonl.gz").exists()
    u = model_usage(tmp_path / "exp")
    assert (u.live, u.prompt_tokens, u.completion_tokens) == (6, 60, 24)
    assert {r: x.live for r, x in u.by_role.items()} == {"generation": 4, "critique": 2}


def test_llm_calls_view_rows_role_filter_and_detail(tmp_path: Path) -> None:
    pytest.importorskip("panel")
    from rsi_workbench.widgets.llm_calls import ALL_ROLES, NO_CALLS, LLMCallsView
    from rsi_workbench.widgets.run_events import RunEventsExplorer

    with Run.create(tmp_path / "run", {}) as run:
        run.append("cycle_started", {}, cycle=0)
        _make_calls(run)
    view = LLMCallsView(run=str(tmp_path / "run"))
    assert [(r["role"], r["in"], r["out"], r["finish"], r["source"]) for r in view.rows] == [
        ("generation", 10, 3, "length", "live"),
        ("generation", 10, 6, "stop, length", "live"),
        ("critique", 10, 3, "length", "live"),
    ]
    assert view.rows[0]["model"] == "double:scripted · scripted" and view.rows[0]["latency_s"] == 0.25
    assert view.param.role.objects == [ALL_ROLES, "critique", "generation"]
    view.role = "critique"
    assert [r["seq"] for r in view.rows] == [view.rows[0]["seq"]] and len(view._table.value) == 1
    html = view.select(0)
    assert "You are terse." in html and "judge a1" in html and "looks &lt;ok&gt;" in html  # escaped
    view.role = "generation"
    d = view.detail(view.rows[1]["seq"])
    assert d["samples"] == ["b1", "b2"] and d["messages"][-1]["content"] == "propose two"
    assert d["params"]["n"] == 2
    assert "b1" in view.select(1) and "b2" in view.select(1)

    explorer = RunEventsExplorer(run=str(tmp_path / "run"), poll_ms=0)  # embedded in the dashboard
    calls = explorer.llm_calls
    assert len(calls.rows) == 3
    calls.select(2)  # the critique call stays shown while the run grows
    with Run.open(tmp_path / "run", mode="a") as run:
        RecordedLLM.wrap(ScriptedLLMDouble(["again"]), run=run, role="generation").chat(_ask("propose one"))
    explorer._poll()  # what the served page's periodic callback does
    assert [r["source"] for r in calls.rows] == ["live", "live", "live", "replayed"]
    assert calls.rows[3]["latency_s"] is None and "judge a1" in calls._detail.object

    from rsi_workbench.widgets.run_events import export_sections

    events, llm = export_sections(tmp_path / "run")  # the static export gets the calls too
    assert llm.title == "LLM calls" and llm.text.startswith("model calls: 3 live")
    cells = llm.figures[0].data[0].cells.values
    assert list(cells[1]) == ["generation", "generation", "critique", "generation"]
    assert list(cells[-1])[2] == "looks &lt;ok&gt;"  # first sample, escaped: plotly tables read tags

    with Run.create(tmp_path / "none", {}) as run:
        run.append("cycle_started", {}, cycle=0)
    empty = LLMCallsView(run=str(tmp_path / "none"))
    assert empty.rows == [] and NO_CALLS in empty._summary.object
    assert empty.__panel__().objects == [empty._summary]  # no table laid out
    assert [sec.title for sec in export_sections(tmp_path / "none")] == ["Run events"]
    with Run.open(tmp_path / "none", mode="a") as run:  # the first call of a growing run
        RecordedLLM.wrap(ScriptedLLMDouble(["hi"]), run=run, role="generation").chat(_ask("hello"))
    empty._tail.poll()
    empty.refresh()
    assert len(empty.rows) == 1 and len(empty.__panel__().objects) == 3
