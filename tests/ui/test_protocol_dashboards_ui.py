"""Cycle stepper and gate tuner on a real code-repair experiment, in headless Chromium."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
from ui_harness import (
    click_button,
    deep_all,
    deep_text,
    free_port,
    plotly_ready,
    served,
    severe_console_errors,
    wait_text,
    wait_until,
)

pytestmark = [pytest.mark.ui, pytest.mark.slow]


def _flips(browser) -> int:
    m = re.search(r"(\d+) of (\d+) decisions flip", deep_text(browser))
    assert m, "no flip summary on the page"
    return int(m.group(1))


def test_stepper_and_tuner_read_only(browser, code_repair_run: Path, artifacts_dir: Path) -> None:
    port = free_port()
    cmd = [sys.executable, "-m", "rsi_workbench", "serve", str(code_repair_run), "--port", str(port)]
    with served(cmd, "/cycles", port) as url:
        browser.get(url)
        wait_text(browser, "cycle 3 of 3")
        plotly_ready(browser, 1)
        assert "step one cycle" not in deep_text(browser)  # read-only: no stepping
        click_button(browser, "previous cycle")
        text = wait_text(browser, "cycle 2 of 3")
        assert "pair gate" in text
        assert "Click a candidate row" in text
        # a candidate row's click shows its unified diff against the kept program
        cell = wait_until(
            lambda: next(c for c in deep_all(browser, ".tabulator-row .tabulator-cell") if c.text.strip()),
            30,
            "a candidate cell",
        )
        browser.execute_script("arguments[0].click();", cell)
        text = wait_text(browser, "+++ candidate", 30)
        assert "unified diff against the kept program" in text and "--- kept program (cycle 2)" in text
        browser.execute_script("arguments[0].scrollIntoView();", deep_all(browser, ".rsi-candidate-diff")[0])
        browser.save_screenshot(str(artifacts_dir / "cycle_stepper.png"))
        assert severe_console_errors(browser) == []

        base = url.replace("/cycles", "/gates")
        browser.get(base)
        wait_text(browser, "decisions flip")
        plotly_ready(browser, 1)
        assert _flips(browser) == 0  # the declared thresholds reproduce every recorded decision
        # move the reliability max_brier slider (3rd slider) to its end with the keyboard
        handle = wait_until(lambda: deep_all(browser, ".noUi-handle")[2], 30, "slider handles")
        from selenium.webdriver.common.keys import Keys

        handle.send_keys(Keys.END)
        wait_until(lambda: _flips(browser) > 0, 30, "decisions to flip after the slider move")
        wait_until(lambda: "max_brier=2" in browser.current_url, 20, "threshold in the URL")
        browser.save_screenshot(str(artifacts_dir / "gate_tuner.png"))
        assert severe_console_errors(browser) == []
        # the shared link reproduces the same view
        browser.get(base + "?max_brier=2.0")
        wait_until(lambda: _flips(browser) > 0, 60, "flips from the URL thresholds")


def _truncate_after_cycle(run: Path, keep: int) -> None:
    """Cut a protocol run back to its first ``keep`` cycles (as if it had been stopped there)."""
    import json

    lines = (run / "events.jsonl").read_text().splitlines(keepends=True)
    kept = []
    for ln in lines:
        c = json.loads(ln).get("cycle")
        if c is not None and c > keep:
            break
        kept.append(ln)
    (run / "events.jsonl").write_text("".join(kept))


def test_live_stepping_in_background(
    browser, code_repair_run: Path, tmp_path: Path, artifacts_dir: Path
) -> None:
    from rsi_workbench.records import Run, RunLocked

    exp = tmp_path / "exp"
    shutil.copytree(code_repair_run, exp)
    run = exp / "runs" / "world_adaptive-seed0"
    _truncate_after_cycle(run, 1)
    port = free_port()
    cmd = [sys.executable, "-m", "rsi_workbench", "serve", str(exp), "--port", str(port), "--live"]
    with served(cmd, "/cycles?run=world_adaptive-seed0", port, timeout=180) as url:
        with pytest.raises(RunLocked):
            Run.open(exp, mode="a", exclusive=True)
        browser.get(url)
        wait_text(browser, "cycle 1 of 1")
        click_button(browser, "step one cycle")
        wait_text(browser, "running cycle 2 in the background", 30)
        # the page stays usable meanwhile (waited for: the view may be mid re-render at this instant,
        # and a fast host may already show the next cycle)
        wait_until(lambda: any(t in deep_text(browser) for t in ("cycle 1 of 1", "cycle 2 of 2")), 30)
        wait_text(browser, "cycle 2 of 2", 240)  # new events streamed in
        wait_text(browser, "cycle 2 done", 60)
        browser.save_screenshot(str(artifacts_dir / "cycle_stepper_live.png"))
        assert severe_console_errors(browser) == []
    kinds = [e.kind for e in Run.open(run).events()]
    assert kinds.count("cycle_finished") == 2


def test_code_repair_export_shows_figures(
    browser, code_repair_run: Path, tmp_path: Path, artifacts_dir: Path
) -> None:
    import subprocess

    out = tmp_path / "code_repair.html"
    subprocess.run(
        [sys.executable, "-m", "rsi_workbench", "export", str(code_repair_run), "--html", str(out)],
        check=True,
    )
    browser.get(out.as_uri())
    assert plotly_ready(browser, 5) >= 5
    text = deep_text(browser)
    for section in ("Cycles", "Prediction quality", "Gate decisions", "Run events", "Runs in this directory"):
        assert section in text
    assert "Candidate diffs · world_adaptive-seed0" in text
    # every slider opens at the state it reads, in the rendered page
    states = browser.execute_script(SLIDER_STATES_JS)
    assert states and all(s["title"].startswith(s["expect"]) for s in states if s["expect"]), states
    gate = next(s for s in states if s["prefix"].startswith("reliability max_brier"))
    assert gate["label"] == "0.25" and gate["title"].startswith("max_brier = 0.25:")
    browser.save_screenshot(str(artifacts_dir / "export_code_repair.png"))
    for name, js in (
        ("gates", "Array.from(document.querySelectorAll('h2')).find(h => h.textContent == 'Gate decisions')"),
        ("runs", "document.getElementById('runs')"),
        ("diffs", "document.querySelector('details.rsi-detail')"),
    ):
        browser.execute_script(
            f"const el = {js}; if (el.tagName == 'DETAILS') el.open = true; el.scrollIntoView();"
        )
        browser.save_screenshot(str(artifacts_dir / f"export_code_repair_{name}.png"))
    # moving a slider moves its highlight (frames carry shapes): cycle 1 of the first timeline
    x0 = browser.execute_script(
        "const gd = document.getElementById('fig-0-0'); const name = gd.layout.sliders[0].steps[0].label;"
        "return Plotly.animate(gd, [name], {mode: 'immediate', frame: {duration: 0, redraw: true},"
        " transition: {duration: 0}}).then(() => gd.layout.shapes[0].x0);"
    )
    assert x0 == pytest.approx(0.6)
    assert severe_console_errors(browser) == []


# each exported figure with a slider: its initial step's label and the title first drawn; "expect"
# is the title's start where the states' titles name the slider value (gates: "max_brier = <v>:")
SLIDER_STATES_JS = """
return Array.from(document.querySelectorAll('.js-plotly-plot')).filter(gd => gd.layout.sliders
  && gd.layout.sliders.length).map(gd => {
  const sl = gd.layout.sliders[0], step = sl.steps[sl.active];
  const title = (gd.layout.title && gd.layout.title.text) || '';
  const prefix = sl.currentvalue.prefix || '';
  const expect = prefix.startsWith('reliability max_brier') ? 'max_brier = ' + step.label + ':' : '';
  return {id: gd.id, prefix: prefix, label: step.label, title: title, expect: expect};
});
"""
