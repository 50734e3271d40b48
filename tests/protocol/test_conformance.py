"""``check_components``: the engine's contract checks pass on conforming components and name what a
broken one does wrong; ``run_protocol`` runs a loop in one call (its docstring example runs)."""

from __future__ import annotations

import random
import textwrap
from pathlib import Path

import protocol_doubles as doubles
import pytest

import rsi_workbench as rw
from rsi_workbench.protocol import (
    BaseEnvironment,
    BasePolicy,
    ConformanceError,
    Observation,
    check_components,
)
from rsi_workbench.protocol.run import run_protocol
from rsi_workbench.records import Run

SETTINGS = {"k": 3, "rule": "random_k", "utility": {"weights": {"score": 1.0}}, "audit": False}


class Count(BaseEnvironment):
    def initial(self, task_id):
        return 0, self.evaluate(task_id, 0, 0)

    def evaluate(self, task_id, state, action):
        hit = action == int(task_id)
        return Observation({"score": float(hit)}, [int(not hit)], solved=hit)

    def advance(self, task_id, state, action, observation):
        return action


class Seeded(BasePolicy):
    def propose(self, task_id, state, k, rng):
        return [rng.randint(0, 5) for _ in range(k)]


class GlobalRandom(BasePolicy):  # draws from the process-wide random state: not reproducible
    def propose(self, task_id, state, k, rng):
        return [random.randint(0, 10**6) for _ in range(k)]


class SetState(Count):  # a state json cannot hold
    def initial(self, task_id):
        return {0}, self.evaluate(task_id, 0, 0)

    def advance(self, task_id, state, action, observation):
        return {action}

    def dump_state(self, state):
        return {"s": state}


def test_the_test_doubles_conform() -> None:
    rep = check_components(
        doubles.TestDoubleEnvironment,
        doubles.TestDoublePolicy,
        doubles.TestDoublePredictor,
        tasks=["a", "b", "c"],
    )
    assert rep.ok and rep.passed == ["build", "json", "versions", "loop", "determinism", "resume"]
    assert rw.check_protocol_components is check_components


def test_a_policy_drawing_global_randomness_fails_determinism() -> None:
    with pytest.raises(ConformanceError, match=r"\[determinism\] two loops of the same seed") as e:
        check_components(Count, GlobalRandom, tasks=[1, 2], settings=SETTINGS)
    assert "rng the loop passes to propose" in str(e.value)
    assert check_components(Count, Seeded, tasks=[1, 2], settings=SETTINGS).ok


def test_a_state_that_is_not_json_is_named() -> None:
    rep = check_components(SetState, Seeded, tasks=[1], settings=SETTINGS, raise_on_failure=False)
    assert not rep.ok
    assert rep.failures[0][0] == "json" and "dump_state" in rep.failures[0][1], rep.failures


def test_a_missing_method_is_named_at_build() -> None:
    with pytest.raises(ConformanceError, match=r"\[build\] policy object lacks propose, update, to_bytes"):
        check_components(Count, object, tasks=[1])


def test_run_protocol_is_one_call(tmp_path: Path) -> None:
    res = run_protocol(Count(), Seeded(), tasks=[1, 2], out=tmp_path / "r", settings=SETTINGS)
    assert res.finished and res.path == tmp_path / "r" and len(res.reports) == 3
    assert Run.open(res.path).events("loop_opened")[0].payload["tasks"] == ["1", "2"]
    again = run_protocol(Count(), Seeded(), tasks=[1, 2], out=tmp_path / "r", settings=SETTINGS, resume=True)
    assert again.reports == []  # finished already: nothing left to run


def test_the_docstring_example_runs(tmp_path: Path, capsys) -> None:
    code = textwrap.dedent(run_protocol.__doc__.split("::\n", 1)[1])
    exec(compile(code, "run_protocol.__doc__", "exec"), {})
    out = capsys.readouterr().out
    assert out.startswith("True protocol run ") and "spec protocol" in out
