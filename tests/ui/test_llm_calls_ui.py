"""The run-events dashboard's LLM-calls view in a real headless Chromium, on a run whose model calls
a scripted test double made."""

from __future__ import annotations

from pathlib import Path

import pytest
from ui_harness import deep_all, free_port, panel_serve, served, severe_console_errors, wait_text, wait_until

from rsi_workbench.models import ChatResult, RecordedLLM
from rsi_workbench.records import Run

pytestmark = [pytest.mark.ui, pytest.mark.slow]


class ScriptedLLMDouble:
    """Test double for a model: answers from a script (10 tokens in, 3 out per sample)."""

    identity, name = "double:scripted", "scripted"

    def __init__(self, script: list[str]):
        self.script = list(script)

    def chat(self, messages, *, n=1, temperature=0.0, top_p=1.0, max_tokens=512, stop=None, seed=None):
        texts = [self.script.pop(0) for _ in range(n)]
        return ChatResult(texts, ["stop"] * n, 10, 3 * n, 0.25, self.identity, self.name)


def test_llm_calls_view_lists_calls_and_shows_the_clicked_one(
    browser, tmp_path: Path, artifacts_dir: Path
) -> None:
    with Run.create(tmp_path / "run", {}) as run:
        run.append("cycle_started", {}, cycle=0)
        gen = RecordedLLM.wrap(ScriptedLLMDouble(["first idea"]), run=run, role="generation")
        gen.chat([{"role": "user", "content": "propose one"}])
        crit = RecordedLLM.wrap(ScriptedLLMDouble(["a fair critique"]), run=run, role="critique")
        crit.chat([{"role": "system", "content": "be strict"}, {"role": "user", "content": "judge it"}])
    port = free_port()
    serve = panel_serve("run_events", tmp_path / "run", port)
    with served(serve, "/run_events", port, timeout=300) as url:  # a bounded wait for a loaded host
        browser.get(url)
        wait_text(browser, "LLM calls")
        wait_text(browser, "model calls: 2 live (20 tokens in + 6 out = 26")
        wait_text(browser, "first idea")  # the first call is shown until a row is clicked
        row = wait_until(
            lambda: next(
                (
                    r
                    for r in deep_all(browser, ".tabulator-row")
                    if "critique" in r.text and "double:scripted · scripted" in r.text
                ),
                None,
            ),
            30,
            "the critique call's row",
        )
        cell = row.find_element("css selector", ".tabulator-cell")
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'}); arguments[0].click();", cell)
        text = wait_text(browser, "a fair critique")
        assert "be strict" in text and "judge it" in text
        browser.execute_script(
            "arguments[0].scrollIntoView({block: 'start'});", deep_all(browser, ".rsi-llm-summary")[0]
        )
        browser.save_screenshot(str(artifacts_dir / "llm_calls.png"))
        assert severe_console_errors(browser) == []
