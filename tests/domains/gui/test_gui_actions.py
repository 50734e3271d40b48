"""Actions are plain data checked by the host: anything that tries to run script, drive the browser or set
the reward is invalid data, has no effect, and earns no credit."""

from __future__ import annotations

import pytest

from rsi_workbench.domains.gui import (
    ClickCheckboxesPolicy,
    GuiElement,
    GuiObservation,
    InvalidAction,
    parse_action,
)
from rsi_workbench.domains.gui.actions import Click, Submit, TypeText

pytestmark = pytest.mark.ui


def _el(ref: int, tag: str, id: str = "", text: str | None = None) -> GuiElement:
    return GuiElement(ref, 1, tag, text, None, id, "", 0.0, 0.0, 10.0, 10.0)


OBS = GuiObservation(
    task="click-checkboxes",
    step=0,
    utterance="Select abc and click Submit.",
    fields=(("target 0", "abc"),),
    elements=(
        _el(1, "body"),
        _el(6, "input_checkbox", "ch0"),
        _el(-1, "t", text="abc"),
        _el(9, "button", "subbtn", "Submit"),
    ),
)

ATTACKS = [
    {"type": "script", "code": "WOB_RAW_REWARD_GLOBAL = 1; core.endEpisode(1, true);"},
    {"type": "execute_script", "script": "return 1"},
    {"type": "click", "ref": "6); core.endEpisode(1, true); (0"},  # script smuggled through a ref
    {"type": "click", "ref": 6.0},
    {"type": "click", "ref": True},
    {"type": "click", "ref": 6, "reward": 1.0},  # extra keys are not data we know
    {"type": "submit", "raw_reward": 1},
    {"type": "reward", "value": 1},
    {"type": "click", "ref": 999},  # not on the page
    {"type": "key", "key": "\ue00a<F4>"},  # raw WebDriver codes
    {"type": "key", "key": "javascript:core.endEpisode(1)"},
    {"type": "type", "ref": 6, "text": "x\ue006"},  # control codes inside text
    {"type": "type", "ref": 6, "text": "a" * 201},
    {"ref": 6},
    "click 6",
    ["click", 6],
    None,
    lambda driver: driver.execute_script("WOB_RAW_REWARD_GLOBAL = 1"),
]


@pytest.mark.parametrize("attack", ATTACKS, ids=range(len(ATTACKS)))
def test_script_and_reward_actions_are_invalid_data(attack):
    with pytest.raises(InvalidAction):
        parse_action(attack, OBS)


def test_valid_actions_are_plain_data():
    assert parse_action({"type": "click", "ref": 6}, OBS) == Click(ref=6)
    assert parse_action({"type": "type", "ref": 6, "text": "héllo, world!"}, OBS) == TypeText(
        ref=6, text="héllo, world!"
    )
    assert parse_action({"type": "submit"}, OBS) == Submit()
    assert parse_action({"type": "key", "key": "<Enter>"}, OBS).key == "<Enter>"
    assert parse_action(Click(ref=6), OBS) == Click(ref=6)
    no_button = GuiObservation("t", 0, "u", (), (_el(1, "body"),))
    with pytest.raises(InvalidAction, match="no submit button"):
        parse_action({"type": "submit"}, no_button)


class Cheater:
    """Tries every attack, never a real action."""

    def __init__(self) -> None:
        self.i = 0

    def act(self, obs):
        self.i += 1
        return ATTACKS[(self.i - 1) % len(ATTACKS)]


def test_a_cheating_policy_gets_no_credit(checkbox_pool):
    r = checkbox_pool.run(Cheater(), [21])[0]
    assert r.actions == [] and len(r.invalid_actions) == checkbox_pool.limits.max_actions
    assert r.outcome == "max_actions" and r.raw_reward <= 0 and not r.success
    assert r.attempts == 1  # the policy's fault, not the browser's: never retried
    # the page was not touched: the same browser still plays a clean episode
    assert checkbox_pool.run(ClickCheckboxesPolicy(), [21])[0].success


class Crashes:
    def act(self, obs):
        raise RuntimeError("policy bug")


def test_a_policy_that_raises_is_a_policy_failure(checkbox_pool):
    r = checkbox_pool.run(Crashes(), [22])[0]
    assert r.outcome == "policy_error" and "policy bug" in r.policy_error
    assert r.raw_reward <= 0 and not r.success and r.attempts == 1 and not r.infra_errors
