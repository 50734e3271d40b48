"""Task format: validation errors name line and field; HumanEvalFix / HumanEval loaders; the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rsi_workbench.cli import main
from rsi_workbench.domains.code_repair.tasks import (
    RepairTask,
    TaskFileError,
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
