"""The GUI language-model policy proposes a cycle's episodes in flight together (the protocol's
concurrent cycle, ``concurrent_propose``): a generation on simulated pages records byte for byte
what the one-episode-after-another loop records (protocol run and the policy's model run, events
minus wall-clock fields), with a scripted model double whose random per-request delays make its
threads finish out of order."""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from pathlib import Path
from typing import Any

from gui_sim import SimGuiEnvironment, _spec, protocol_settings

from rsi_workbench.domains.gui.components import OutcomeWorldModel
from rsi_workbench.domains.gui.llm_policy import open_llm_policy
from rsi_workbench.experiments.gui.experiment import Config
from rsi_workbench.models import ChatResult
from rsi_workbench.protocol.loop import Loop
from rsi_workbench.records import Run

WALL_CLOCK = ("time", "latency_s", "seconds", "created_at", "wall_s", "elapsed_s")


class ScriptedPolicyModelDouble:
    """A scripted GUI policy model (test double): clicks a checkbox chosen from (prompt, seed) alone,
    after a random delay; counts the requests it held at once."""

    identity = "double:scripted-gui-policy"
    name = "scripted-gui-policy"
    capabilities = frozenset({"chat"})

    def __init__(self) -> None:
        self.calls = self.peak = self._now = 0
        self._lock = threading.Lock()
        self._rng = random.Random()

    def chat(self, messages: Any, **kw: Any) -> ChatResult:
        with self._lock:
            self.calls += 1
            self._now += 1
            self.peak = max(self.peak, self._now)
            delay = self._rng.uniform(0, 0.02)
        time.sleep(delay)
        prompt = messages[-1]["content"]
        refs = [int(line.split(":")[0]) for line in prompt.splitlines() if ": checkbox" in line]
        h = hashlib.sha256(json.dumps([prompt, kw.get("seed")]).encode()).digest()
        pick = refs[h[0] % len(refs)] if refs else 0
        text = f"click({pick})\nsubmit()" if h[1] % 3 else f"click({pick})\nnonsense"
        with self._lock:
            self._now -= 1
        return ChatResult([text], ["stop"], 12, 4, delay, self.identity, self.name)

    def score(self, prompt: str, continuations: Any, *, end: bool = False) -> list[float]:
        raise NotImplementedError


def _strip(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in WALL_CLOCK}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def effective_records(path: Path) -> list[str]:
    """Events minus wall-clock fields and the declared ``execution`` setting; a model event's
    response artifact (it holds the latency) as its content minus wall-clock fields."""
    run = Run.open(path)
    out = []
    for e in run.events():
        p = _strip(e.payload)
        if e.kind in ("model_call", "model_replay"):
            p["response"] = _strip(run.artifacts.get_json(p["response"]))
        if isinstance(p.get("settings"), dict):
            p["settings"].pop("execution", None)
        out.append(json.dumps({"kind": e.kind, "cycle": e.cycle, "payload": p}, sort_keys=True))
    return out


def _generation(out: Path, execution: str) -> ScriptedPolicyModelDouble:
    double = ScriptedPolicyModelDouble()
    cfg = Config.model_validate({"policy": {"kind": "llm"}})
    pol, prun = open_llm_policy(cfg.policy, out, 0, backend=double)  # type: ignore[arg-type]
    config = Config(train_episodes=4, gate_episodes=2, max_actions=4, explore_cycles=1, world_steps=30)
    tasks = [f"e{j}" for j in range(6)]
    spec = _spec(config, SimGuiEnvironment(tasks), tasks, pol, OutcomeWorldModel(seed=0, steps=30))  # type: ignore[arg-type]
    settings = protocol_settings(config, "rsi", 1).model_copy(update={"execution": execution})
    with Run.create(out / "gen1", {"sim": True}, kind="protocol") as run:
        Loop.open(spec, run, settings, seed=0).run()
    prun.close()
    return double


def test_a_cycle_of_episodes_in_flight_records_what_the_sequential_loop_records(tmp_path: Path) -> None:
    seq = _generation(tmp_path / "seq", "sequential")
    conc = _generation(tmp_path / "conc", "concurrent")
    assert seq.peak == 1 and seq.calls == conc.calls > 4
    for sub in ("gen1", "policy_model/seed0"):
        a, b = effective_records(tmp_path / "seq" / sub), effective_records(tmp_path / "conc" / sub)
        assert a == b, sub
    assert len(Run.open(tmp_path / "conc" / "policy_model" / "seed0").events("model_call")) == conc.calls
