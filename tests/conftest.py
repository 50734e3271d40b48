"""Shared test fixtures: the dataset mirror, and skipping of gpu-marked tests without CUDA."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
_default_mirror = REPO.parent / "shared" / "datasets"
if "RSI_WORKBENCH_DATA" not in os.environ and _default_mirror.exists():
    os.environ["RSI_WORKBENCH_DATA"] = str(_default_mirror)

ARTIFACTS = REPO / "tests" / "artifacts"  # screenshots and other test outputs worth looking at


def _has_cuda() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _has_cuda():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU on this machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


# -- real runs shared by the viz, notebook and browser tests (built once, cached in tests/artifacts/runs)
sys.path.insert(0, str(REPO / "tests" / "ui"))
import workbench_runs  # noqa: E402


@pytest.fixture(scope="session")
def code_repair_run() -> Path:
    """A real code-repair experiment (the protocol engine's tiny config; Random-K + adaptive world model)."""
    return workbench_runs.code_repair_experiment()


@pytest.fixture(scope="session")
def smoke_run() -> Path:
    """A real ``records_smoke`` run (tests/ui overrides it with a copy that tests may lock)."""
    return workbench_runs.records_smoke()


@pytest.fixture(scope="session")
def dreaming_run() -> Path:
    """A real dreaming experiment (the Dream-RSI engine's smoke config)."""
    return workbench_runs.dreaming_experiment()


@pytest.fixture(scope="session")
def discovery_run() -> Path:
    """A real DiscoveryRSI campaign (the engine's smoke config)."""
    return workbench_runs.discovery_campaign()
