"""The cycle stepper and gate tuner on a GUI experiment (simulated pages, no MiniWoB), in headless Chromium."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ui_harness import deep_text, free_port, served, severe_console_errors, wait_text, wait_until

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))  # the simulated GUI page

pytestmark = [pytest.mark.ui, pytest.mark.slow]


def test_stepper_shows_a_gui_step_and_the_tuner_reads_gui_runs(
    browser, tmp_path: Path, artifacts_dir: Path
) -> None:
    from gui_sim import run_sim_generation

    from rsi_workbench.domains.gui.components import ActionScoringPolicy
    from rsi_workbench.experiments.gui.experiment import Config
    from rsi_workbench.records import Run

    cfg = Config(train_episodes=4, gate_episodes=2, max_actions=4, explore_cycles=1, world_steps=30)
    exp = tmp_path / "gui"
    Run.create(exp, cfg.run_config(), kind="gui").close()
    pol = ActionScoringPolicy(utility={"p_success": 1.0}, seed=0, always_submit=True)
    for m in ("rsi", "world_based"):
        run_sim_generation(exp / "runs" / f"{m}-seed0" / "gen1", pol, cfg)
    port = free_port()
    cmd = [sys.executable, "-m", "rsi_workbench", "serve", str(exp), "--port", str(port)]
    with served(cmd, "/cycles?cycle=1", port) as url:
        browser.get(url)
        text = wait_text(browser, "DOM before")
        assert "DOM after" in text and "input_checkbox#ch0" in text and "predicted_checked" in text
        size = browser.get_window_size()
        browser.set_window_size(size["width"], 2600)  # the GUI step sits below the cycle's tables
        browser.save_screenshot(str(artifacts_dir / "cycle_stepper_gui.png"))
        browser.set_window_size(size["width"], size["height"])
        assert severe_console_errors(browser) == []
        browser.get(url.replace("/cycles?cycle=1", "/gates"))
        wait_until(
            lambda: "0 of" in deep_text(browser) and "decisions flip" in deep_text(browser), 60, "flips"
        )
        assert severe_console_errors(browser) == []
