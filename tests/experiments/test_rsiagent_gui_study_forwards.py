"""The commands written in frozen config headers and committed summaries (``python -m
rsi_workbench.experiments.gui.pretrain`` / ``...rsiagent.matched_report`` / ``page_check`` /
``pooled_report``) still run: their modules forward to the studies under ``studies/``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("module", "expect"),
    [
        ("rsi_workbench.experiments.gui.pretrain", "--train-episodes"),
        ("rsi_workbench.experiments.rsiagent.matched_report", "--headline"),
        ("rsi_workbench.experiments.rsiagent.page_check", "--instances"),
    ],
)
def test_old_commands_forward_to_the_studies(module: str, expect: str) -> None:
    res = subprocess.run(
        [sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stderr
    assert expect in res.stdout


def test_pooled_report_forward_prints_its_usage() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "rsi_workbench.experiments.rsiagent.pooled_report"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 2 and "studies/rsiagent_pooled_report/pooled_report.py" in res.stderr
