"""``n`` that is really ``n`` (a server that ignores it gets the missing samples asked with declared
seeds, recorded in the call's event), the cross-run call cache (cold and warm runs record the same
events and the same table, budgets charged alike; two processes writing at once; ``models cache
stats|clear``) and ``models chat --base-url`` without ``--model`` (against LatencyServerDouble)."""

from __future__ import annotations

import importlib.util
import json
import multiprocessing
import sys
from pathlib import Path
from typing import Any

import pytest

from rsi_workbench.budget import AGENT_CALLS, MODEL_TOKENS, BudgetLedger
from rsi_workbench.cli import main
from rsi_workbench.models import ModelConfig, RecordedLLM, open_model
from rsi_workbench.models.cache import CallCache
from rsi_workbench.records import Run

ASK = [{"role": "user", "content": "hello"}]
ROOT = Path(__file__).resolve().parents[2]


def _double_module() -> Any:
    spec = importlib.util.spec_from_file_location("server_double", ROOT / "benchmarks" / "server_double.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("server_double", mod)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def latency_server():
    made = []

    def make(**kw: Any) -> Any:
        srv = _double_module().LatencyServerDouble(**kw)
        made.append(srv)
        return srv

    yield make
    for s in made:
        s.close()


def test_a_server_that_ignores_n_gets_the_missing_samples_with_recorded_seeds(faulty_server, tmp_path):
    two = {
        "model": "m1",
        "choices": [
            {"index": i, "message": {"role": "assistant", "content": f"c{i}"}, "finish_reason": "stop"}
            for i in range(2)
        ],
        "usage": {"prompt_tokens": 4, "completion_tokens": 2},
    }
    srv = faulty_server([(200, two)])  # first answers 2 of the 4 asked, then one choice whatever n
    cfg = ModelConfig(backend="openai", name="m1", base_url=srv.base_url)
    run = Run.create(tmp_path / "run", {})
    lm = open_model(cfg, run)
    r = lm.chat(ASK, n=4, seed=100, temperature=0.8)
    assert len(r.texts) == 4 and r.texts[:2] == ["c0", "c1"]
    assert srv.requests[0]["seed"] == 100 and sorted(q["seed"] for q in srv.requests[1:]) == [102, 103]
    assert "n" not in srv.requests[1] and "n" not in srv.requests[2]  # fills ask for one sample each
    r1 = lm.chat(ASK, n=3, seed=7)  # the double now ignores n entirely: 2 filled
    assert len(r1.texts) == 3 and sorted(q["seed"] for q in srv.requests[3:]) == [7, 8, 9]
    assert lm.chat(ASK, n=1, seed=7).texts == ["echo: hello"]  # nothing to fill: nothing recorded
    run.close()
    events = [e.payload for e in Run.open(tmp_path / "run").events("model_call")]
    assert events[0]["n_filled"] == {"returned": 2, "filled": 2, "seeds": [102, 103]}
    assert events[1]["n_filled"] == {"returned": 1, "filled": 2, "seeds": [8, 9]}
    assert "n_filled" not in events[2]


class SeededEchoLM:
    """Test double: a deterministic backend (the answer depends only on the request) that counts calls."""

    name, identity = "echo", "double:echo"
    capabilities = frozenset({"chat", "complete", "score"})

    def __init__(self) -> None:
        self.calls = 0

    def chat(self, messages: Any, *, n: int = 1, seed: int | None = None, **kw: Any) -> Any:
        from rsi_workbench.models import ChatResult

        self.calls += 1
        last = messages[-1]["content"]
        texts = [f"{last}/{seed}/{i}" for i in range(n)]
        return ChatResult(texts, ["stop"] * n, 3, 2 * n, 0.01 * self.calls, self.identity, self.name)

    def score(self, prompt: str, continuations: Any, *, end: bool = False) -> list[float]:
        self.calls += 1
        return [-float(len(c)) for c in continuations]


def _session(lm: RecordedLLM) -> list[Any]:
    out = [lm.chat(ASK, n=2, seed=1).texts, lm.chat(ASK, n=2, seed=1).texts]  # ordinals 0 and 1
    out.append([r.texts for r in lm.chat_batch([ASK, [{"role": "user", "content": "b"}]], seed=3)])
    out.append(lm.score("p", ["a", "bb"]))
    return out


def _cold_or_warm(tmp_path: Path, name: str, cache: CallCache) -> tuple[list[Any], list[Any], Any, int]:
    backend = SeededEchoLM()
    run = Run.create(tmp_path / name, {})
    ledger = BudgetLedger({AGENT_CALLS: 10, MODEL_TOKENS: 1000})
    lm = RecordedLLM.wrap(backend, run=run, ledger=ledger, cache=cache)
    answers = _session(lm)
    run.close()
    events = [(e.kind, e.payload) for e in Run.open(tmp_path / name).events()]
    return answers, events, dict(ledger.spent), backend.calls


def test_cold_and_warm_runs_record_the_same_calls_and_charge_the_same(tmp_path):
    cache = CallCache(tmp_path / "cache")
    cold = _cold_or_warm(tmp_path, "cold", cache)
    warm = _cold_or_warm(tmp_path, "warm", cache)
    assert cold[3] == 5 and warm[3] == 0  # the warm run asks the backend nothing
    assert warm[0] == cold[0] and warm[2] == cold[2]  # the same answers, the same budget spent
    calls = [p for k, p in warm[1] if k == "model_call"]
    assert len(calls) == 5 and all(p["cached"] for p in calls)
    strip = [(k, {f: v for f, v in p.items() if f != "cached"}) for k, p in warm[1]]
    assert strip == cold[1]  # event for event, the cached flag aside (same artifacts' sha256 too)
    st = cache.stats()
    assert st["entries"] == 5 and st["hits"] == 5 and st["misses"] == 5 and st["writes"] == 5


def _writer(root: str, start: int, out: Any) -> None:
    cache = CallCache(root)
    wrote = [
        cache.put(f"k{i}", 0, "chat", {"texts": [f"from {start}"], "i": i}) for i in range(start, start + 30)
    ]
    out.put(sum(wrote))


def test_two_processes_write_at_once_and_every_entry_is_whole(tmp_path):
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(str(tmp_path / "c"), s, q)) for s in (0, 15)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert q.get() + q.get() == 45  # keys 15..29 written by both: the first writer won, once each
    cache = CallCache(tmp_path / "c")
    got = [cache.get(f"k{i}", 0) for i in range(45)]
    assert all(g is not None and g["i"] == i for i, g in enumerate(got))
    assert cache.stats()["entries"] == 45 and not list((tmp_path / "c").glob("v1/*/.tmp-*"))


def test_models_cache_stats_and_clear(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RSI_WORKBENCH_MODELS", str(tmp_path))
    CallCache().put("k", 0, "chat", {"texts": ["x"]})
    assert main(["models", "cache", "stats"]) == 0
    out = capsys.readouterr().out
    assert f"call cache: {tmp_path / 'cache'}" in out and "entries 1," in out and "writes 1" in out
    assert main(["models", "cache", "clear"]) == 0
    assert "removed 1 entries" in capsys.readouterr().out
    assert CallCache().stats()["entries"] == 0 and CallCache().get("k", 0) is None


def test_cache_is_validated_and_only_on_request():
    assert "cache" not in ModelConfig().model_dump()  # configs without it dump as before
    assert ModelConfig(cache=True).model_dump()["cache"] is True
    with pytest.raises(ValueError, match="cache: true has no use with replay: true"):
        ModelConfig(cache=True, replay=True)
    with pytest.raises(ValueError):
        ModelConfig(cache="sometimes")


def test_a_code_repair_table_is_the_same_from_a_cold_and_a_warm_cache(tmp_path, latency_server, monkeypatch):
    import re

    from rsi_workbench.experiments.code_repair import Config, report, run_experiment

    monkeypatch.setenv("RSI_WORKBENCH_MODELS", str(tmp_path / "models"))
    srv = latency_server()
    demo = ROOT / "tests" / "experiments" / "code_repair_demo.py"
    spec = importlib.util.spec_from_file_location("code_repair_demo", demo)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in mod.TASKS))
    cfg = Config.model_validate(
        {
            "tasks": {"path": str(tasks)},
            "methods": ["random_k"],
            "seeds": [0],
            "coder": {
                "kind": "llm",
                "sample_cap": 2,
                "model": {"backend": "openai", "base_url": srv.base_url, "name": "double", "cache": True},
            },
            "protocol": {"k": 2, "max_rounds": 2, "gate_fraction": 0.34},
        }
    )
    tables = []
    for name in ("cold", "warm"):
        out = run_experiment(cfg, tmp_path / name)
        lines, in_wall = [], False
        for ln in report(out).splitlines():  # without wall times and the model calls' seconds
            in_wall = ln.startswith("wall time") or (in_wall and ln.startswith("  "))
            if not in_wall:
                lines.append(
                    re.sub(
                        r"(= \d+), [0-9.]+ s\)",
                        r"\1, - s)",
                        ln.replace(str(out), "OUT").replace(f"{name}.html", "OUT.html"),
                    )
                )
        tables.append(lines)
    assert len(srv.log) > 0 and CallCache().stats()["hits"] == len(srv.log)  # warm: no request at all
    assert tables[0] == tables[1] and any("random_k" in ln for ln in tables[0])


def test_models_chat_without_model_uses_the_one_served_model(latency_server, capsys):
    srv = latency_server(models=("org/only-model",))
    assert main(["models", "chat", "--base-url", srv.base_url, "what?"]) == 0
    cap = capsys.readouterr()
    assert cap.out.strip() == "echo: what?" and "org/only-model" in cap.err


def test_models_chat_without_model_names_the_choices_or_their_absence(latency_server, capsys):
    srv = latency_server(models=("b-model", "a-model"))
    assert main(["models", "chat", "--base-url", srv.base_url, "hi"]) == 2
    err = capsys.readouterr().err
    assert "serves 2 models; pass --model with one of: a-model, b-model" in err and not srv.log
    none = latency_server(models=())
    assert main(["models", "chat", "--base-url", none.base_url, "hi"]) == 2
    assert "serves no model" in capsys.readouterr().err
