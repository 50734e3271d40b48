"""Test doubles for the concurrent cycle (named as such): a scripted model with random per-request
delays (threads finish out of order), a policy that asks it for its guesses, an environment that
may be evaluated from threads, and a predictor with ``predict_many``.

Also a runner (``python concurrent_doubles.py OUT [execution]``) for the kill-and-resume test.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from protocol_doubles import (  # noqa: E402
    TestDoubleEnvironment,
    TestDoublePredictor,
    target_of,
)

from rsi_workbench.models import RecordedLLM  # noqa: E402
from rsi_workbench.models.interface import ChatResult  # noqa: E402
from rsi_workbench.protocol.loop import Loop, ProtocolSettings  # noqa: E402
from rsi_workbench.protocol.spec import TaskSpec  # noqa: E402
from rsi_workbench.records import Run  # noqa: E402

SETTINGS = ProtocolSettings(
    adaptation={"enabled": True, "min_examples": 10},
    reliability={"min_predictions": 10},
    policy_update={"enabled": True},
)


class ScriptedModelDouble:
    """Answers a chat with ``n`` offsets scripted from (messages, seed) alone, after a random delay
    (an unseeded RNG: the order in which concurrent requests finish varies); counts requests in flight."""

    name = "scripted"
    identity = "scripted-model-double"
    capabilities = frozenset({"chat"})

    def __init__(self, max_delay: float = 0.02):
        self.max_delay = max_delay
        self._lock = threading.Lock()
        self.in_flight = self.max_in_flight = self.requests = 0

    def chat(self, messages: Sequence[Any], *, n: int = 1, seed: int | None = None, **_: Any) -> ChatResult:
        with self._lock:
            self.in_flight += 1
            self.requests += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            time.sleep(random.uniform(0, self.max_delay))
            text = json.dumps([dict(m) for m in messages], sort_keys=True) + f"|{seed}"
            h = int(hashlib.sha256(text.encode()).hexdigest(), 16)
            rng = random.Random(h)
            offsets = rng.sample(range(1, 13), n)
            return ChatResult([str(o) for o in offsets], ["stop"] * n, 10, n, 0.0, self.identity, self.name)
        finally:
            with self._lock:
                self.in_flight -= 1

    def score(self, prompt: str, continuations: Sequence[str], *, end: bool = False) -> list[float]:
        raise NotImplementedError


class ModelGuessPolicyDouble:
    """Guesses offsets from the current guess towards the target, as the model answers."""

    concurrent_propose = True

    def __init__(self, llm: Any, generation: int = 0):
        self.llm, self.generation = llm, generation
        self.version = f"model-pi-{generation}"

    def propose(self, task_id: str, state: int, k: int, rng: random.Random) -> list[int]:
        direction = 1 if target_of(task_id) >= state else -1
        prompt = f"task {task_id}: guess from {state}, direction {direction}, generation {self.generation}"
        res = self.llm.chat(
            [{"role": "user", "content": prompt}], n=k, temperature=1.0, seed=rng.randrange(2**31)
        )
        return [state + direction * int(t) for t in res.texts]

    def update(self, records: Sequence[Any], imagined: Sequence[Any], *, seed: int) -> ModelGuessPolicyDouble:
        return ModelGuessPolicyDouble(self.llm, self.generation + 1)

    def to_bytes(self) -> bytes:
        return json.dumps({"generation": self.generation}).encode()


class ThreadedEnvironmentDouble(TestDoubleEnvironment):
    """The guess-the-target environment, declared safe to evaluate from threads (random delays).
    Task ``t3`` starts at its target (solved by its initial observation: it never proposes); the
    initial observations and final audits count how many ran at once."""

    concurrent_evaluate = True
    SOLVED_AT_START = frozenset({"t3"})

    def __init__(self, max_delay: float = 0.01):
        super().__init__(0.0)
        self.max_delay = max_delay
        self.calls = 0
        self._lock = threading.Lock()
        self._now = {"initial": 0, "final_audit": 0}
        self.most_at_once = {"initial": 0, "final_audit": 0}

    def _counted(self, what: str, fn: Any) -> Any:
        with self._lock:
            self._now[what] += 1
            self.most_at_once[what] = max(self.most_at_once[what], self._now[what])
        try:
            time.sleep(random.uniform(0, self.max_delay))
            return fn()
        finally:
            with self._lock:
                self._now[what] -= 1

    def initial(self, task_id: str) -> tuple[int, Any]:
        start = target_of(task_id) if task_id in self.SOLVED_AT_START else 0
        return self._counted("initial", lambda: (start, self._observe(task_id, start)))

    def final_audit(self, task_id: str, state: int) -> dict[str, Any]:
        return self._counted(
            "final_audit", lambda: super(ThreadedEnvironmentDouble, self).final_audit(task_id, state)
        )

    def evaluate(self, task_id: str, state: int, action: int) -> Any:
        time.sleep(random.uniform(0, self.max_delay))
        with self._lock:
            self.calls += 1
        return super().evaluate(task_id, state, action)


class BatchPredictorDouble(TestDoublePredictor):
    """The test-double predictor with ``predict_many``; counts its batched calls."""

    batched_calls: list[int] = []

    def predict_many(self, items: Sequence[tuple[str, Any, Sequence[Any]]]) -> list[list[Any]]:
        BatchPredictorDouble.batched_calls.append(len(items))
        return [self.predict(t, s, a) for t, s, a in items]

    def adapt(self, records: Sequence[Any], *, seed: int) -> BatchPredictorDouble:
        return BatchPredictorDouble(self.bias / 2, self.generation + 1)

    @classmethod
    def from_bytes(cls, b: bytes) -> BatchPredictorDouble:
        return cls(**json.loads(b))


class OrderCheckingPredictorDouble(TestDoublePredictor):
    """The test-double predictor without ``predict_many`` (the loop pipelines each task's round); it
    records the order of its calls and fails if two calls overlap (the loop promises one at a time)."""

    calls: list[str] = []
    _busy = threading.Lock()

    def predict(self, task_id: str, state: int, actions: Sequence[int]) -> list[Any]:
        if not OrderCheckingPredictorDouble._busy.acquire(blocking=False):
            raise AssertionError("two predict calls overlapped")
        try:
            time.sleep(random.uniform(0, 0.005))
            OrderCheckingPredictorDouble.calls.append(task_id)
            return super().predict(task_id, state, actions)
        finally:
            OrderCheckingPredictorDouble._busy.release()

    def adapt(self, records: Sequence[Any], *, seed: int) -> OrderCheckingPredictorDouble:
        return OrderCheckingPredictorDouble(self.bias / 2, self.generation + 1)


def make_concurrent_spec(
    llm: Any, *, external: float = 1000.0, eval_delay: float = 0.01, batched: bool = True
) -> TaskSpec:
    pred_cls = BatchPredictorDouble if batched else OrderCheckingPredictorDouble
    return TaskSpec(
        name="test_double",
        tasks=[f"t{i}" for i in range(12)],
        environment=ThreadedEnvironmentDouble(eval_delay),
        policy=ModelGuessPolicyDouble(llm),
        predictor=pred_cls(6.0),
        load_policy=lambda b: ModelGuessPolicyDouble(llm, **json.loads(b)),
        load_predictor=pred_cls.from_bytes,
        budgets={"external_feedback": external, "update_compute": 1000.0},
    )


def run_concurrent_double(
    path: str | Path,
    execution: str = "auto",
    *,
    model_run: str | Path | None = None,
    external: float = 1000.0,
    model_delay: float = 0.02,
    eval_delay: float = 0.01,
    batched: bool = True,
) -> tuple[Path, ScriptedModelDouble, Any]:
    """One run of the double; the model's calls are recorded in the run itself, or in ``model_run``
    (as the code-repair coder records into its own run). Returns the run, the model and the
    environment."""
    path = Path(path)
    settings = SETTINGS.model_copy(update={"execution": execution})
    model = ScriptedModelDouble(model_delay)
    run = Run.create(path, {"test_double": "concurrent"}, kind="test_double", exist_ok=True)
    mrun = Run.create(model_run, {"model": "scripted"}, exist_ok=True) if model_run is not None else None
    with run:
        llm = RecordedLLM.wrap(model, run=mrun or run)
        spec = make_concurrent_spec(llm, external=external, eval_delay=eval_delay, batched=batched)
        Loop.open(spec, run, settings, seed=0).run()
    if mrun is not None:
        mrun.close()
    return path, model, spec.environment


if __name__ == "__main__":  # through the module, so that the classes are not __main__'s
    import concurrent_doubles

    out = Path(sys.argv[1])
    concurrent_doubles.run_concurrent_double(
        out,
        sys.argv[2] if len(sys.argv) > 2 else "auto",
        model_run=out.parent / (out.name + "-model"),
        model_delay=float(os.environ.get("MODEL_DOUBLE_DELAY", "0.02")),
    )
