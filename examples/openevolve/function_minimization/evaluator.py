"""Evaluator (OpenEvolve format): a shifted 2-D Rastrigin function, minimised by the candidate's
``run_search`` within 2000 evaluations, for three seeds.

The candidate runs in a subprocess of ``sys.executable`` (its own interpreter, killed after
``RUN_TIMEOUT`` seconds) that writes its answers to a temporary JSON file; this process checks the
budget was kept and scores the points itself. Returns an ``EvaluationResult``: metrics
``combined_score`` = mean of 1 / (1 + f(x)) over the seeds (1.0 is the global minimum), ``value``
(mean f), ``distance`` (mean distance to the minimiser); artifacts: the subprocess's stderr.
"""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from openevolve.evaluation_result import EvaluationResult

SHIFT = np.array([1.3, -0.7])
BOUNDS = ([-5.0, -5.0], [5.0, 5.0])
BUDGET = 2000
SEEDS = (0, 1, 2)
RUN_TIMEOUT = 20


def objective(x):
    """Shifted Rastrigin: many local minima, global minimum 0 at SHIFT."""
    z = np.asarray(x, dtype=float) - SHIFT
    return float(10 * z.size + np.sum(z * z - 10 * np.cos(2 * np.pi * z)))


RUNNER = """
import importlib.util, json, sys
import numpy as np
sys.path.insert(0, {here!r})
from evaluator import objective, BOUNDS, BUDGET

spec = importlib.util.spec_from_file_location("candidate", {program!r})
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
out = []
for seed in {seeds!r}:
    calls = [0]
    def counted(x):
        calls[0] += 1
        if calls[0] > BUDGET:
            raise RuntimeError("evaluation budget exceeded")
        return objective(x)
    x = np.asarray(mod.run_search(counted, BOUNDS, BUDGET, seed), dtype=float).tolist()
    out.append({{"seed": seed, "x": x, "calls": calls[0]}})
with open({result!r}, "w") as f:
    json.dump(out, f)
"""


def evaluate(program_path):
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as tmp:
        result = os.path.join(tmp, "result.json")
        runner = os.path.join(tmp, "runner.py")
        with open(runner, "w") as f:
            f.write(RUNNER.format(here=here, program=program_path, seeds=SEEDS, result=result))
        try:
            proc = subprocess.run(
                [sys.executable, runner], capture_output=True, text=True, timeout=RUN_TIMEOUT
            )
        except subprocess.TimeoutExpired:
            return EvaluationResult(
                metrics={"combined_score": 0.0, "error": "timeout"},
                artifacts={"error": f"the search ran past {RUN_TIMEOUT} s"},
            )
        if proc.returncode != 0 or not os.path.exists(result):
            return EvaluationResult(
                metrics={"combined_score": 0.0, "error": "the program failed"},
                artifacts={"stderr": proc.stderr[-2000:]},
            )
        with open(result) as f:
            runs = json.load(f)
    fs, dists = [], []
    for r in runs:
        x = np.asarray(r["x"], dtype=float)
        if x.shape != (2,) or not np.all(np.isfinite(x)):
            return EvaluationResult(
                metrics={"combined_score": 0.0, "error": "bad point"},
                artifacts={"error": f"seed {r['seed']}: run_search returned {r['x']!r}"},
            )
        x = np.clip(x, BOUNDS[0], BOUNDS[1])
        fs.append(objective(x))
        dists.append(np.linalg.norm(x - SHIFT))
    return EvaluationResult(
        metrics={
            "combined_score": np.mean([1.0 / (1.0 + f) for f in fs]),
            "value": np.mean(fs),
            "distance": np.mean(dists),
        },
        artifacts={"stderr": proc.stderr[-2000:], "values": json.dumps([round(f, 6) for f in fs])},
    )
