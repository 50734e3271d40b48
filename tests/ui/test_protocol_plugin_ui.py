"""The researcher's own protocol domain (examples/protocol_domain) in the served cycles, gates and
events dashboards, in headless Chromium (screenshots in tests/artifacts)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from ui_harness import REPO, deep_text, free_port, plotly_ready, served, severe_console_errors, wait_text

pytestmark = [pytest.mark.ui, pytest.mark.slow]


def test_example_domain_in_the_dashboards(browser, tmp_path: Path, artifacts_dir: Path) -> None:
    from rsi_workbench import cli

    run = tmp_path / "sgd"
    assert cli.main(["run", str(REPO / "examples/protocol_domain/config.yaml"), "--out", str(run)]) == 0
    port = free_port()
    cmd = [sys.executable, "-m", "rsi_workbench", "serve", str(run), "--port", str(port)]
    with served(cmd, "/cycles", port) as url:
        browser.get(url)
        text = wait_text(browser, "cycle 6 of 6")
        assert "cycles" in text and "gates" in text and "events" in text  # the banner links all three
        plotly_ready(browser, 1)
        browser.save_screenshot(str(artifacts_dir / "protocol_example_cycles.png"))
        assert severe_console_errors(browser) == []
        browser.get(url.replace("/cycles", "/gates"))
        wait_text(browser, "decisions flip")
        plotly_ready(browser, 1)
        assert re.search(r"\b0 of \d+ decisions flip", deep_text(browser))  # declared thresholds: none
        browser.save_screenshot(str(artifacts_dir / "protocol_example_gates.png"))
        browser.get(url.replace("/cycles", "/events"))
        wait_text(browser, "6 cycles")
        plotly_ready(browser, 1)
        browser.save_screenshot(str(artifacts_dir / "protocol_example_events.png"))
        assert severe_console_errors(browser) == []
