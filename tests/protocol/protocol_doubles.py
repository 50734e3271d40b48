"""Test doubles for the protocol engine (named as such): a tiny guess-the-target domain.

Each task hides an integer target; the state is the current guess; a candidate is a new guess;
the "public suite" has three checks (|guess − target| ≤ 0, 3, 6). ``TestDoublePredictor`` knows the
target up to a ``bias``; adapting halves the bias, so an adapted predictor really is better.
"""

from __future__ import annotations

import json
import math
import os
import random
import time
from collections.abc import Mapping, Sequence
from typing import Any

from rsi_workbench.protocol.decisions import derive_seed
from rsi_workbench.protocol.spec import ImaginedRecord, Observation, PairRecord, Prediction, TaskSpec

THRESHOLDS = (0, 3, 6)


def target_of(task_id: str) -> int:
    return derive_seed("target", task_id) % 21 + 8


def _labels(guess: int, target: int) -> list[int]:
    return [0 if abs(guess - target) <= th else 1 for th in THRESHOLDS]


class TestDoubleEnvironment:
    """Guess-the-target environment; ``delay`` (or $TEST_DOUBLE_DELAY) slows evaluate for kill tests."""

    def __init__(self, delay: float | None = None):
        self.delay = float(os.environ.get("TEST_DOUBLE_DELAY", "0")) if delay is None else delay
        self.evaluations = 0

    def _observe(self, task_id: str, guess: int) -> Observation:
        if self.delay:
            time.sleep(self.delay)
        self.evaluations += 1
        lab = _labels(guess, target_of(task_id))
        frac = lab.count(0) / len(lab)
        return Observation({"p_all_pass": float(frac == 1.0), "pass_fraction": frac}, lab, solved=frac == 1.0)

    def initial(self, task_id: str) -> tuple[int, Observation]:
        return 0, self._observe(task_id, 0)

    def evaluate(self, task_id: str, state: int, action: int) -> Observation:
        return self._observe(task_id, action)

    def advance(self, task_id: str, state: int, action: int, observation: Observation) -> int:
        t = target_of(task_id)
        return action if abs(action - t) <= abs(state - t) else state

    def signature(self, task_id: str, state: int) -> str:
        return f"{task_id}:{state}"

    def audit(self, task_id: str, state: int, actions: Sequence[int]) -> list[dict[str, Any]]:
        t = target_of(task_id)
        out = []
        for a in actions:
            lab = _labels(a, t)
            frac = lab.count(0) / len(lab)
            out.append(
                {
                    "labels": lab,
                    "utility_terms": {"p_all_pass": float(frac == 1.0), "pass_fraction": frac},
                    "hidden_all_pass": a == t,
                }
            )
        return out

    def final_audit(self, task_id: str, state: int) -> dict[str, Any]:
        return {"hidden_all_pass": state == target_of(task_id)}

    def dump_state(self, state: int) -> dict[str, Any]:
        return {"guess": state}

    def load_state(self, data: Mapping[str, Any]) -> int:
        return int(data["guess"])

    def dump_action(self, action: int) -> dict[str, Any]:
        return {"guess": action}

    def load_action(self, data: Mapping[str, Any]) -> int:
        return int(data["guess"])


class TestDoublePolicy:
    """Proposes guesses around the current one within ``spread``; an update narrows the spread."""

    def __init__(self, spread: int = 12, generation: int = 0):
        self.spread, self.generation = spread, generation
        self.version = f"pi-{generation}-s{spread}"

    def propose(self, task_id: str, state: int, k: int, rng: random.Random) -> list[int]:
        t = target_of(task_id)
        if task_id == "t5" and state != 0:  # a proposer may run out of candidates (empty proposal groups)
            return []
        direction = 1 if t >= state else -1
        out: list[int] = []
        while len(out) < k:
            g = state + direction * rng.randint(1, self.spread)
            if g not in out:
                out.append(g)
        return out

    def update(
        self, records: Sequence[PairRecord], imagined: Sequence[ImaginedRecord], *, seed: int
    ) -> TestDoublePolicy:
        return TestDoublePolicy(max(2, self.spread - 4), self.generation + 1)

    def to_bytes(self) -> bytes:
        return json.dumps({"spread": self.spread, "generation": self.generation}).encode()

    @classmethod
    def from_bytes(cls, b: bytes) -> TestDoublePolicy:
        return cls(**json.loads(b))


class TestDoublePredictor:
    """Predicts the checks from a biased estimate of the target; ``adapt`` halves the bias."""

    def __init__(self, bias: float = 6.0, generation: int = 0):
        self.bias, self.generation = bias, generation
        self.version = f"phi-{generation}-b{bias:g}"

    def predict(self, task_id: str, state: int, actions: Sequence[int]) -> list[Prediction]:
        est = target_of(task_id) + self.bias
        out = []
        for a in actions:
            probs = []
            for th in THRESHOLDS:
                p_ok = 1.0 / (1.0 + math.exp(abs(a - est) - th - 0.5))
                probs.append([p_ok, 1.0 - p_ok])
            p_all = math.prod(p[0] for p in probs)
            frac = sum(p[0] for p in probs) / len(probs)
            unc = -sum(p * math.log(p + 1e-12) for pr in probs for p in pr)
            out.append(Prediction({"p_all_pass": p_all, "pass_fraction": frac}, self.version, probs, unc))
        return out

    def adapt(self, records: Sequence[PairRecord], *, seed: int) -> TestDoublePredictor:
        return TestDoublePredictor(self.bias / 2, self.generation + 1)

    def adapt_cost(self, n_records: int) -> float:
        return 0.5 * n_records

    def to_bytes(self) -> bytes:
        return json.dumps({"bias": self.bias, "generation": self.generation}).encode()

    @classmethod
    def from_bytes(cls, b: bytes) -> TestDoublePredictor:
        return cls(**json.loads(b))


def make_test_double_spec(
    n_tasks: int = 12,
    *,
    bias: float = 6.0,
    with_predictor: bool = True,
    external: float = 1000.0,
    update: float = 1000.0,
    delay: float | None = None,
) -> TaskSpec:
    return TaskSpec(
        name="test_double",
        tasks=[f"t{i}" for i in range(n_tasks)],
        environment=TestDoubleEnvironment(delay),
        policy=TestDoublePolicy(),
        predictor=TestDoublePredictor(bias) if with_predictor else None,
        load_policy=TestDoublePolicy.from_bytes,
        load_predictor=TestDoublePredictor.from_bytes,
        budgets={"external_feedback": external, "update_compute": update},
    )
