"""MutationCoder: SBFL localization, every mutation operator, determinism, distinct compiling
candidates with diffs, bug injection, and the incumbent rule."""

from __future__ import annotations

import ast
import hashlib
import json
import random

import pytest

from rsi_workbench.agents import Candidate, Coder
from rsi_workbench.domains.code_repair import (
    OPERATORS,
    MutationCoder,
    RepairFeedback,
    RepairTask,
    Sandbox,
    Status,
    TestCase,
    TestOutcome,
    apply_incumbent_rule,
    enumerate_mutations,
    inject_bugs,
    ochiai,
)
from rsi_workbench.domains.code_repair.sandbox import default_mode, pass_count

KITCHEN_SINK = '''import math


def f(xs: list[int], n: int) -> int:
    """Docstring with 1 < 2 and x + y: never mutated."""
    total = 0  # a comment that must survive
    for i in range(len(xs)):
        if xs[i] > n and i != 0:
            total += xs[i] - 1
        elif not xs[i]:
            total = max(total, n)
    ys = sorted(xs)[1:n]
    ok = True
    return total * 2 if ok else math.floor(abs(total - n))
'''


def out(tid: str, status: Status, lines: tuple[int, ...]) -> TestOutcome:
    return TestOutcome(tid, status, 0.0, covered_lines=lines)


def test_every_operator_has_sites_and_edits_compile() -> None:
    muts = enumerate_mutations(KITCHEN_SINK)
    assert {m.operator for m in muts} == set(OPERATORS)
    docstring_line = 5
    assert not any(m.line == docstring_line for m in muts)
    assert not any(m.line == 4 and m.operator == "off_by_one" for m in muts)  # annotations untouched
    for m in muts:
        ast.parse(m.apply(KITCHEN_SINK))
    descs = {m.description for m in muts}
    assert {"`>` -> `>=`", "`and` -> `or`", "`-=` -> `+=`"} & descs
    assert "`max` -> `min`" in descs and "condition negated" in descs and "`True` -> `False`" in descs


def test_enumeration_order_and_output_are_pinned() -> None:
    """Candidates are drawn from this list with a seeded rng and feed cached experiments: the order
    and every field of the enumeration must not change (digest recorded before the operator families
    moved out of coder.py)."""
    muts = enumerate_mutations(KITCHEN_SINK)
    rows = [[m.operator, m.line, m.start, m.end, m.text, m.description, m.weight] for m in muts]
    digest = hashlib.sha256(json.dumps(rows).encode()).hexdigest()
    assert len(muts) == 234
    assert digest == "83ef3db73c90dbf357b91f3855ebc1ce6b4e3438124b2ac14f0dd54a577555b4"


def test_ochiai_ranks_the_line_only_failing_tests_cover() -> None:
    outs = [out("a", Status.AC, (1, 2, 3)), out("b", Status.WA, (1, 2, 4)), out("c", Status.RE, (1, 4))]
    s = ochiai(outs)
    assert s[4] == pytest.approx(1.0)
    assert s[3] == 0.0
    assert s[1] == pytest.approx(2 / (2 * 3) ** 0.5)
    assert max(s, key=s.get) == 4


BUGGY = "def add(a, b):\n    c = 0\n    return a - b\n"


@pytest.fixture(scope="module")
def task() -> RepairTask:
    return RepairTask(
        task_id="add",
        entry_point="add",
        program=BUGGY,
        public_tests=[
            TestCase(id="p0", kind="assert", code="assert add(1, 2) == 3"),
            TestCase(id="p1", kind="assert", code="assert add(0, 0) == 0"),
        ],
        hidden_tests=[TestCase(id="h0", kind="io", args=[5, 7], expected=12)],
    )


@pytest.fixture(scope="module")
def coder() -> MutationCoder:
    return MutationCoder(sandbox=Sandbox(mode=default_mode()))


def test_propose_is_deterministic_distinct_and_compiling(task: RepairTask, coder: MutationCoder) -> None:
    assert isinstance(coder, Coder)
    a = coder.propose(task, BUGGY, None, 6, random.Random(7))
    b = coder.propose(task, BUGGY, None, 6, random.Random(7))
    c = coder.propose(task, BUGGY, None, 6, random.Random(8))
    assert [x.program for x in a] == [x.program for x in b]
    assert [x.program for x in a] != [x.program for x in c]
    assert len(a) == 6 and len({ast.dump(ast.parse(x.program)) for x in a}) == 6
    for cand in a:
        assert isinstance(cand, Candidate) and cand.program != BUGGY
        compile(cand.program, "c.py", "exec")
        assert cand.diff.startswith("--- a/program.py\n+++ b/program.py\n")
        assert cand.meta["operator"] in OPERATORS or "+" in cand.meta["operator"]
        assert cand.meta["lines"] and cand.meta["edits"] and "suspiciousness" in cand.meta


def test_repairs_a_one_token_bug(task: RepairTask, coder: MutationCoder) -> None:
    cands = coder.propose(task, BUGGY, None, 20, random.Random(0))
    sb = coder.sandbox
    assert sb is not None
    scores = [pass_count(s) for s in sb.run_many([c.program for c in cands], task.public_tests, "add")]
    fixed = [c for c, s in zip(cands, scores) if s == 2]
    assert fixed, [c.meta for c in cands]
    assert any(c.meta["edits"] == ["`-` -> `+`"] for c in fixed)


def test_feedback_with_coverage_skips_the_localization_run(task: RepairTask) -> None:
    class CountingSandbox(Sandbox):  # test double: counts executions
        calls = 0

        def run_suite(self, *a, **k):  # type: ignore[override]
            CountingSandbox.calls += 1
            return super().run_suite(*a, **k)

    sb = CountingSandbox(mode=default_mode())
    coder = MutationCoder(sandbox=sb)
    traced = sb.run_suite(BUGGY, task.public_tests, "add", trace=True)
    CountingSandbox.calls = 0
    fb = RepairFeedback(program=BUGGY, outcomes=tuple(traced))
    cands = coder.propose(task, BUGGY, fb, 4, random.Random(1))
    assert CountingSandbox.calls == 0 and len(cands) == 4
    assert coder.localize(task, BUGGY, fb)[3] == max(coder.localize(task, BUGGY, fb).values())
    coder.propose(task, BUGGY, None, 4, random.Random(1))
    coder.propose(task, BUGGY, None, 4, random.Random(2))
    assert CountingSandbox.calls == 1  # traced once, then cached per program


def test_diff_touches_only_the_edited_line() -> None:
    muts = [m for m in enumerate_mutations(KITCHEN_SINK) if m.operator == "cmp_swap"]
    new = muts[0].apply(KITCHEN_SINK)
    changed = [(a, b) for a, b in zip(KITCHEN_SINK.splitlines(), new.splitlines()) if a != b]
    assert len(changed) == 1 and "# a comment that must survive" in new


def test_inject_bugs_is_deterministic_and_distinct() -> None:
    ref = "def mx(xs):\n    best = xs[0]\n    for x in xs[1:]:\n        if x > best:\n            best = x\n    return best\n"
    a = inject_bugs(ref, "mx", 8, random.Random(3))
    assert [x.program for x in a] == [x.program for x in inject_bugs(ref, "mx", 8, random.Random(3))]
    assert len({x.program for x in a}) == 8 and all(x.program != ref for x in a)
    assert all(x.meta["kind"] == "injected_bug" and x.meta["operator"] in OPERATORS for x in a)


def test_incumbent_rule_ties_move_on() -> None:
    assert apply_incumbent_rule(incumbent_passed=2, candidate_passed=2)
    assert apply_incumbent_rule(incumbent_passed=1, candidate_passed=3)
    assert not apply_incumbent_rule(incumbent_passed=3, candidate_passed=2)
