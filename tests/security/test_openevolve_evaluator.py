"""An OpenEvolve evaluator in the sandbox (run as root in the main pytest run and again as
``nobody``): it reads its task directory (a read-only copy) and nothing else of the host, may start
``sys.executable`` subprocesses that import numpy and the compatibility ``openevolve`` and write temp
files, and cannot write into its task directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from rsi_workbench import sandbox
from rsi_workbench.domains.openevolve import TASK_ROOT, load_task

REPO = Path(__file__).resolve().parents[2]
INITIAL = "# EVOLVE-BLOCK-START\nX = 2\n# EVOLVE-BLOCK-END\n"
EVALUATOR = """import json, os, subprocess, sys, tempfile
from openevolve.evaluation_result import EvaluationResult

HIDDEN = {hidden!r}
CHILD = (
    "import sys, numpy, openevolve.evaluation_result as e; sys.path.insert(0, sys.argv[2]);"
    "import program; open(sys.argv[1], 'w').write(str(program.X * int(numpy.int64(3))) + ' ' + e.__name__)"
)


def evaluate(program_path):
    here = os.path.dirname(os.path.abspath(__file__))
    seen = [p for p in HIDDEN if os.path.exists(p)]
    try:
        open(os.path.join(here, "written.txt"), "w").write("x")
        wrote = True
    except OSError:
        wrote = False
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.txt")
        proc = subprocess.run([sys.executable, "-c", CHILD, out, os.path.dirname(program_path)],
                              capture_output=True, text=True, timeout=20)
        child = open(out).read() if proc.returncode == 0 else proc.stderr[-800:]
    ok = not seen and not wrote and child == "6 openevolve.evaluation_result"
    return EvaluationResult(
        metrics={{"combined_score": 1.0 if ok else 0.0}},
        artifacts={{"seen": json.dumps(seen), "wrote": str(wrote), "child": child, "here": here,
                    "listing": json.dumps(sorted(os.listdir(here)))}},
    )
"""


def test_evaluator_sees_its_directory_only_and_may_spawn_python(tmp_path: Path) -> None:
    grant = sandbox.obtain_isolation((), purpose="test")
    if not grant.isolation.complete:
        pytest.skip(f"sandbox isolation incomplete here ({grant.isolation.plan}); mode {grant.mode}")
    task_dir = tmp_path / "task"
    task_dir.mkdir()
    # not /root: a pyenv libpython is bound at its build-time path there (sandbox.plan.allow_list)
    hidden = [str(REPO), str(task_dir), str(tmp_path), "/work", "/home", "/srv"]
    (task_dir / "initial_program.py").write_text(INITIAL)
    (task_dir / "evaluator.py").write_text(EVALUATOR.format(hidden=hidden))
    (task_dir / "config.yaml").write_text("evaluator:\n  timeout: 30\n")
    task = load_task(task_dir)
    res = task.evaluate_program(task.seed_program)
    arts = res.info.get("artifacts", {})
    assert res.valid and res.score == 1.0, (res.error, arts, res.info.get("stderr"))
    assert arts["here"] == f"{TASK_ROOT}/task" and "evaluator.py" in arts["listing"]
    assert res.info["compat"] is True
    assert not (task_dir / "written.txt").exists()
