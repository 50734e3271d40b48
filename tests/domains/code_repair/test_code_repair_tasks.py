"""Task format: validation errors name line and field; HumanEvalFix / HumanEval loaders; the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rsi_workbench.cli import main
from rsi_workbench.domains.code_repair.tasks import (
    RepairTask,
    TaskFileError,
    TestCase,
    convert_assert,
    load_humaneval_references,
    load_humaneval_tasks,
    load_humanevalfix,
    load_task_file,
    save_task_file,
    split_check_tests,
)

GOOD = {
    "task_id": "inc",
    "entry_point": "inc",
    "prompt": "Return x + 1.",
    "program": "def inc(x):\n    return x - 1\n",
    "public_tests": [{"id": "p0", "kind": "io", "args": [1], "expected": 2}],
    "hidden_tests": [{"id": "h0", "kind": "assert", "code": "assert inc(2) == 3"}],
    "reference": "def inc(x):\n    return x + 1\n",
    "source": "example",
    "meta": {},
}


def write(tmp_path: Path, rows: list[object]) -> Path:
    p = tmp_path / "tasks.jsonl"
    p.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return p


def test_round_trip(tmp_path: Path) -> None:
    tasks = load_task_file(write(tmp_path, [GOOD]))
    assert tasks[0].public_tests[0].expected == 2
    again = load_task_file(save_task_file(tasks, tmp_path / "again.jsonl"))
    assert again == tasks


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda d: d.pop("program"), ":2: program: required field is missing"),
        (lambda d: d.update(public_tests=[]), ":2: public_tests: List should have at least 1 item"),
        (lambda d: d.update(colour="red"), ":2: colour: unknown field"),
        (lambda d: d["public_tests"][0].pop("args"), "public_tests.0: args: required"),
        (lambda d: d["hidden_tests"][0].update(kind="fuzz"), "hidden_tests.0.kind"),
        (
            lambda d: d["hidden_tests"][0].update(code="assert ("),
            "hidden_tests.0: code: test does not compile",
        ),
        (lambda d: d["public_tests"][0].update(compare="close"), "public_tests.0.compare"),
        (
            lambda d: d["public_tests"][0].update(rel_tol=1e-3),
            "public_tests.0: rel_tol: only allowed with compare 'approx'",
        ),
        (
            lambda d: d["public_tests"][0].update(compare="approx", abs_tol=-1.0),
            "public_tests.0: abs_tol: must be a finite number >= 0",
        ),
        (
            lambda d: d["hidden_tests"][0].update(compare="iter"),
            "hidden_tests.0: compare: 'iter' only allowed for kind 'io'",
        ),
        (lambda d: d.update(entry_point="not valid"), ":2: entry_point"),
        (lambda d: d["hidden_tests"].append(dict(d["hidden_tests"][0])), "hidden_tests: duplicate test ids"),
    ],
)
def test_errors_name_line_and_field(tmp_path: Path, mutate, needle: str) -> None:
    bad = json.loads(json.dumps(GOOD))
    bad["task_id"] = "other"
    mutate(bad)
    with pytest.raises(TaskFileError) as e:
        load_task_file(write(tmp_path, [GOOD, bad]))
    assert str(tmp_path / "tasks.jsonl") in str(e.value) and needle in str(e.value)


def test_file_level_errors(tmp_path: Path) -> None:
    with pytest.raises(TaskFileError, match=r":1: not valid JSON"):
        load_task_file(write(tmp_path, ["{nope"]))
    with pytest.raises(TaskFileError, match=r":2: task_id: duplicate 'inc' \(first on line 1\)"):
        load_task_file(write(tmp_path, [GOOD, GOOD]))
    with pytest.raises(TaskFileError, match="must be a JSON object"):
        load_task_file(write(tmp_path, ["[1, 2]"]))
    with pytest.raises(TaskFileError, match="not found"):
        load_task_file(tmp_path / "missing.jsonl")


def test_cli_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write(tmp_path, [GOOD])
    assert main(["tasks", "validate", str(good), "--run"]) == 0
    out = capsys.readouterr().out
    assert "1 task(s) valid" in out and "reference passes 2/2" in out
    bad = json.loads(json.dumps(GOOD))
    del bad["hidden_tests"]
    assert main(["tasks", "validate", str(write(tmp_path, [bad]))]) == 2
    assert ":1: hidden_tests: required field is missing" in capsys.readouterr().err


def test_split_check_per_assert_or_whole() -> None:
    src = "def check(candidate):\n    assert candidate(1) == 2\n    assert candidate(2) == 3\n\ncheck(inc)\n"
    tests = split_check_tests(src, "inc", "h-")
    assert [x.id for x in tests] == ["h-0", "h-1"]
    assert "assert candidate(2) == 3" in (tests[1].code or "") and "candidate(1)" not in (tests[1].code or "")
    loop = "def check(c):\n    for i in range(3):\n        assert c(i) == i + 1\n\ncheck(inc)\n"
    assert len(split_check_tests(loop, "inc", "h-")) == 1
    assert split_check_tests("", "inc", "p-") == []


def test_humanevalfix_loader() -> None:
    tasks = load_humanevalfix()
    assert len(tasks) == 164 and len({t.task_id for t in tasks}) == 164
    assert all(isinstance(t, RepairTask) and t.public_tests and t.hidden_tests for t in tasks)
    empty = [t.task_id for t in tasks if t.meta["example_test_empty"]]
    moved = [t for t in tasks if t.meta["hidden_moved_to_public"]]
    assert len(empty) == 6
    assert len(moved) == 20  # 6 with an empty example_test + 14 whose buggy program passes it
    assert all(t.public_tests[-1].id.startswith("moved-hidden-") for t in moved)
    t0 = tasks[0]
    assert t0.program.startswith("from typing import List") and "distance = elem - elem2" in t0.program
    assert len(t0.public_tests) == 2 and len(t0.hidden_tests) == 7
    repaired = [t.task_id for t in tasks if t.meta["example_test_repaired"]]
    assert repaired == ["Python/119"]


def test_humaneval_references() -> None:
    refs = load_humaneval_references()
    assert len(refs) == 164 and "def has_close_elements" in refs["HumanEval/0"]
    tasks = load_humaneval_tasks()
    assert len(tasks) == 164 and tasks[0].program == refs["HumanEval/0"]


def test_tolerances_and_iter_round_trip(tmp_path: Path) -> None:
    row = json.loads(json.dumps(GOOD))
    row["public_tests"] = [
        {
            "id": "a",
            "kind": "io",
            "args": [1],
            "expected": 2.0,
            "compare": "approx",
            "rel_tol": 0.0,
            "abs_tol": 0.5,
        },
        {"id": "g", "kind": "io", "args": [3], "expected": [0, 1, 2], "compare": "iter"},
    ]
    tasks = load_task_file(write(tmp_path, [row]))
    assert tasks[0].public_tests[0].abs_tol == 0.5 and tasks[0].public_tests[1].compare == "iter"
    again = load_task_file(save_task_file(tasks, tmp_path / "again.jsonl"))
    assert again == tasks


@pytest.mark.parametrize(
    ("code", "args", "expected"),
    [
        ("assert inc(1) == 2", [1], 2),
        ("assert 2 == inc(1), 'message'", [1], 2),
        (
            "def check(candidate):\n    assert candidate([1, 2], 'a') == {'k': [None, True]}\n\ncheck(inc)\n",
            [[1, 2], "a"],
            {"k": {"$l": [None, True]}},  # a list of the expected value only a list matches (as ==)
        ),
        ("assert inc((1, 2)) == (2, {3})", [{"$t": [1, 2]}], {"$t": [2, {"$s": [3]}]}),
        (
            "import math\nMETADATA = {}\ndef check(c):\n    assert c(-1.5) == 0.25\n\ncheck(inc)\n",
            [-1.5],
            0.25,
        ),
    ],
)
def test_assert_of_the_io_shape_converts(code: str, args: list, expected: object) -> None:
    out = convert_assert(TestCase(id="t", kind="assert", code=code), "inc")
    assert out is not None and out.kind == "io" and out.id == "t"
    assert out.args == args and out.expected == expected and out.compare == "exact"


@pytest.mark.parametrize(
    "code",
    [
        "assert inc(1) != 2",
        "assert inc(1)",
        "assert inc(x) == 2",
        "def inc(x):\n    return x + 1\nassert inc(1) == 2",  # the test's own inc, not the candidate
        "assert inc(...) == 2",  # Ellipsis has no tagged form
        "assert other(1) == 2",
        "assert abs(inc(1) - 2) < 1e-6",
        "x = inc(0)\nassert inc(1) == 2",
        "def check(c):\n    assert c(1) == 2\n    assert c(2) == 3\n\ncheck(inc)\n",
        "def check(c):\n    assert c(1) == 2\n\ncheck(other)\n",
        "assert inc(*[1]) == 2",
        "assert inc(x=1) == 2",
        "assert inc(1) == float('nan')",
    ],
)
def test_other_asserts_stay_asserts(code: str) -> None:
    assert convert_assert(TestCase(id="t", kind="assert", code=code), "inc") is None


def test_humanevalfix_conversion_is_recorded() -> None:
    tasks = load_humanevalfix()
    conv = [t.meta["converted_to_io"] for t in tasks]
    n = sum(c["public"] + c["hidden"] for c in conv)
    assert sum(c["of"] for c in conv) == sum(len(t.public_tests) + len(t.hidden_tests) for t in tasks)
    assert n == sum(x.kind == "io" for t in tasks for x in t.public_tests + t.hidden_tests)
    assert n / sum(c["of"] for c in conv) > 0.8
