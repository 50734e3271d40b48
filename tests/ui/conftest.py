"""Fixtures for the browser tests: one headless Chromium per module; the real runs come from tests/conftest.py."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import workbench_runs
from ui_harness import CHROMEDRIVER, CHROMIUM, make_driver


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        pytest.skip("Debian chromium + chromium-driver are not installed (make sysdeps)")
    pytest.importorskip("selenium")
    driver = make_driver()
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real ``records_smoke`` run (every registered dataset, one per cycle), copied so tests may lock it."""
    src = workbench_runs.records_smoke()
    out = tmp_path_factory.mktemp("runs") / "smoke"
    shutil.copytree(src, out)
    return out
