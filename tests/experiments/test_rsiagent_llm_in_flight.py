"""RSIAgent's model actor in a wave's branches run together (``max_parallel: 3``) records byte for
byte what one branch after another records (``max_parallel: 1``): events minus wall-clock fields and
the declared ``max_parallel``, with a scripted model double whose random per-request delays make
the branch threads finish out of order. (A model *verifier* is not covered: its seed is a call
counter shared by the branches; docs/concurrency.md, "Which roles run requests together".)"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from pathlib import Path
from typing import Any

from rsi_workbench.memory import Evidence, Project, VerifierReport, run_rsiagent
from rsi_workbench.memory.llm_roles import LLMRoles, open_llm_roles
from rsi_workbench.models import ChatResult, message_dict
from rsi_workbench.records import Run

WALL_CLOCK = ("time", "latency_s", "seconds", "created_at", "wall_s", "elapsed_s")


class ScriptedActorModelDouble:
    """A scripted actor model (test double): answers the reversed first word of the instruction or
    a guess, chosen from the request alone, after a random delay; counts the requests it held."""

    identity = "double:scripted-actor"
    name = "scripted-actor"
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
            delay = self._rng.uniform(0, 0.03)
        time.sleep(delay)
        prompt = message_dict(messages[-1])["content"]
        h = hashlib.sha256(json.dumps([prompt, kw.get("seed")]).encode()).digest()
        fam = next((w.split()[1] for w in prompt.splitlines() if w.startswith("TASK ")), "x")
        text = fam[::-1] if h[0] % 2 else f"guess-{h[1]}"
        with self._lock:
            self._now -= 1
        return ChatResult([text], ["stop"], 20, 2, delay, self.identity, self.name)

    def score(self, prompt: str, continuations: Any, *, end: bool = False) -> list[float]:
        raise NotImplementedError


class TextWorkspaceDouble:
    """A text workspace (test double): shows the task, runs the answer as the final state."""

    answer_format = "Answer with one word."

    def __init__(self, project: Project, seed: int) -> None:
        self.project, self.seed, self.answer = project, seed, None

    def observe(self) -> str:
        return f"TASK {self.project.instruction} (seed {self.seed})"

    def act(self, answer: str) -> tuple[Evidence, dict[str, Any]]:
        self.answer = answer.strip()
        ev = Evidence(self.project.instruction, {"answer": self.answer}, {"steps": 1})
        return ev, {"ran": self.answer}

    def close(self) -> None:
        pass


class TextEnvDouble:
    """Targets ``alpha`` and ``beta``; every workspace a :class:`TextWorkspaceDouble` (test double)."""

    name = "text-env-double"
    text_workspaces = True

    def targets(self) -> list[Project]:
        return [Project(id=f"t-{f}", instruction=f"{f} target task") for f in ("alpha", "beta")]

    def open(self, project: Project, *, seed: int, purpose: str) -> TextWorkspaceDouble:
        return TextWorkspaceDouble(project, seed)

    def host_only_texts(self) -> list[str]:
        return []

    def official_score(self, workspace: TextWorkspaceDouble) -> float:
        return float(workspace.answer == workspace.project.instruction.split()[0][::-1])


class ReversedWordVerifierDouble:
    """PASS when the answer is the instruction's first word reversed (test double)."""

    def verify(self, project: Project, evidence: Evidence) -> VerifierReport:
        ok = evidence.final_state.get("answer") == project.instruction.split()[0][::-1]
        return VerifierReport("PASS" if ok else "FAIL", (f"answer {evidence.final_state.get('answer')!r}",))


class WavesCurriculumDouble:
    """Two broad waves of four drills each, then SATURATED (test double)."""

    def author(self, request: Any) -> str:
        if request.phase != "broad" or request.wave > 2:
            return json.dumps({"decision": "SATURATED", "rationale": "done", "projects": []})
        fams = ["alpha", "beta", "gamma", "alpha"]
        projects = [
            {"id": f"w{request.wave}-{i}", "instruction": f"{f} drill {i}"} for i, f in enumerate(fams)
        ]
        return json.dumps({"decision": "WAVE", "rationale": "practise", "projects": projects})


def _strip(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in WALL_CLOCK}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def effective_records(path: Path) -> list[str]:
    run = Run.open(path)
    out = []
    for e in run.events():
        p = _strip(e.payload)
        if e.kind in ("model_call", "model_replay"):
            p["response"] = _strip(run.artifacts.get_json(p["response"]))
        if isinstance(p.get("settings"), dict):
            p["settings"].pop("max_parallel", None)
        out.append(json.dumps({"kind": e.kind, "cycle": e.cycle, "payload": p}, sort_keys=True))
    return out


def _arm(path: Path, max_parallel: int) -> ScriptedActorModelDouble:
    double = ScriptedActorModelDouble()
    run = Run.create(path, {"arm": "in-flight"})
    roles = LLMRoles.model_validate({"actor": {"model": {"name": "default"}}})
    actor_factory = open_llm_roles(roles, run, backend=double)["actor_factory"]
    settings = {
        "max_parallel": max_parallel,
        "project_budget": 8,
        "max_waves": 2,
        "max_verification_cycles": 2,
    }
    run_rsiagent(
        TextEnvDouble(), actor_factory, ReversedWordVerifierDouble(), WavesCurriculumDouble(), settings, run
    )
    run.close()
    return double


def test_a_wave_of_model_actor_branches_in_flight_records_what_one_by_one_records(tmp_path: Path) -> None:
    one = _arm(tmp_path / "one", 1)
    three = _arm(tmp_path / "three", 3)
    assert one.peak == 1 and one.calls == three.calls > 8
    a, b = effective_records(tmp_path / "one"), effective_records(tmp_path / "three")
    assert a == b
    kinds = {json.loads(x)["kind"] for x in a}
    assert {"model_call", "prompt_template"} <= kinds
