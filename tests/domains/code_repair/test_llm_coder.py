"""LLMCoder and HybridCoder with a scripted model (a test double): every sample becomes the right
candidate record, hidden tests never reach the prompt, the hybrid coder fills k with mutants."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

from rsi_workbench.agents import Coder
from rsi_workbench.domains.code_repair import MutationCoder, RepairFeedback, RepairTask, Status, TestOutcome
from rsi_workbench.domains.code_repair.llm_coder import (
    HybridCoder,
    LLMCoder,
    check_answer,
    extract_code,
    is_invalid,
    normalise,
    splice,
)
from rsi_workbench.models.interface import ChatResult

BUGGY = '''from typing import List


def add_all(xs: List[int]) -> int:
    """Sum of xs."""
    total = 1
    for x in xs:
        total += x
    return total
'''
FIX = "```python\ndef add_all(xs: List[int]) -> int:\n    total = 0\n    for x in xs:\n        total += x\n    return total\n```"
HIDDEN_MARKER = "add_all([917, 4242])"


def _task() -> RepairTask:
    return RepairTask.model_validate(
        {
            "task_id": "T/0",
            "entry_point": "add_all",
            "prompt": "def add_all(xs):\n    '''Sum of xs.'''\n",
            "program": BUGGY,
            "public_tests": [
                {"id": "p0", "kind": "io", "args": [[1, 2]], "expected": 3},
                {"id": "p1", "kind": "io", "args": [[]], "expected": 0},
            ],
            "hidden_tests": [{"id": "h0", "kind": "assert", "code": f"assert {HIDDEN_MARKER} == 5159"}],
        }
    )


def _feedback(task: RepairTask) -> RepairFeedback:
    outs = (
        TestOutcome("p0", Status.WA, 0.0, message="expected 3, got 4"),
        TestOutcome("p1", Status.WA, 0.0, message="expected 0, got 1"),
    )
    return RepairFeedback(task.program, outs)


class ScriptedModelDouble:
    """Test double for ``agents.LLM``: answers each requested sample from a fixed script, in order,
    and keeps every prompt it was sent."""

    def __init__(self, answers: Sequence[str]):
        self.answers = list(answers)
        self.prompts: list[str] = []
        self.ns: list[int] = []

    def chat(self, messages: Sequence[Any], *, n: int = 1, seed: int | None = None, **_: Any) -> ChatResult:
        self.prompts.append(messages[-1]["content"])
        self.ns.append(n)
        texts = [self.answers.pop(0) if self.answers else "no idea" for _ in range(n)]
        return ChatResult(texts, ["stop"] * n, 10, 10 * n, 0.0, "double", "scripted")


def test_each_sample_becomes_the_right_candidate_record() -> None:
    task = _task()
    model = ScriptedModelDouble(
        [
            "I think the bug is in the loop.",  # unparseable: no code
            "```python\ndef add_all(xs, start):\n    return sum(xs) + start\n```",  # changed signature
            "```python\ndef total(xs):\n    return sum(xs)\n```",  # missing entry point
            FIX,  # valid fix
            FIX.replace("total", "acc"),  # a different valid program
            "Here:\n" + FIX + "\nDone.",  # the same fix again: a duplicate
        ]
    )
    coder = LLMCoder(model, sample_cap=6)
    assert isinstance(coder, Coder)
    cands = coder.propose(task, task.program, _feedback(task), 3, random.Random(0))
    reasons = [is_invalid(c) for c in cands]
    assert [r.split(" ")[0] if r else None for r in reasons] == [
        "unparseable:",
        "changed",
        "missing",
        None,
        None,
        "duplicate",
    ]
    assert [c.meta["sample"] for c in cands] == list(range(6))  # nothing dropped, in sample order
    assert all(c.meta["raw"] for c in cands) and len({c.meta["prompt_sha256"] for c in cands}) == 1
    fix = cands[3]
    assert "total = 0" in fix.program and fix.program.startswith("from typing import List")
    assert "-    total = 1" in fix.diff and fix.meta["coder"] == "llm"
    # k=3 wanted, two valid, cap of 6 samples reached: a batched first call of 3, then 1 + 1 + 1
    assert sum(model.ns) == 6 and model.ns[0] == 3


def test_hidden_tests_never_reach_the_prompt() -> None:
    task = _task()
    model = ScriptedModelDouble([FIX])
    LLMCoder(model).propose(task, task.program, _feedback(task), 1, random.Random(0))
    prompt = model.prompts[0]
    assert HIDDEN_MARKER not in prompt and "h0" not in prompt
    assert "add_all([1, 2]) == 3" in prompt and "expected 3, got 4" in prompt  # public feedback is there
    bad = RepairFeedback(task.program, (TestOutcome("h0", Status.WA, 0.0, message="hidden"),))
    with pytest.raises(AssertionError, match="not public"):
        LLMCoder(ScriptedModelDouble([FIX])).propose(task, task.program, bad, 1, random.Random(0))


def test_earlier_rounds_and_attempts_are_deduplicated_and_shown() -> None:
    task = _task()
    coder = LLMCoder(ScriptedModelDouble([FIX, FIX]), sample_cap=1)
    first = coder.propose(task, task.program, _feedback(task), 1, random.Random(0))
    again = coder.propose(task, task.program, _feedback(task), 1, random.Random(1))
    assert is_invalid(first[0]) is None and (is_invalid(again[0]) or "").startswith("duplicate")
    fb = RepairFeedback(task.program, _feedback(task).outcomes, attempts=((first[0].program, 1, 2),))
    model = ScriptedModelDouble([FIX])
    out = LLMCoder(model).propose(task, task.program, fb, 1, random.Random(0))
    assert "Earlier attempts" in model.prompts[0] and "passed 1/2" in model.prompts[0]
    assert (is_invalid(out[0]) or "").startswith("duplicate")


def test_same_request_answers_from_memory() -> None:
    task = _task()
    model = ScriptedModelDouble([FIX])
    coder = LLMCoder(model)
    a = coder.propose(task, task.program, _feedback(task), 1, random.Random(7))
    b = coder.propose(task, task.program, _feedback(task), 1, random.Random(7))
    assert a == b and len(model.prompts) == 1


def test_hybrid_fills_k_with_mutants() -> None:
    task = _task()
    coder = HybridCoder(LLMCoder(ScriptedModelDouble(["nothing", FIX])), MutationCoder())
    cands = coder.propose(task, task.program, None, 4, random.Random(0))
    valid = [c for c in cands if is_invalid(c) is None]
    assert len(valid) == 4 and [c.meta["coder"] for c in valid] == ["llm", "mutation", "mutation", "mutation"]
    assert len({normalise(c.program) for c in valid}) == 4
    assert any(is_invalid(c) for c in cands)  # the model's invalid samples stay as records


def test_parsing_helpers() -> None:
    assert extract_code("no code here", "f") is None
    cut = "```python\ndef f(x):\n    return x + 1\n\ndef g(y):\n    return (y"  # cut at max_tokens
    assert extract_code(cut, "f") == "def f(x):\n    return x + 1\n"
    plain = "Sure. def f(x):\n    return 1\n"  # not at a line start: not code
    assert extract_code(plain, "f") is None
    assert extract_code("The fix:\ndef f(x):\n    return 1\n\nprint(f(2))\n", "f") is not None
    prog, why = check_answer(
        "```python\nimport math\n\ndef add_all(xs):\n    return math.fsum(xs)\n\nprint(add_all([1]))\n```",
        _task(),
        BUGGY,
    )
    assert why == "" and prog is not None and prog.startswith("import math\nfrom typing import List")
    assert "print(" not in prog  # the answer's top-level calls are dropped
    two = splice(
        "def h():\n    return 1\n\n\ndef f():\n    return h()\n",
        "def h2():\n    return 2\n\ndef f():\n    return h2()\n",
    )
    assert "def h():" in two and two.index("def h2") < two.index("def f")
