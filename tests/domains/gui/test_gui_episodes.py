"""MiniWoB++ episodes end to end in Debian's headless Chromium: the scripted policy solves
click-checkboxes (raw reward 1, E0), a wrong submit scores ≤ 0, another task with typing works,
and unknown task names fail with close names."""

from __future__ import annotations

import json

import pytest

from rsi_workbench.domains.gui import (
    BrowserPool,
    ClickCheckboxesPolicy,
    GuiEnv,
    GuiObservation,
    SubmitAtOncePolicy,
    UnknownTaskError,
    checkbox_targets,
    parse_action,
    play_episode,
    resolve_task,
    task_names,
)

pytestmark = pytest.mark.ui


def test_scripted_policy_solves_click_checkboxes(checkbox_pool):
    seen: list[GuiObservation] = []

    class Spy(ClickCheckboxesPolicy):
        def act(self, obs):
            seen.append(obs)
            return super().act(obs)

    results = checkbox_pool.run(Spy(), [1, 2, 3])
    for r in results:
        assert r.outcome == "done" and r.raw_reward == 1.0 and r.success
        assert r.evidence == "E0" and r.attempts == 1 and not r.infra_errors
        assert r.actions[-1] == {"type": "submit"}
        # one click per target box (all start unchecked), then submit: no repeated clicks
        assert len(r.actions) == len(checkbox_targets(r.utterance)) + 1
        assert 0 < r.env_reward <= r.raw_reward  # the time-discounted reward is kept apart
    assert [r.seed for r in results] == [1, 2, 3]
    # the policy saw plain data only: no reward, no driver
    for obs in seen:
        text = json.dumps(obs.to_json()).lower()  # plain JSON data; MiniWoB's reward display is off-DOM
        assert "reward" not in text and "episodes done" not in text and obs.screenshot is None


def test_same_seed_same_episode(checkbox_pool):
    a, b = checkbox_pool.run(ClickCheckboxesPolicy(), [7, 7])
    assert a.utterance == b.utterance and a.actions == b.actions


def test_wrong_submit_scores_at_most_zero(checkbox_pool):
    results = checkbox_pool.run(SubmitAtOncePolicy(), [1, 2, 3, 4])
    wrong = [r for r in results if checkbox_targets(r.utterance)]
    assert wrong, "every seed asked for nothing"
    for r in wrong:
        assert r.outcome == "done" and r.raw_reward <= 0 and not r.success
        assert r.actions == [{"type": "submit"}]


class EnterTextPolicy:
    """enter-text: type the requested word into the text field, then submit."""

    def act(self, obs):
        box = obs.find(tag="input_text")[0]
        if not obs.actions_taken:
            return {"type": "type", "ref": box.ref, "text": dict(obs.fields)["target"]}
        return {"type": "submit"}


def test_another_task_with_typing_and_screenshots(gui_browser):
    with GuiEnv("enter-text", screenshots=True, page_timer_s=120) as env:
        obs = env.reset(5)
        assert env._driver.execute_script("return core.EPISODE_MAX_TIME;") == 120_000  # not MiniWoB's 10 s
        assert obs.screenshot is not None and obs.screenshot[:8] == b"\x89PNG\r\n\x1a\n"
        r = play_episode(env, EnterTextPolicy(), 5)
        assert r.success and r.raw_reward == 1.0
        assert r.actions[0]["type"] == "type" and r.actions[-1] == {"type": "submit"}
        # a key press is valid data too
        obs = env.reset(6)
        assert parse_action({"type": "key", "key": "<Tab>"}, obs).key == "<Tab>"


def test_unknown_task_lists_close_names():
    pytest.importorskip("miniwob")
    assert "click-checkboxes" in task_names() and "enter-text" in task_names()
    assert resolve_task("click-checkboxes") == "click-checkboxes"
    with pytest.raises(UnknownTaskError, match="click-checkboxes"):
        resolve_task("click-checkbox")
    with pytest.raises(UnknownTaskError, match="did you mean"):
        GuiEnv("enter-txt")
    with pytest.raises(UnknownTaskError, match="tasks are available"):
        BrowserPool("zzzzzzzz")


def test_browser_is_debians_chromium_offline(checkbox_pool):
    import os

    import psutil

    from rsi_workbench.domains.gui.browser import CHROMEDRIVER, CHROMIUM

    assert os.environ.get("SE_OFFLINE") == "true"  # Selenium Manager can never download anything
    env = checkbox_pool.envs[0]
    env.start()
    pids = env.pids()
    assert psutil.Process(pids[0]).exe() == os.path.realpath(CHROMEDRIVER)
    cmdline = " ".join(psutil.Process(pids[1]).cmdline())
    # the binary_location is Debian's wrapper script (/usr/bin/chromium); it execs /usr/lib/chromium/chromium
    exe = psutil.Process(pids[1]).exe()
    assert CHROMIUM.startswith("/usr/") and exe.startswith("/usr/") and ".cache/selenium" not in exe
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-background-networking",
        "--disable-component-update",
    ):
        assert flag in cmdline
    assert "--user-data-dir=" in cmdline and "rsi-gui-chrome-" in cmdline


def test_two_browsers_play_in_parallel_and_return_seed_order(gui_browser):
    seen: list[int] = []
    with BrowserPool("click-checkboxes", size=2) as pool:
        results = pool.run(ClickCheckboxesPolicy(), [5, 6, 7, 8, 9], on_result=lambda r: seen.append(r.seed))
        assert len({env.pids()[0] for env in pool.envs}) == 2  # one browser per worker
    assert [r.seed for r in results] == [5, 6, 7, 8, 9] and sorted(seen) == [5, 6, 7, 8, 9]
    assert all(r.success and r.attempts == 1 for r in results)
