"""Code repair with a model coder: the concurrent cycle writes the sequential loop's records, byte
for byte (the second run answers its sandbox executions from the first's execution cache, so even
the measured runtimes, and with them the snapshot artifacts, are the same)."""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rsi_workbench.domains.code_repair import RepairTask, Sandbox
from rsi_workbench.domains.code_repair.binding import (
    CodeRepairEnvironment,
    CompileVerifier,
    ExecutionCache,
    RepairPolicy,
)
from rsi_workbench.domains.code_repair.llm_coder import LLMCoder
from rsi_workbench.models import RecordedLLM
from rsi_workbench.models.interface import ChatResult
from rsi_workbench.protocol.loop import Loop, ProtocolSettings
from rsi_workbench.protocol.spec import TaskSpec
from rsi_workbench.records import Run

TASKS = [
    RepairTask(
        task_id=f"demo/f{i}",
        entry_point=f"f{i}",
        program=f"def f{i}(a, b):\n    return a - b\n",
        public_tests=[{"id": "p", "kind": "assert", "code": f"assert f{i}(2, 3) == 5"}],
        hidden_tests=[{"id": "h", "kind": "assert", "code": f"assert f{i}(1, 1) == 2"}],
    )
    for i in range(4)
]


class RepairModelDouble:
    """Scripted coder model (test double): per sample a valid program, the fix only for some seeds,
    a function of the request alone; random delays, so concurrent requests finish out of order."""

    name = "repair-double"
    identity = "double:repair"
    capabilities = frozenset({"chat"})

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.now = self.peak = 0

    def chat(self, messages: Sequence[Any], *, n: int = 1, seed: int | None = None, **_: Any) -> ChatResult:
        with self._lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        time.sleep(random.uniform(0, 0.03))
        prompt = messages[-1]["content"]
        entry = next(t.entry_point for t in TASKS if f"def {t.entry_point}(" in prompt)
        texts = []
        for j in range(n):
            h = int(hashlib.sha256(f"{prompt}|{seed}|{j}".encode()).hexdigest(), 16)
            body = "a + b" if h % 4 == 0 else f"a - b + {h % 97}"
            texts.append(f"```python\ndef {entry}(a, b):\n    return {body}\n```")
        with self._lock:
            self.now -= 1
        return ChatResult(texts, ["stop"] * n, 10, 10 * n, 0.0, self.identity, self.name)


def _run(out: Path, execution: str, cache: Path) -> RepairModelDouble:
    model = RepairModelDouble()
    env = CodeRepairEnvironment(TASKS, Sandbox(), cache=ExecutionCache(cache), track_attempts=True)
    coder_run = Run.create(out / "coder", {"coder": "double"})
    coder = LLMCoder(RecordedLLM.wrap(model, run=coder_run, role="coder"), sample_cap=2, prompt_run=coder_run)
    spec = TaskSpec(
        name="code_repair",
        tasks=[t.task_id for t in TASKS],
        environment=env,
        policy=RepairPolicy(env, kind="llm", llm=coder),
        predictor=None,
        load_policy=lambda b: RepairPolicy.from_bytes(env, b, coder),
        verifier=CompileVerifier(),
        budgets={"external_feedback": 1000.0, "update_compute": 1000.0},
    )
    settings = ProtocolSettings(k=2, max_rounds=2, rule="random_k", execution=execution)
    with Run.create(out / "run", {"code_repair": "concurrent"}) as run:
        Loop.open(spec, run, settings, seed=0).run()
    coder_run.close()
    return model


def _effective(run_dir: Path) -> list[Any]:
    """Events minus wall-clock fields (event time; a model call's latency), the execution setting aside."""
    out = []
    for e in Run.open(run_dir).events():
        p = {k: v for k, v in e.payload.items() if k != "latency_s"}
        if e.kind == "loop_opened":
            p["settings"] = {k: v for k, v in p["settings"].items() if k != "execution"}
        out.append((e.seq, e.kind, e.cycle, json.dumps(p, sort_keys=True)))
    return out


def test_a_model_coder_cycle_in_flight_together_writes_the_sequential_records(tmp_path):
    cache = tmp_path / "exec_cache.jsonl"
    _run(tmp_path / "seq", "sequential", cache)
    model = _run(tmp_path / "con", "concurrent", cache)
    assert model.peak > 1  # the tasks' requests were in flight together
    assert Run.open(tmp_path / "con" / "run").manifest["cycle_execution"]["evaluate"] is True
    assert _effective(tmp_path / "con" / "run") == _effective(tmp_path / "seq" / "run")
    assert _effective(tmp_path / "con" / "coder") == _effective(tmp_path / "seq" / "coder")
    kinds = [e.kind for e in Run.open(tmp_path / "con" / "run").events()]
    assert "observation" in kinds and "audit" in kinds
