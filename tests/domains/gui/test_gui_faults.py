"""Browser faults are the infrastructure's, never the policy's: a browser killed by pid (or hung past the
wall clock) mid-episode is replaced and the episode replayed on a fresh browser; after two retries the
episode is reported as an infrastructure failure with no reward."""

from __future__ import annotations

import os
import signal

import pytest

from rsi_workbench.domains.gui import BrowserPool, ClickCheckboxesPolicy, EpisodeLimits

pytestmark = pytest.mark.ui


class KillBrowser(ClickCheckboxesPolicy):
    """Kills the pool's browser (Chromium, by pid) on its first ``times`` actions, then solves the task."""

    def __init__(self, pool: BrowserPool, times: int, sig: int = signal.SIGKILL) -> None:
        self.pool, self.times, self.sig = pool, times, sig
        self.killed: list[int] = []

    def act(self, obs):
        if len(self.killed) < self.times:
            chromium = self.pool.envs[0].pids()[1]  # [chromedriver, chromium, chromium's children...]
            os.kill(chromium, self.sig)
            self.killed.append(chromium)
        return super().act(obs)


def test_killed_browser_is_replaced_and_episode_retried(checkbox_pool):
    expected = checkbox_pool.run(ClickCheckboxesPolicy(), [11])[0]
    before = checkbox_pool.replacements
    policy = KillBrowser(checkbox_pool, times=1)
    r = checkbox_pool.run(policy, [11])[0]
    assert len(policy.killed) == 1
    assert r.attempts == 2 and len(r.infra_errors) == 1
    assert checkbox_pool.replacements == before + 1
    assert r.outcome == "done" and r.raw_reward == 1.0 and r.evidence == "E0"
    assert (r.utterance, r.actions) == (expected.utterance, expected.actions)
    assert checkbox_pool.envs[0].pids()[1] != policy.killed[0]


def test_three_crashes_are_an_infrastructure_failure(gui_browser):
    with BrowserPool("click-checkboxes", size=1, max_retries=2) as pool:
        policy = KillBrowser(pool, times=3)
        r = pool.run(policy, [4])[0]
        assert r.outcome == "infra_failure" and r.infrastructure_failure and not r.success
        assert r.attempts == 3 and len(r.infra_errors) == 3 and r.raw_reward is None
        assert pool.replacements == 3
        # the pool still works afterwards
        assert pool.run(ClickCheckboxesPolicy(), [4])[0].success


def test_hung_browser_is_killed_by_the_wall_clock_and_retried(gui_browser):
    limits = EpisodeLimits(max_actions=8, wall_clock_s=3.0, grace_s=1.0)
    with BrowserPool("click-checkboxes", size=1, limits=limits) as pool:
        # SIGSTOP freezes Chromium: the next browser command never answers until the watchdog kills it
        policy = KillBrowser(pool, times=1, sig=signal.SIGSTOP)
        r = pool.run(policy, [2])[0]
        assert r.attempts == 2 and "hung past the episode's wall clock" in r.infra_errors[0]
        assert r.success and r.raw_reward == 1.0  # the retry ran on a fresh browser
