"""Shared test fixtures: the dataset mirror, and skipping of gpu-marked tests without CUDA."""

from __future__ import annotations

import os
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
