"""A model-backed Critique judges a stage's comparisons in flight together (``models.parallel``):
a campaign whose Critique model takes 4 requests at once records byte for byte what the same
campaign records at ``concurrency: 1`` (events minus wall-clock fields), with a scripted model
double whose random per-request delays make its threads finish out of order."""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from pathlib import Path
from typing import Any

from rsi_workbench.config import validate_config
from rsi_workbench.experiments.discovery import campaign
from rsi_workbench.models import ChatResult, message_dict
from rsi_workbench.records import Run

WALL_CLOCK = ("time", "latency_s", "created_at", "seconds")  # measured, not decided
REPLIES = ("preference: a", "preference: b", "preference: tie", "I cannot tell")


class ScriptedCritiqueDouble:
    """A scripted critique model (test double): the reply is a function of the request alone, after
    a random delay; it takes ``max_concurrent_requests`` requests at once and counts the most it held."""

    name = "scripted-critique"
    identity = "double:scripted-critique"
    capabilities = frozenset({"chat"})

    def __init__(self, max_concurrent_requests: int):
        self.max_concurrent_requests = max_concurrent_requests
        self.calls = self.peak = self._now = 0
        self._lock = threading.Lock()
        self._rng = random.Random()

    def chat(self, messages: Any, **kw: Any) -> ChatResult:
        with self._lock:
            self.calls += 1
            self._now += 1
            self.peak = max(self.peak, self._now)
            delay = self._rng.uniform(0, 0.03)
        time.sleep(delay)
        canon = json.dumps({"m": [message_dict(m) for m in messages], **kw}, sort_keys=True, default=str)
        digest = hashlib.sha256(canon.encode()).digest()
        with self._lock:
            self._now -= 1
        return ChatResult(
            [REPLIES[digest[0] % 4]], ["stop"], len(canon) // 4, 3, delay, self.identity, self.name
        )

    def score(self, prompt: str, continuations: Any, *, end: bool = False) -> list[float]:
        raise NotImplementedError


def _strip(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in WALL_CLOCK}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def effective_records(path: Path) -> list[str]:
    """Events minus wall-clock fields; a model event's response artifact (it holds the latency)
    as its content minus wall-clock fields."""
    run = Run.open(path)
    out = []
    for e in run.events():
        p = _strip(e.payload)
        if e.kind in ("model_call", "model_replay"):
            p["response"] = _strip(run.artifacts.get_json(p["response"]))
        out.append(json.dumps({"kind": e.kind, "cycle": e.cycle, "payload": p}, sort_keys=True))
    return out


def _campaign(tmp_path: Path, concurrency: int, monkeypatch) -> tuple[Path, ScriptedCritiqueDouble]:
    weights = tmp_path / "critique-double.gguf"  # names the double: identity from its size, never loaded
    weights.write_bytes(b"double")
    double = ScriptedCritiqueDouble(max_concurrent_requests=8)
    monkeypatch.setattr("rsi_workbench.models.load_backend", lambda cfg: double)
    data = {
        "experiment": "discovery",
        "seed": 0,
        "episodes": 4,
        "directions": ["sklearn-diabetes/progression"],
        "n_bootstrap": 50,
        "outer_folds": 3,
        "budgets": {"agent_calls": 300, "external_feedback": 10},
        "harness": {"critique": {"comparisons_per_version": 3}},
        "roles": {"critique": {"model": {"name": str(weights), "concurrency": concurrency}, "max_tokens": 8}},
    }
    cfg = validate_config(data, campaign.Config, source="test")
    out = campaign.run_campaign(cfg, tmp_path / f"c{concurrency}", progress=False)
    return out, double


def test_a_critique_stage_in_flight_records_what_one_by_one_records(tmp_path, monkeypatch):
    one, d1 = _campaign(tmp_path, 1, monkeypatch)
    four, d4 = _campaign(tmp_path, 4, monkeypatch)
    a, b = effective_records(one), effective_records(four)
    calls = [e for e in Run.open(four).events("model_call") if e.payload["role"] == "critique"]
    assert len(calls) >= 4 and d1.calls == d4.calls == len(calls)
    assert d1.peak == 1  # concurrency 1: one request at a time
    prefs = Run.open(four).events("critique")
    assert prefs and len(prefs) < len(calls)  # some replies parse, some are failed turns
    assert a == b  # byte for byte, event by event
