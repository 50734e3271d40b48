"""The memory browser on an RSIAgent engine run, in headless Chromium: the tree per snapshot with its
diff, the waves plot, the ledger with evidence and the audit rejects; the static export.

The run is made in-process by the memory engine with the engine's hand-built test doubles (a few
milliseconds, no browser or sandbox inside the run)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from ui_harness import (
    deep_all,
    free_port,
    panel_serve,
    plotly_ready,
    served,
    severe_console_errors,
    wait_text,
)

pytestmark = [pytest.mark.ui, pytest.mark.slow]


@pytest.fixture(scope="module")
def memory_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "memory"))
    from memory_doubles import (
        AnswerVerifierDouble,
        FamilyEnvDouble,
        RecordingActorDouble,
        ScriptedCurriculumDouble,
        practice_waves,
    )

    from rsi_workbench.memory.engine import run_rsiagent
    from rsi_workbench.records import Run

    out = tmp_path_factory.mktemp("memory") / "run"
    env = FamilyEnvDouble(host_only=("ateb",))  # beta's answer is host-only: its procedure is rejected
    cur = ScriptedCurriculumDouble(practice_waves(["alpha"], ["beta", "alpha"]))
    with Run.create(out, {"test": "memory_browser"}) as run:
        res = run_rsiagent(env, RecordingActorDouble, AnswerVerifierDouble(), cur, {"shingle_n": 1}, run)
    assert res.status == "done"
    return out


def test_memory_browser_tree_diff_ledger_and_rejects(
    browser, memory_run: Path, artifacts_dir: Path, tmp_path: Path
) -> None:
    from selenium.webdriver.support.ui import Select

    port = free_port()
    # generous start-up wait: the page builds on the first request, slow on a loaded shared machine
    with served(panel_serve("memory_browser", memory_run, port), "/memory_browser", port, timeout=240) as url:
        browser.get(url)
        text = wait_text(browser, "Memory at")
        assert "Partial" in text and "Audit rejects" in text and "Verdicts with evidence" in text
        plotly_ready(browser, 2)
        sel = next(s for s in deep_all(browser, "select") if "(empty memory)" in s.get_attribute("innerHTML"))
        Select(sel).select_by_visible_text("(empty memory)")
        wait_text(browser, "vs (empty memory)")
        wait_text(browser, "+++ after/")  # the selected file's diff against the empty memory
        wait_text(browser, "procedures/")  # the tree table (rendered after the title)
        browser.save_screenshot(str(artifacts_dir / "memory_browser.png"))
        assert severe_console_errors(browser) == []
    html = tmp_path / "memory.html"
    cmd = [sys.executable, "-m", "rsi_workbench", "export", str(memory_run), "--html", str(html)]
    subprocess.run(cmd, check=True, capture_output=True)
    assert "Waves and branches" in html.read_text()
