"""Shared real runs (see tests/ui/workbench_runs.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ui"))
import workbench_runs  # noqa: E402


@pytest.fixture(scope="session")
def code_repair_run() -> Path:
    """A real code-repair experiment (the protocol engine's tiny config; Random-K + adaptive world model)."""
    return workbench_runs.code_repair_experiment()


@pytest.fixture(scope="session")
def smoke_run() -> Path:
    return workbench_runs.records_smoke()


@pytest.fixture(scope="session")
def dreaming_run() -> Path:
    """A real dreaming experiment (the Dream-RSI engine's smoke config)."""
    return workbench_runs.dreaming_experiment()


@pytest.fixture(scope="session")
def discovery_run() -> Path:
    """A real DiscoveryRSI campaign (the engine's smoke config)."""
    return workbench_runs.discovery_campaign()
