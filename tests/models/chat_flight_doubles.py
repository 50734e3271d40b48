"""A deterministic scripted chat model double for in-flight tests, and the records they compare.

:class:`ScriptedChatDouble` answers each request with a text derived from the request alone
(messages, sampling parameters, seed), after a random delay (an unseeded generator: threads finish
out of order), so an answer never depends on when or in which order it was asked. It declares
``max_concurrent_requests`` (how many requests it takes at once) and counts the requests it got and the most
it held at once. ``rendezvous=k`` makes the first ``k`` requests wait for each other (a barrier):
if they were sent one after another the barrier breaks and the request fails, which shows they
were in flight together without asserting any timing.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from typing import Any

from rsi_workbench.models import ChatResult, ModelError, message_dict
from rsi_workbench.records import Run

WALL_CLOCK = ("time", "latency_s", "step_s")  # measured, not decided: left out of effective records


class ScriptedChatDouble:
    """A scripted chat model (test double): the answer is a function of the request only."""

    name = "scripted"
    identity = "double:scripted"
    capabilities = frozenset({"chat"})

    def __init__(
        self,
        max_concurrent_requests: int = 8,
        *,
        delay_s: float = 0.02,
        rendezvous: int = 0,
        fail_on: str | None = None,
        answer: Any = None,
    ):
        self.max_concurrent_requests = max_concurrent_requests
        self.delay_s, self.fail_on, self.answer = delay_s, fail_on, answer
        self.calls = 0
        self.peak = 0
        self._now = 0
        self._lock = threading.Lock()
        self._rng = random.Random()
        self._barrier = threading.Barrier(rendezvous, timeout=20) if rendezvous > 1 else None
        self._to_meet = rendezvous

    def chat(self, messages: Any, **kw: Any) -> ChatResult:
        msgs = [message_dict(m) for m in messages]
        with self._lock:
            self.calls += 1
            self._now += 1
            self.peak = max(self.peak, self._now)
            meet = self._barrier is not None and self._to_meet > 0
            self._to_meet -= 1
            delay = self._rng.uniform(0, self.delay_s)
        try:
            if meet:
                assert self._barrier is not None
                self._barrier.wait()  # BrokenBarrierError when the requests came one at a time
            time.sleep(delay)
            last = msgs[-1]["content"] if msgs else ""
            if self.fail_on is not None and self.fail_on in last:
                raise ModelError(f"{self.identity}: scripted failure on {self.fail_on!r}")
            canon = json.dumps({"m": msgs, **kw}, sort_keys=True, default=str)
            digest = hashlib.sha256(canon.encode()).hexdigest()
            text = self.answer(last, digest) if self.answer is not None else f"answer {digest[:16]}"
            n = int(kw.get("n", 1))
            return ChatResult(
                texts=[text] * n,
                finish_reasons=["stop"] * n,
                prompt_tokens=len(canon) // 4,
                completion_tokens=3 * n,
                latency_s=delay,
                backend=self.identity,
                model=self.name,
            )
        finally:
            with self._lock:
                self._now -= 1

    def score(self, prompt: str, continuations: Any, *, end: bool = False) -> list[float]:
        raise NotImplementedError("the scripted chat double does not score")


def _strip(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in WALL_CLOCK}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def effective_records(path: Any) -> str:
    """A run's events minus wall-clock fields, one JSON line each (byte-comparable); a model event's
    response artifact (which holds the measured latency, so its sha differs) is replaced by its
    content minus wall-clock fields."""
    run = Run.open(path)
    lines = []
    for e in run.events():
        payload = _strip(e.payload)
        if e.kind in ("model_call", "model_replay") and isinstance(payload.get("response"), str):
            payload["response"] = _strip(run.artifacts.get_json(payload["response"]))
        lines.append(json.dumps({"kind": e.kind, "cycle": e.cycle, "payload": payload}, sort_keys=True))
    return "\n".join(lines)
