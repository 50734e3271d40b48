"""Every score is a finite number or an invalid node with a reason (run as root in the main pytest
run and again as ``nobody``): whatever an OpenEvolve evaluator or a discovery program returns — a
huge int, NaN, ±inf, a string, a bool, something that is not a dict — the host never raises on it,
the node is invalid with a reason naming what came back, and a run with such nodes completes and
resumes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rsi_workbench import sandbox
from rsi_workbench.cli import main
from rsi_workbench.domains.math import CirclePacking, FirstAutocorrelation
from rsi_workbench.domains.math.programs import checked, run_program
from rsi_workbench.domains.math.task import Evaluation
from rsi_workbench.domains.openevolve import load_task
from rsi_workbench.domains.openevolve.task import verdict

INITIAL = "# EVOLVE-BLOCK-START\nX = 0\n# EVOLVE-BLOCK-END\n"
# the program's X picks what the evaluator returns
EVALUATOR = """import importlib.util
from openevolve.evaluation_result import EvaluationResult

CASES = [
    lambda: {"combined_score": 10 ** 400},
    lambda: {"combined_score": 10 ** 5000},
    lambda: {"combined_score": float("nan")},
    lambda: {"combined_score": float("inf")},
    lambda: {"combined_score": float("-inf")},
    lambda: {"combined_score": "0.9"},
    lambda: {"combined_score": True},
    lambda: [1.0, 2.0],
    lambda: EvaluationResult(metrics=[1.0], artifacts={}),
    lambda: {"combined_score": 1.0, "validity": "0"},
    lambda: {"combined_score": 1.0, "validity": float("nan")},
    lambda: {"a": 1.0, "b": float("nan")},
    lambda: {"combined_score": 0.5, "validity": True},
]


def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("program", program_path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return CASES[int(mod.X) % len(CASES)]()
"""
EXPECTED = [
    "combined_score is an int beyond float range",
    "combined_score is an int beyond float range (16610 bits)",
    "combined_score is nan",
    "combined_score is inf",
    "combined_score is -inf",
    "combined_score is a str ('0.9')",
    "combined_score is a bool (True)",
    "evaluate: evaluate returned a list, not a dict or an EvaluationResult",
    "evaluate: metrics is a list, not a dict",
    "validity is a str ('0'); accepted: true/false or 1/0",
    "validity is nan; accepted: true/false or 1/0",
    "metric 'b' is nan (no combined_score)",
    None,  # valid
]


def _isolated() -> None:
    grant = sandbox.obtain_isolation((), purpose="test")
    if not grant.isolation.complete:
        pytest.skip(f"sandbox isolation incomplete here ({grant.isolation.plan}); mode {grant.mode}")


def _task_dir(root: Path) -> Path:
    root.mkdir()
    (root / "initial_program.py").write_text(INITIAL)
    (root / "evaluator.py").write_text(EVALUATOR)
    (root / "config.yaml").write_text("evaluator:\n  timeout: 20\n")
    return root


def test_verdict_never_raises_and_names_what_came_back() -> None:
    cases: list[tuple[object, str | None]] = [
        ({"combined_score": 10**400}, "combined_score is an int beyond float range"),
        ({"combined_score": float("nan")}, "combined_score is nan"),
        ({"combined_score": -math.inf}, "combined_score is -inf"),
        ({"combined_score": None}, "combined_score is None"),
        ({"combined_score": [1.0]}, "combined_score is a list"),
        ({"combined_score": False}, "combined_score is a bool (False)"),
        ([("combined_score", 1.0)], "metrics is a list, not a dict"),
        ("1.0", "metrics is a str, not a dict"),
        (None, "metrics is a NoneType, not a dict"),
        ({"a": 10**400}, "metric 'a' is an int beyond float range (no combined_score)"),
        ({"a": 1e308, "b": 1e308}, None),  # the mean of two finite metrics
        ({"combined_score": 1.0, "validity": "0"}, "validity is a str ('0')"),
        ({"combined_score": 1.0, "validity": "1"}, "validity is a str ('1')"),
        ({"combined_score": 1.0, "validity": 0.5}, "validity is 0.5"),
        ({"combined_score": 1.0, "validity": None}, "validity is None"),
        ({"combined_score": 1.0, "validity": 0}, "the evaluator's validity metric is 0"),
        ({"combined_score": 1.0, "validity": False}, "the evaluator's validity metric is 0"),
        ({"combined_score": 1.0, "validity": 1.0}, ""),
        ({"combined_score": 1.0, "validity": True}, ""),
        ({"combined_score": 7}, ""),
    ]
    for metrics, reason in cases:
        ev = verdict(metrics)
        if reason == "":
            assert ev.valid and ev.score is not None and math.isfinite(ev.score), metrics
        elif reason is None:
            assert ev.valid and ev.score == 1e308, metrics
        else:
            assert not ev.valid and reason in ev.reason, (metrics, ev)
            assert ev.score is None or math.isfinite(ev.score)


def test_each_bad_return_of_an_openevolve_evaluator_is_an_invalid_node(tmp_path: Path) -> None:
    _isolated()
    task = load_task(_task_dir(tmp_path / "task"))
    for x, reason in enumerate(EXPECTED):
        res = task.evaluate_program(task.initial.with_block(f"X = {x}\n"))
        if reason is None:
            assert res.valid and res.score == 0.5, (x, res.error, res.info.get("stderr"))
            continue
        assert (res.valid, res.fail_class, res.score) == (False, "invalid", None) or (
            res.fail_class == "invalid" and res.score is not None and math.isfinite(res.score)
        ), (x, res)
        assert res.evaluation is not None and res.evaluation.reason == reason, (x, res.evaluation, res.error)
        json.dumps(res.info)  # the record of the node is plain JSON


def test_math_programs_return_only_finite_scores() -> None:
    _isolated()
    ac = FirstAutocorrelation(m=4)
    cp = CirclePacking(n=2)
    cases = [
        (ac, "def construct_heights():\n    return [1e200] * 4\n", "the C1 bound is nan"),
        (ac, "def construct_heights():\n    return ['1.0'] * 4\n", "a str '1.0' where numbers belong"),
        (ac, "def construct_heights():\n    return [True] * 4\n", "a bool (True) where numbers belong"),
        (ac, "def construct_heights():\n    return [10 ** 400] * 4\n", "an int beyond float range"),
        (
            ac,
            "def construct_heights():\n    return [10 ** 5000] * 4\n",
            "an int beyond float range (16610 bits)",
        ),
        (ac, "def construct_heights():\n    return [None] * 4\n", "a NoneType where numbers belong"),
        (ac, "def construct_heights():\n    return [float('nan')] * 4\n", "non-finite heights"),
        (ac, "def construct_heights():\n    return 'abcd'\n", "a str 'abcd' where numbers belong"),
        (
            cp,
            "def construct_packing():\n    return [[0.5, 0.5, 1e308], [0.5, 0.5, 1e308]]\n",
            "sum of the radii is inf",
        ),
    ]
    for task, program, reason in cases:
        res = run_program(task, program, wall_s=20.0)
        assert res.fail_class == "invalid" and not res.valid, (program, res)
        assert res.evaluation is not None and reason in res.evaluation.reason, (
            program,
            res.evaluation,
            res.error,
        )
        assert res.score is None or math.isfinite(res.score)
    ok = run_program(ac, "def construct_heights():\n    return [1, 2, 2, 1]\n", wall_s=20.0)
    assert ok.valid and ok.score is not None and math.isfinite(ok.score)


def test_checked_refuses_a_valid_verdict_without_a_finite_score() -> None:
    assert not checked(Evaluation(float("nan"), float("nan"), True)).valid
    assert "not a finite number" in checked(Evaluation(None, None, True)).reason
    assert checked(Evaluation(1.0, 1.0, True)).valid


def test_a_run_with_bad_scores_completes_and_resumes(tmp_path: Path) -> None:
    _isolated()
    _task_dir(tmp_path / "task")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "experiment: program_agent\ntask: {kind: openevolve, dir: task}\narms: [mutate]\n"
        "seeds: [0]\nW: 2\ncalls: 4\ncalls_per_round: 4\npolicy: greedy_deepest_best\n"
    )
    out = tmp_path / "run"
    assert main(["run", str(cfg), "--out", str(out)]) == 0
    assert main(["resume", str(out)]) == 0
    assert main(["report", str(out)]) == 0
