"""``rsi-workbench tasks validate --run``: a reference that fails its own tests is listed, exit 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rsi_workbench.cli import main

GOOD = {
    "task_id": "demo/add",
    "entry_point": "add",
    "program": "def add(a, b):\n    return a - b\n",
    "public_tests": [{"id": "p1", "kind": "assert", "code": "assert add(1, 2) == 3"}],
    "hidden_tests": [{"id": "h1", "kind": "assert", "code": "assert add(5, 7) == 12"}],
    "reference": "def add(a, b):\n    return a + b\n",
}
BAD = {  # the reference is itself wrong on the hidden test
    **GOOD,
    "task_id": "demo/add-bad-ref",
    "reference": "def add(a, b):\n    return 3\n",
}


def _file(tmp_path: Path, *tasks: dict) -> Path:
    p = tmp_path / "tasks.jsonl"
    p.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return p


def test_validate_without_run_only_parses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tasks", "validate", str(_file(tmp_path, GOOD, BAD))]) == 0
    assert "2 task(s) valid" in capsys.readouterr().out


def test_validate_run_passes_when_every_reference_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tasks", "validate", "--run", str(_file(tmp_path, GOOD))]) == 0
    out = capsys.readouterr().out
    assert "1 task(s) valid" in out and "every reference passes" in out
    assert "demo/add: program passes 0/2; reference passes 2/2" in out


def test_validate_run_lists_failing_references_and_exits_nonzero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tasks", "validate", "--run", str(_file(tmp_path, GOOD, BAD))]) == 1
    cap = capsys.readouterr()
    assert "task(s) valid" not in cap.out + cap.err  # never "N task(s) valid" when a reference fails
    assert "1 reference(s) fail their own tests: demo/add-bad-ref" in cap.err
    assert "allow_failing_reference" in cap.err
    assert "demo/add-bad-ref: program passes 0/2; reference passes 1/2  <- reference fails h1" in cap.out


def test_unknown_key_inside_a_test_lists_the_tests_fields(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = {**GOOD, "public_tests": [{**GOOD["public_tests"][0], "tolerance": 0.1}]}
    assert main(["tasks", "validate", str(_file(tmp_path, bad))]) == 2
    err = capsys.readouterr().err
    assert "public_tests.0.tolerance: unknown field (allowed: id, kind, code, args, expected, compare" in err
    assert "task_id" not in err.split("tolerance")[1]  # the test's fields, not the task's
    assert main(["tasks", "validate", str(_file(tmp_path, {**GOOD, "notes": "x"}))]) == 2
    assert "notes: unknown field (allowed: task_id, entry_point" in capsys.readouterr().err
