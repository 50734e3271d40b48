"""The GUI experiment's parts without a browser: config and registration, test/train disjointness by
content, the DOM features, and that the built-in policy and world model learn from step records."""

from __future__ import annotations

import random

import numpy as np
import pytest

from rsi_workbench.cli import EXPERIMENT_KINDS, load_experiment_config
from rsi_workbench.domains.gui.binding import GuiVerifier, episode_stats
from rsi_workbench.domains.gui.components import ActionScoringPolicy, OutcomeWorldModel
from rsi_workbench.domains.gui.features import StepState, candidate_actions, content_key, controls
from rsi_workbench.domains.gui.generation import protocol_settings
from rsi_workbench.experiments.gui.experiment import (
    Config,
    assert_test_disjoint,
    draw_instances,
    fixed_test_seeds,
)
from rsi_workbench.protocol.spec import Observation, PairRecord
from rsi_workbench.protocol.splits import SplitOverlap

WORDS = ["alpha", "bravo", "charlie", "delta", "echo"]


def page(checked: list[bool], wanted: list[int], actions: tuple = ()) -> StepState:
    """A click-checkboxes page: labels with a checkbox and a text node each, and a submit button."""
    els = [
        {"ref": 1, "parent_ref": None, "tag": "body", "text": None, "value": None, "id": ""},
        {"ref": 4, "parent_ref": 1, "tag": "div", "text": None, "value": None, "id": "boxes"},
    ]
    for i, w in enumerate(WORDS[: len(checked)]):
        lab, box = 10 + 2 * i, 11 + 2 * i
        els += [
            {"ref": lab, "parent_ref": 4, "tag": "label", "text": None, "value": None, "id": ""},
            {
                "ref": box,
                "parent_ref": lab,
                "tag": "input_checkbox",
                "text": "",
                "value": checked[i],
                "id": f"ch{i}",
            },
            {"ref": -1 - i, "parent_ref": lab, "tag": "t", "text": w, "value": None, "id": ""},
        ]
    els.append({"ref": 30, "parent_ref": 1, "tag": "button", "text": "Submit", "value": None, "id": "subbtn"})
    utt = "Select " + (", ".join(WORDS[i] for i in wanted) or "nothing") + " and click Submit."
    return StepState("t", 1, utt, tuple(els), actions)


def simulate(state: StepState, action: dict, wanted: list[int]) -> Observation:
    """What the page would report (the rule click-checkboxes applies), for synthetic records."""
    ctrls = controls(state)
    after = [c.checked for c in ctrls]
    for i, c in enumerate(ctrls):
        if action.get("type") == "click" and action["ref"] in (c.ref, c.label_ref):
            after[i] = not after[i]
    score = sum(1 if a == (i in wanted) else -1 for i, a in enumerate(after)) / len(after)
    before = sum(1 if c.checked == (i in wanted) else -1 for i, c in enumerate(ctrls)) / len(ctrls)
    ends = action["type"] == "submit"
    return Observation(
        {"p_success": float(score == 1), "submit_score": score, "ends_success": float(ends and score == 1)},
        labels=[int(a) for a in after] + [int(score == 1)],
        detail={"score_before": before},
    )


def records(n: int, seed: int = 0) -> list[PairRecord]:
    rng = random.Random(seed)
    out = []
    for j in range(n):
        size = rng.randint(3, 5)
        wanted = sorted(rng.sample(range(size), rng.randint(0, size)))
        st = page([rng.random() < 0.3 for _ in range(size)], wanted)
        a = rng.choice(candidate_actions(st))
        obs = simulate(st, a, wanted)
        out.append(PairRecord(f"t{j}", 1, st.to_json(), a, None, obs, "p", None, "update"))
    return out


def test_gui_kind_is_registered_and_configs_validate() -> None:
    assert EXPERIMENT_KINDS["gui"] == "rsi_workbench.experiments.gui"
    for name in (
        "smoke",
        "click_checkboxes",
        "click_checkboxes_reduced",
        "click_option",
        "click_option_reduced",
    ):
        cfg = load_experiment_config(f"configs/gui/{name}.yaml")
        assert isinstance(cfg, Config)
    full = load_experiment_config("configs/gui/click_checkboxes.yaml")
    assert full.test_instances == 100 and full.max_actions == 8 and full.wall_clock_s == 120
    assert full.generations + 1 == 3 and len(full.seeds) >= 3


def test_declared_train_and_gate_episodes_become_the_loop_split() -> None:
    cfg = Config(train_episodes=16, gate_episodes=6)
    s = protocol_settings(cfg, "world_based", 2)
    assert s.gate_fraction * 22 == pytest.approx(6) and not s.policy_update.enabled and s.adaptation.enabled
    assert protocol_settings(cfg, "rsi", 1).policy_update.enabled
    assert protocol_settings(cfg, "rsi", 1).initial_design == cfg.explore_cycles
    assert protocol_settings(cfg, "rsi", 2).initial_design == 0


def test_test_instances_are_disjoint_from_episodes_by_content() -> None:
    cfg = Config(test_instances=5, train_episodes=3, gate_episodes=2, generations=2, seeds=[0])
    tests = fixed_test_seeds(cfg)
    assert len(set(tests)) == 5
    # a page generator that repeats contents: the first episode draws repeat a test instance, then
    # an earlier episode; those are skipped, the rest are distinct
    content = {s: f"test{i}" for i, s in enumerate(tests)}
    repeats = iter(["test0", "ep", "ep", "test4"])

    def fake(seed: int) -> str:
        return content.get(seed) or next(repeats, f"k{seed}")

    inst = draw_instances(cfg, fake)
    keys = [r[1] for rows in inst["episodes"].values() for r in rows]
    assert len(keys) == len(set(keys)) == 10
    assert not set(keys) & {k for _, k in inst["test"]}
    assert [r[3] for r in inst["skipped"]] == ["test0", "ep", "test4"]
    bad = {"test": inst["test"], "episodes": {"0/1": [[1, inst["test"][0][1]]]}}
    with pytest.raises(SplitOverlap):
        assert_test_disjoint(bad)


def test_content_key_ignores_refs_but_not_text() -> None:
    a, b = page([False] * 3, [0]), page([False] * 3, [1])
    assert content_key(a.utterance, a.elements) != content_key(b.utterance, b.elements)
    shifted = [dict(e, ref=e["ref"] + 100) for e in a.elements]
    assert content_key(a.utterance, shifted) == content_key(a.utterance, a.elements)


def test_features_and_verifier() -> None:
    st = page([True, False, False], [1])
    ctrls = controls(st)
    assert [c.text for c in ctrls] == WORDS[:3] and [c.mention for c in ctrls] == [0.0, 1.0, 0.0]
    acts = candidate_actions(st)
    assert acts[-1] == {"type": "submit"} and {"type": "click", "ref": 30} not in acts
    v = GuiVerifier()
    assert v.validate("t", st, {"type": "click", "ref": 11})[0]
    assert not v.validate("t", st, {"type": "click", "ref": 999})[0]
    assert not v.validate("t", st, {"type": "key", "key": "a"})[0]
    stats = episode_stats(
        [{"type": "click", "ref": 3}, {"type": "click", "ref": 3}, {"type": "submit"}], True, 0.2
    )
    assert stats == {
        "success": False,
        "n_actions": 3,
        "wrong_submit": True,
        "repeated_clicks": 1,
        "raw_reward": 0.2,
    }


def test_world_model_learns_toggles_and_submit_outcomes() -> None:
    import torch

    train, held = records(100, seed=1), records(60, seed=2)
    w0 = OutcomeWorldModel(seed=0, steps=150)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: one thread (as the experiment's ``threads: 1``)
    try:
        w1 = w0.adapt(train, seed=0)
    finally:
        torch.set_num_threads(threads)
    assert w1.version != w0.version and w1.n_fits == 1

    def brier(w: OutcomeWorldModel) -> float:
        errs = []
        for r in held:
            p = w.predict("t", StepState.from_json(r.state), [r.action])[0]
            errs += [
                sum((q - (c == y)) ** 2 for c, q in enumerate(pr))
                for pr, y in zip(p.probs, r.observation.labels)
            ]
        return float(np.mean(errs))

    assert brier(w1) < 0.1 < brier(w0)
    assert OutcomeWorldModel.from_bytes(w1.to_bytes()).version == w1.version
    # a learned model ranks the right click above a premature submit (eq. 7 utility order)
    st = page([False, False, False], [1])
    preds = w1.predict(
        "t", st, [{"type": "click", "ref": 13}, {"type": "submit"}, {"type": "click", "ref": 11}]
    )
    u = [p.utility_terms["p_success"] + 0.5 * p.utility_terms["submit_score"] for p in preds]
    assert u[0] > u[1] > u[2]
    # a submit toggles nothing: its predicted checked states are the page's own
    mixed = page([True, False, True], [0, 2])
    sub = w1.predict("t", mixed, [{"type": "submit"}])[0]
    assert sub.extra["checked_after"] == [1.0, 0.0, 1.0] and sub.utility_terms["ends_success"] > 0.5


def test_policy_learns_to_rank_good_actions_first() -> None:
    util = {"p_success": 1.0, "submit_score": 0.5, "ends_success": 0.5}
    p0 = ActionScoringPolicy(utility=util, temperature=0.0)
    p1 = p0.update(records(200, seed=3), [], seed=0)
    assert p1.version != p0.version and p1.n_updates == 1
    assert ActionScoringPolicy.from_bytes(p1.to_bytes()).version == p1.version
    rng = random.Random(0)
    st = page([False, False, False], [1])
    # the wanted box (ref 13) or its label (ref 12, which toggles it too)
    assert p1.with_temperature(0.0).propose("t", st, 1, rng)[0] in (
        {"type": "click", "ref": 13},
        {"type": "click", "ref": 12},
    )
    done = page([False, True, False], [1])
    assert p1.with_temperature(0.0).propose("t", done, 1, rng) == [{"type": "submit"}]


def test_always_submit_keeps_the_terminal_action_among_the_candidates() -> None:
    util = {"p_success": 1.0, "submit_score": 0.5, "ends_success": 0.5}
    w = np.zeros(13)
    w[1] = -100.0  # a policy that hates submitting
    st = page([False, False, False], [1])
    plain = ActionScoringPolicy(w, utility=util, temperature=0.0)
    assert {"type": "submit"} not in plain.propose("t", st, 3, random.Random(0))
    pol = ActionScoringPolicy(w, utility=util, temperature=0.0, always_submit=True)
    got = pol.propose("t", st, 3, random.Random(0))
    assert len(got) == 4 and got[-1] == {"type": "submit"}
    assert ActionScoringPolicy.from_bytes(pol.to_bytes()).always_submit
