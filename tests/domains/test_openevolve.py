"""OpenEvolve task directories: the evolve block is the only text that changes, the directory and its
config.yaml are checked before a run exists, and one evaluation runs in the sandbox — a raising or
hanging evaluator is a failed node with its class, numpy / NaN metrics come back as plain data, and
``openevolve.evaluation_result`` imports there without OpenEvolve (never shadowing a real one)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from rsi_workbench.cli import load_experiment_config, main
from rsi_workbench.config import ConfigError
from rsi_workbench.domains.openevolve import (
    OpenEvolveTaskError,
    check_task_dir,
    load_task,
    mutate_block,
    read_settings,
    split_evolve_block,
    verdict,
)

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "openevolve"
INITIAL = '''"""A task."""
import math

SCALE = 3


# EVOLVE-BLOCK-START
def value(x):
    return -(x - 1.5) ** 2 + 0.25 * x
# EVOLVE-BLOCK-END


def unrelated():
    return 7 * SCALE
'''


def make_dir(root: Path, evaluator: str, config: str | None = None, initial: str = INITIAL) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "initial_program.py").write_text(initial)
    (root / "evaluator.py").write_text(evaluator)
    if config is not None:
        (root / "config.yaml").write_text(config)
    return root


def test_only_the_evolve_block_changes() -> None:
    blk = split_evolve_block(INITIAL)
    assert blk.program == INITIAL
    assert blk.prefix.endswith("# EVOLVE-BLOCK-START\n") and blk.suffix.startswith("# EVOLVE-BLOCK-END\n")
    seen = set()
    for seed in range(12):
        new, changes = mutate_block(blk.block, seed, prefix=blk.prefix, suffix=blk.suffix)
        assert (new, changes) == mutate_block(blk.block, seed, prefix=blk.prefix, suffix=blk.suffix)
        child = blk.with_block(new)
        again = split_evolve_block(child)
        assert again.prefix == blk.prefix and again.suffix == blk.suffix  # byte for byte
        assert changes and all(c["old"] != c["new"] for c in changes)
        seen.add(new)
    assert len(seen) > 6
    for d in ("function_minimization", "circle_packing_cascade"):
        text = (EXAMPLES / d / "initial_program.py").read_text()
        task = load_task(EXAMPLES / d)
        b = task.split(text)
        new, _ = mutate_block(b.block, 5, prefix=b.prefix, suffix=b.suffix)
        out = b.with_block(new)
        assert out.startswith(b.prefix) and out.endswith(b.suffix) and out != text
    with pytest.raises(OpenEvolveTaskError, match="outside the evolve block"):
        load_task(EXAMPLES / "circle_packing_cascade").split(INITIAL)


def test_mutate_leaves_subscript_indices_alone() -> None:
    """``bounds[1]`` is an index (moving it raised IndexError in 4 of 6 calls); other literals mutate."""
    block = "x = bounds[1] * 2.5 + a[0][3] - f(7)[1] + m[:, 0]\ny = [1, 2] + g(4, 3.0)\n"
    seen: set[str] = set()
    for seed in range(60):
        new, changes = mutate_block(block, seed)
        assert "bounds[1]" in new and "a[0][3]" in new and ")[1]" in new and "[:, 0]" in new
        seen.update(c["old"] for c in changes)
    assert {"2.5", "7", "4", "3.0"} <= seen and "0" not in seen
    fm = (EXAMPLES / "function_minimization" / "initial_program.py").read_text()
    b = split_evolve_block(fm)
    for seed in range(20):
        new, _ = mutate_block(b.block, seed, prefix=b.prefix, suffix=b.suffix)
        assert new.count("bounds[1]") == b.block.count("bounds[1]")


def test_directory_and_config_yaml_are_checked(tmp_path: Path) -> None:
    with pytest.raises(OpenEvolveTaskError, match="not a directory"):
        check_task_dir(tmp_path / "nope")
    d = tmp_path / "t"
    d.mkdir()
    with pytest.raises(OpenEvolveTaskError, match="initial_program.py: missing"):
        check_task_dir(d)
    (d / "initial_program.py").write_text("x = 1\n")
    with pytest.raises(OpenEvolveTaskError, match="evaluator.py: missing"):
        check_task_dir(d)
    (d / "evaluator.py").write_text("def score(p):\n    return {}\n")
    with pytest.raises(OpenEvolveTaskError, match="initial_program.py: no '# EVOLVE-BLOCK-START'"):
        check_task_dir(d)
    (d / "initial_program.py").write_text(INITIAL)
    with pytest.raises(OpenEvolveTaskError, match=r"evaluator.py: defines no top-level function evaluate"):
        check_task_dir(d)
    (d / "evaluator.py").write_text("def evaluate(p):\n    return {}\n")
    (d / "config.yaml").write_text("evaluator:\n  timeout: -3\n")
    with pytest.raises(OpenEvolveTaskError, match="config.yaml: evaluator.timeout"):
        check_task_dir(d)
    (d / "config.yaml").write_text("evaluator:\n  timeout: 7\n  cascade_thresholds: [0.3, 0.6]\nllm: {}\n")
    s = read_settings(d / "config.yaml")
    assert (s.timeout, s.cascade_evaluation, s.cascade_thresholds) == (7.0, True, (0.3, 0.6))
    # through `rsi-workbench run`: the error names the config field and the file, and no run exists
    (d / "evaluator.py").unlink()
    cfg = tmp_path / "c.yaml"
    cfg.write_text("experiment: program_agent\ntask: {kind: openevolve, dir: t}\narms: [mutate]\n")
    with pytest.raises(ConfigError, match=r"task.dir: .*t/evaluator.py: missing"):
        load_experiment_config(cfg)
    out = tmp_path / "run"
    assert main(["run", str(cfg), "--out", str(out)]) == 2
    assert not out.exists()
    cfg.write_text("experiment: program_agent\ntask: {kind: openevolve, dir: t}\narms: [scipy]\n")
    with pytest.raises(ConfigError, match="'scipy' is not available for an OpenEvolve task"):
        load_experiment_config(cfg, check=False)


def test_verdict_rules() -> None:
    assert verdict({"combined_score": 0.5}).valid
    assert verdict({"a": 1.0, "b": 3.0, "error": 0.0}).score == 2.0  # OpenEvolve's mean fallback
    assert not verdict({"a": 1.0, "error": 0.0}).valid
    assert not verdict({"combined_score": 0.9, "validity": 0.0}).valid
    v = verdict({"combined_score": float("nan")})
    assert (v.score, v.valid) == (None, False) and "nan" in v.reason
    assert not verdict({"note": "text only"}).valid


RAISES = "def evaluate(program_path):\n    raise ValueError('evaluator broke')\n"
HANGS = "import time\n\n\ndef evaluate(program_path):\n    while True:\n        time.sleep(0.05)\n"
NUMPY = """import numpy as np
from openevolve.evaluation_result import EvaluationResult
import openevolve


def evaluate(program_path):
    src = open(program_path).read()
    return EvaluationResult(
        metrics={"combined_score": np.float64(0.25) + len(src) * 0, "n": np.int64(3), "flag": np.bool_(True),
                 "gap": float("nan"), "top": np.float32("inf"),
                 "compat": float(getattr(openevolve, "RSI_WORKBENCH_COMPAT", False))},
        artifacts={"log": b"bytes artifact", "arr": np.arange(3)},
    )
"""
NAN_SCORE = "def evaluate(program_path):\n    return {'combined_score': float('nan')}\n"
REAL_OPENEVOLVE = "def evaluate(program_path):\n    import openevolve\n    return {'combined_score': float(openevolve.REAL)}\n"


def test_evaluations_in_the_sandbox(tmp_path: Path) -> None:
    raising = load_task(make_dir(tmp_path / "raises", RAISES))
    res = raising.evaluate_program(raising.seed_program)
    assert (res.fail_class, res.valid) == ("error", False)
    assert "ValueError: evaluator broke" in res.error and "evaluate" in res.error
    hanging = load_task(make_dir(tmp_path / "hangs", HANGS, "evaluator:\n  timeout: 1\n"))
    res = hanging.evaluate_program(hanging.seed_program)
    assert (res.fail_class, res.valid) == ("timeout", False) and "evaluate" in res.error
    nump = load_task(make_dir(tmp_path / "numpy", NUMPY))
    res = nump.evaluate_program(nump.seed_program)
    assert res.valid and res.score == 0.25 and res.info["compat"] is True
    m = res.info["metrics"]  # tagged plain data: NaN / inf encoded, numpy scalars as numbers
    assert m["n"] == 3 and m["flag"] is True and m["compat"] == 1.0
    assert m["gap"] == {"$f": "nan"} and m["top"] == {"$f": "inf"}
    assert res.info["artifacts"] == {"log": "bytes artifact", "arr": [0, 1, 2]}
    nan = load_task(make_dir(tmp_path / "nan", NAN_SCORE))
    res = nan.evaluate_program(nan.seed_program)
    assert (res.fail_class, res.score) == ("invalid", None)
    assert not any(isinstance(v, float) and math.isnan(v) for v in [res.score])
    real = make_dir(tmp_path / "real", REAL_OPENEVOLVE)  # an importable openevolve is never shadowed
    (real / "openevolve").mkdir()
    (real / "openevolve" / "__init__.py").write_text("REAL = 1\n")
    res = load_task(real).evaluate_program(INITIAL)
    assert res.valid and res.score == 1.0 and res.info["compat"] is False
