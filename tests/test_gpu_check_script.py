"""The prepared GPU check runs (on CPU, a 2-layer model: ``--cpu-smoke``), so it has not rotted
when a session is lent a GPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_the_gpu_check_script_runs_its_cpu_smoke(tmp_path):
    pytest.importorskip("transformers")
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu_lm_backbone.py"), "--cpu-smoke"],
        capture_output=True, text=True, timeout=600, cwd=ROOT, env={"OUT": str(tmp_path), "PATH": "/usr/bin:/bin",
                                                                   "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads((tmp_path / "gpu_lm_backbone.json").read_text())
    props = res["cycle_proposals"]
    assert res["config"] == "tiny" and props["one_at_a_time"]["s"] > 0 and props["batched"]["s"] > 0
    assert set(res["embedding"]) and "lora_step" in res
