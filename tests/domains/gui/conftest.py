"""GUI-domain fixtures: one browser pool on click-checkboxes for the whole package (skips without a browser)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest


def require_browser() -> None:
    pytest.importorskip("miniwob")
    pytest.importorskip("selenium")
    from rsi_workbench.domains.gui.browser import CHROMEDRIVER, CHROMIUM

    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        pytest.skip("Debian chromium + chromium-driver are not installed (make sysdeps)")


@pytest.fixture
def gui_browser() -> None:
    """Skip unless miniwob, selenium and Debian's chromium + chromium-driver are installed."""
    require_browser()


@pytest.fixture(scope="session")
def checkbox_pool() -> Iterator[object]:
    require_browser()
    from rsi_workbench.domains.gui import BrowserPool

    pool = BrowserPool("click-checkboxes", size=1)
    try:
        yield pool.start()
    finally:
        pool.close()
