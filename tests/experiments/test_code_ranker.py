"""Issue 33: pools that contain a fix (determinism, exactly one fix, resume after a kill), the
rank-pools output line, and the readout as a protocol Predictor (tiny random model, no download)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from rsi_workbench.domains.code_repair.pools import PoolsError, build_pools, draw_pools, read_rows

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "code_repair_tasks" / "tasks.jsonl"
TASKS = ("mine/is_leap", "mine/median")  # both fixable within their first 4 mutants


class Killed(Exception):
    """Stands in for a kill after the first task's row is written."""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("pools")
    rows = [json.loads(x) for x in EXAMPLES.read_text().splitlines() if x.strip()]
    tf = tmp / "tasks.jsonl"
    tf.write_text("".join(json.dumps(r) + "\n" for r in rows if r["task_id"] in TASKS))
    d = tmp / "pools"

    def kill(row: dict[str, Any]) -> None:
        raise Killed(row["task_id"])

    with pytest.raises(Killed):
        build_pools(str(tf), d, n=4, pools_per_task=2, on_task=kill)
    first = read_rows(d / "candidates.jsonl")
    with open(d / "candidates.jsonl", "a") as f:
        f.write('{"task_id": "mine/med')  # a torn line, as a kill mid-write leaves
    resumed: list[str] = []
    data = build_pools(str(tf), d, n=4, pools_per_task=2, on_task=lambda r: resumed.append(r["task_id"]))
    return {"dir": d, "file": tf, "data": data, "first": first, "resumed": resumed}


def test_resume_after_kill_redoes_no_finished_task(built: dict[str, Any]) -> None:
    assert [r["task_id"] for r in built["first"]] == [TASKS[0]]
    assert built["resumed"] == [TASKS[1]]  # the finished task is not proposed or executed again
    rows = read_rows(built["dir"] / "candidates.jsonl")
    assert [r["task_id"] for r in rows] == list(TASKS)  # the torn line was cut
    assert rows[0] == built["first"][0]


def test_pools_are_deterministic_with_exactly_one_fix(built: dict[str, Any], tmp_path: Path) -> None:
    data, d = built["data"], built["dir"]
    assert data["fixable"] == list(TASKS) and len(data["pools"]) == 2
    rows = {r["task_id"]: r for r in read_rows(d / "candidates.jsonl")}
    for p in data["pools"]:
        cands = rows[p["task_id"]]["candidates"]
        assert len(set(p["candidates"])) == 4
        assert [i for i in p["candidates"] if cands[i]["fix"]] == [p["fix"]]
    m = data["manifest"]
    assert m["n"] == 4 and m["seed"] == 0 and m["coder"] == "mutation-sbfl" and len(m["tasks_sha256"]) == 64
    assert m["sandbox_semantics"] and m["exec_cache_key"]
    again = tmp_path / "again"  # a fresh directory, executions answered by the copied cache
    again.mkdir()
    shutil.copy(d / "exec_cache.jsonl", again / "exec_cache.jsonl")
    build_pools(str(built["file"]), again, n=4, pools_per_task=2)
    for name in ("candidates.jsonl", "pools.json"):
        assert (again / name).read_bytes() == (d / name).read_bytes()
    with pytest.raises(PoolsError, match="seed"):
        build_pools(str(built["file"]), again, n=4, pools_per_task=2, seed=1)


def test_draw_pools_caps_and_is_seeded() -> None:
    row = {"task_id": "t", "candidates": [{"fix": i in (0, 5)} for i in range(8)]}
    a, b = draw_pools(row, 5, 0), draw_pools(row, 5, 0)
    assert a == b and len(a) == 5 and len({frozenset(p["candidates"]) for p in a}) == 5
    assert draw_pools(row, 5, 1) != a
    assert all(sum(row["candidates"][i]["fix"] for i in p["candidates"]) == 1 for p in a)
    assert draw_pools({"task_id": "u", "candidates": [{"fix": True}] * 3 + [{"fix": False}] * 2}, 4, 0) == []


def test_rank_pools_prints_the_line(built: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    from rsi_workbench.cli import main

    d, tf = built["dir"], built["file"]
    # a task file: its pools are built (here: found, same settings) in --pools-dir
    argv = ["tasks", "rank-pools", str(tf), "--pools-dir", str(d), "--n", "4", "--pools-per-task", "2"]
    for ranker in ("random", "features_readout"):
        assert main([*argv, "--ranker", ranker]) == 0
        out = capsys.readouterr().out
        assert re.search(r"^top1_recall: \d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]$", out, re.M), out
        assert re.search(r"^auroc_within_task: \d\.\d{3} ", out, re.M), out
    assert main(["tasks", "pools", str(tf), "--out", str(d), "--n", "4", "--pools-per-task", "2"]) == 0
    assert "fixable tasks: 2  pooled tasks: 2  pools: 2" in capsys.readouterr().out  # resumed: nothing to do
    assert main(["tasks", "rank-pools", str(d), "--ranker", "minilm_verifier"]) == 2
    assert "needs at least world.folds = 4 pooled tasks, the pools hold 2" in capsys.readouterr().err


@pytest.fixture(scope="module")
def tiny_scorer() -> Any:
    pytest.importorskip("transformers")
    from rsi_workbench.discovery.sft import byte_level_tokenizer, tiny_causal_lm
    from rsi_workbench.domains.code_repair.lm_ranker import LMScorer
    from rsi_workbench.models.local import TransformersLM

    tok = byte_level_tokenizer()
    lm = TransformersLM(
        tiny_causal_lm(len(tok), seed=0), tok, name="tiny", identity="transformers:tiny", cpu_threads=1
    )
    return LMScorer(lm, "transformers:tiny")


def test_lm_ranker_on_pools(built: dict[str, Any], tiny_scorer: Any) -> None:
    from rsi_workbench.domains.code_repair.rank_pools import run_rank_pools

    for ranker in ("lm", "lm_readout"):
        text, res = run_rank_pools(str(built["dir"]), ranker, model=tiny_scorer)
        assert re.search(r"^top1_recall: ", text, re.M) and "tok/s" in text
        assert 0.0 <= res["top1_recall"][0] <= 1.0


def test_readout_is_a_protocol_predictor(built: dict[str, Any], tiny_scorer: Any) -> None:
    from rsi_workbench.agents import Candidate
    from rsi_workbench.domains.code_repair import load_task_file
    from rsi_workbench.domains.code_repair.lm_ranker import ReadoutPredictor
    from rsi_workbench.protocol.batching import predict_items
    from rsi_workbench.protocol.spec import Observation, PairRecord, Predictor

    tasks = {t.task_id: t for t in load_task_file(built["file"])}
    rows = read_rows(built["dir"] / "candidates.jsonl")

    def acts(r: dict[str, Any]) -> list[Candidate]:
        return [
            Candidate(c["program"], "", {"operator": c["operator"], "suspiciousness": c["suspiciousness"]})
            for c in r["candidates"]
        ]

    class State:  # test double of a RepairState: the kept program
        def __init__(self, program: str):
            self.program = program

    probe = ReadoutPredictor(
        tasks, tiny_scorer, {"names": [], "coef": [], "intercept": 0.0, "mean": [], "scale": []}
    )
    train = []
    for r in rows:
        feats = probe.features(
            r["task_id"], tasks[r["task_id"]].program, [a.program for a in acts(r)], [a.meta for a in acts(r)]
        )
        train += [(f, float(c["fix"])) for f, c in zip(feats, r["candidates"], strict=True)]
    pred = ReadoutPredictor.fit(tasks, tiny_scorer, train)
    assert isinstance(pred, Predictor)
    items = [(r["task_id"], State(tasks[r["task_id"]].program), acts(r)) for r in rows]
    one = [pred.predict(*it) for it in items]
    many, _ = predict_items(pred, items)  # the batched interface of the concurrent cycle
    assert [[p.utility_terms for p in ps] for ps in many] == [[p.utility_terms for p in ps] for ps in one]
    assert all(
        0.0 < p.utility_terms["p_all_pass"] < 1.0 and "delta_logp" in p.extra for ps in one for p in ps
    )
    back = ReadoutPredictor.from_bytes(pred.to_bytes(), tasks, tiny_scorer)
    assert back.version == pred.version and back.predict(*items[0])[0] == one[0][0]
    r0, c0 = rows[0], rows[0]["candidates"][0]
    rec = PairRecord(
        task_id=r0["task_id"], cycle=0, state={"program": tasks[r0["task_id"]].program},
        action={"program": c0["program"], "meta": {"operator": c0["operator"], "suspiciousness": c0["suspiciousness"]}},
        prediction=one[0][0], observation=Observation(utility_terms={"p_all_pass": 1.0}), policy_version="p0",
        predictor_version=pred.version, split="update",
    )  # fmt: skip
    adapted = pred.adapt([rec] * 5, seed=0)
    assert adapted.version != pred.version and len(adapted.train) == len(train) + 5
    assert pred.adapt_cost(5) == 5.0
    feat = ReadoutPredictor.fit(
        tasks,
        None,
        [({k: v for k, v in f.items() if not k.startswith("delta")}, y) for f, y in train],
        use_lm=False,
    )
    assert "delta_logp" not in feat.weights["names"] and len(feat.predict(*items[0])) == len(items[0][2])


def test_rank_table_runs_the_arms_and_applies_the_rule(built: dict[str, Any], tmp_path: Path) -> None:
    from rsi_workbench.domains.code_repair.rank_table import Rule, run_table, verdict

    cfg = tmp_path / "rank.yaml"
    cfg.write_text(
        f"tasks: {built['file']}\npools_dir: {built['dir']}\nn: 4\npools_per_task: 2\n"
        "rankers: [random, features_readout, minilm_verifier]\nprimary: features_readout\n"
    )
    text, summary = run_table(cfg)
    assert "[minilm_verifier]\nnot run:" in text and set(summary["results"]) >= {"random", "features_readout"}
    assert text.splitlines()[-1].startswith("verdict (features_readout, pre-registered rule): ")
    rule = Rule()
    assert verdict([0.5, 0.3, 0.7], [0.2, 0.1, 0.3], rule) == "convincing"
    assert verdict([0.5, 0.3, 0.7], [0.35, 0.2, 0.5], rule) == "inconclusive"
    assert verdict([0.5, 0.3, 0.7], None, rule).startswith("inconclusive (the bar")
    assert verdict([0.28, 0.15, 0.39], None, rule) == "falsified"
    assert verdict([0.28, 0.15, 0.45], None, rule) == "inconclusive"


class EchoServerDouble:
    """Test double of an OpenAI-compatible server whose ``/completions`` answers ``echo`` with
    prompt log-probabilities (what the probe asks); everything else is 404."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:
                pass

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/v1/models":
                    return self._send(200, {"object": "list", "data": [{"id": "m"}]})
                self._send(404, {"detail": "Not Found"})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                if self.path == "/v1/completions":
                    lp = {"tokens": ["a", "b"], "token_logprobs": [None, -1.0]} if body.get("echo") else None
                    choice = {"index": 0, "text": "x", "finish_reason": "length", "logprobs": lp}
                    return self._send(200, {"model": "m", "choices": [choice]})
                self._send(404, {"detail": "Not Found"})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_a_served_model_is_refused_for_scoring_before_any_call(
    built: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rsi_workbench.cli import main

    s = EchoServerDouble()
    try:
        model = tmp_path / "model.yaml"
        model.write_text(f"model: {{backend: openai, base_url: '{s.base_url}', name: m}}\n")
        assert main(["tasks", "rank-pools", str(built["dir"]), "--ranker", "lm", "--model", str(model)]) == 2
    finally:
        s.close()
    err = capsys.readouterr().err
    assert "--model: needs score" in err and "prompt log-probabilities with echo" in err, err


def test_minilm_rankers_train_cross_fitted_on_the_pools(tmp_path: Path) -> None:
    """The experiment's predictors (tiny random encoder here) score the committed contrast pools."""
    pytest.importorskip("torch")
    from rsi_workbench.domains.code_repair.pool_minilm import minilm_scores
    from rsi_workbench.domains.code_repair.pools import load_pools
    from rsi_workbench.domains.code_repair.rank_pools import evaluate

    src = (
        Path(__file__).resolve().parents[2]
        / "benchmarks"
        / "data"
        / "code_ranker"
        / "humanevalfix-contrast-tasks"
    )
    data, rows = load_pools(src)
    data["manifest"]["tasks"] = str(EXAMPLES)
    world = {"encoder": "tiny", "folds": 3, "train_epochs": 1}
    scores = minilm_scores("minilm_verifier", data, rows, world=world, train_dir=tmp_path / "train")
    assert sorted(scores) == sorted(data["pooled_tasks"]) and all(
        0 < p < 1 for s in scores.values() for p in s.values()
    )
    res = evaluate(data, rows, scores)
    assert 0.0 <= res["top1_recall"][0] <= 1.0 and res["pools"] == len(data["pools"])
    again = minilm_scores("minilm_verifier", data, rows, world=world, train_dir=tmp_path / "train")
    assert again == scores  # the second call loads the checkpoints


class ReferenceModelDouble:
    """Test double for ``agents.LLM``: every sample is the task's reference in a fenced block."""

    identity = "double:reference"
    name = "reference-double"
    capabilities = frozenset({"chat"})

    def __init__(self, refs: dict[str, str]):
        self.refs, self.calls = refs, 0

    def chat(self, messages: Any, *, n: int = 1, **_: Any) -> Any:
        from rsi_workbench.models.interface import ChatResult

        self.calls += 1
        entry = next(e for e in self.refs if f"def {e}(" in messages[-1]["content"])
        return ChatResult(
            [f"```python\n{self.refs[entry]}```"] * n, ["stop"] * n, 50, 20 * n, 0.0, self.identity, self.name
        )


def test_pools_with_a_hybrid_model_coder(built: dict[str, Any], tmp_path: Path) -> None:
    from rsi_workbench.domains.code_repair import load_task_file
    from rsi_workbench.domains.code_repair.coder_settings import CoderSettings

    tasks = load_task_file(built["file"])[:1]
    tf = tmp_path / "one.jsonl"
    tf.write_text(tasks[0].model_dump_json() + "\n")
    double = ReferenceModelDouble({t.entry_point: str(t.reference) for t in tasks})
    d = tmp_path / "hybrid"
    shutil.copytree(
        built["dir"], d, ignore=shutil.ignore_patterns("candidates.jsonl", "pools.json", "manifest.json")
    )  # the exec cache
    data = build_pools(
        str(tf), d, n=6, pools_per_task=2, coder=CoderSettings(kind="hybrid"), coder_backend=double
    )
    assert data["manifest"]["coder"]["kind"] == "hybrid" and double.calls >= 1
    cands = read_rows(d / "candidates.jsonl")[0]["candidates"]
    assert cands[0]["operator"] == "llm" and cands[0]["fix"] and len(cands) == 6
    assert all(sum(cands[i]["fix"] for i in p["candidates"]) == 1 for p in data["pools"])
    again = build_pools(
        str(tf), d, n=6, pools_per_task=2, coder=CoderSettings(kind="hybrid"), coder_backend=double
    )
    assert again == data  # resumed: nothing proposed again
    with pytest.raises(PoolsError, match="coder"):
        build_pools(str(tf), d, n=6, pools_per_task=2)
