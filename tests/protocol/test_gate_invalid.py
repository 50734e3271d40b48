"""Eq. 7 on the gate paths: a candidate V_d finds invalid is never predicted, ranked or executed by
the policy, predictor or pair gate; it is recorded (``gate_invalid``, with its reason) instead."""

from __future__ import annotations

import dataclasses
from typing import Any

import protocol_doubles as doubles
from protocol_double_run import SETTINGS

from rsi_workbench.protocol.loop import Loop
from rsi_workbench.records import Run

REASON = "odd guess (test double's invalid candidate)"


class OddGuessInvalidVerifier:
    """Test double for V_d: an odd guess is invalid (as an unparseable LLM sample would be)."""

    def validate(self, task_id: str, state: int, action: int) -> tuple[bool, str]:
        return (False, REASON) if action % 2 else (True, "")


class EvaluationLogEnvironment(doubles.TestDoubleEnvironment):
    """Test double: the guess-the-target domain, remembering every action it was asked to execute."""

    def __init__(self) -> None:
        super().__init__(0.0)
        self.executed: list[int] = []

    def evaluate(self, task_id: str, state: int, action: int) -> Any:
        self.executed.append(action)
        return super().evaluate(task_id, state, action)


class OddProposingPolicy(doubles.TestDoublePolicy):
    """Test double: proposes guesses of both parities, so every gate sees invalid candidates."""

    def propose(self, task_id: str, state: int, k: int, rng: Any) -> list[int]:
        out = super().propose(task_id, state, k, rng)
        return out[:-1] + [out[-1] | 1] if out else out  # the last one always odd

    def update(self, records: Any, imagined: Any, *, seed: int) -> OddProposingPolicy:
        return OddProposingPolicy(max(2, self.spread - 4), self.generation + 1)


def test_gate_paths_never_execute_invalid_candidates_and_record_them(tmp_path):
    env = EvaluationLogEnvironment()
    spec = dataclasses.replace(
        doubles.make_test_double_spec(9),
        environment=env,
        policy=OddProposingPolicy(),
        verifier=OddGuessInvalidVerifier(),
    )
    run = Run.create(tmp_path / "r", {"gate_invalid": True}, kind="test_double")
    with run:
        Loop.open(spec, run, SETTINGS, seed=0).run(4)
    events = Run.open(tmp_path / "r").events()
    kinds = [e.kind for e in events]
    assert "gate_execution" in kinds  # the gates did execute (valid) candidates of gate tasks
    assert env.executed and all(a % 2 == 0 for a in env.executed)  # no invalid one ever ran
    gate_invalid = [e.payload for e in events if e.kind == "gate_invalid"]
    paths = {p["path"].split(" (")[0] for p in gate_invalid}
    assert {"policy gate", "pair gate"} <= paths  # re-proposals of the policy and pair gates
    assert "predictor gate" in paths  # recorded proposal groups of gate tasks
    for p in gate_invalid:
        assert p["executed"] is False and p["invalid"]
        assert all(c["reason"] == REASON for c in p["invalid"])
    # the online round removed them too: recorded as invalid with the reason, never selected
    props = [e.payload for e in events if e.kind == "proposal"]
    odd = [c for p in props for c in p["candidates"] if p["actions"][c["slot"]]["guess"] % 2]
    assert odd and all(not c["valid"] and c["reason"] == REASON for c in odd)
