"""The GUI experiment's language-model policy (with a scripted model double) and the cycle stepper's
view of a GUI run, both on simulated pages (no browser, no model download)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from gui_sim import REWARD_SENTINEL, run_sim_generation, sim_page

from rsi_workbench.cli import load_experiment_config
from rsi_workbench.domains.gui import steps
from rsi_workbench.domains.gui.binding import GuiVerifier
from rsi_workbench.domains.gui.features import StepState
from rsi_workbench.domains.gui.llm_policy import LLMActionPolicy, open_llm_policy, parse_answer
from rsi_workbench.experiments.gui.experiment import Config
from rsi_workbench.models import ChatResult
from rsi_workbench.records import Run
from rsi_workbench.viz.protocol import load_protocol_run

ROOT = Path(__file__).resolve().parents[2]


class ScriptedModelDouble:
    """A test double of a language model: answers from a script, keeps every prompt it was sent."""

    identity = "scripted-double"
    name = "scripted-double"
    capabilities = frozenset({"chat"})

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def chat(self, messages: Any, **kw: Any) -> ChatResult:
        prompt = messages[-1]["content"]
        self.prompts.append(prompt)
        refs = [int(line.split(":")[0]) for line in prompt.splitlines() if ": checkbox" in line]
        text = f"1. click({refs[0]})\nclick(999)\nPress the big button!\nclick({refs[0]})\nsubmit()"
        return ChatResult([text], ["stop"], 10, 10, 0.0, self.identity, self.name)

    def score(self, prompt: str, continuations: Any, *, end: bool = False) -> list[float]:
        raise NotImplementedError


def test_parse_answer_keeps_action_lines_and_marks_the_rest_invalid() -> None:
    acts = parse_answer("1. click(11)\n- `submit()`\nhello there\nclick(11)\n\nclick( 13 )", k=2)
    assert acts[:2] == [{"type": "click", "ref": 11}, {"type": "submit"}]
    reasons = [a["reason"] for a in acts if a["type"] == "invalid"]
    assert reasons == [
        "not an action line: expected click(REF) or submit()",
        "repeats an earlier line",
        "more than k=2 actions",
    ]
    st = sim_page(2, [0], 0)
    v = GuiVerifier()
    assert v.validate("t", st, acts[2]) == (False, "not an action line: expected click(REF) or submit()")
    assert v.validate("t", st, {"type": "click", "ref": 999}) == (False, "no element with ref 999")


def test_prompt_shows_the_page_but_never_a_reward() -> None:
    pol = LLMActionPolicy(ScriptedModelDouble())
    st = sim_page(3, [1], 0)
    prompt = pol.prompt(st, 3)
    assert "Select bravo" in prompt and '11: checkbox "alpha" [unchecked]' in prompt
    assert "reward" not in prompt.lower()
    ended = StepState("t", 0, st.utterance, st.elements, ({"type": "submit"},), True, REWARD_SENTINEL)
    with pytest.raises(ValueError, match="reward"):
        pol.prompt(ended, 3)


def test_llm_policy_runs_the_loop_with_invalid_lines_recorded_never_executed(tmp_path: Path) -> None:
    double = ScriptedModelDouble()
    pol, prun = open_llm_policy(
        Config.model_validate({"policy": {"kind": "llm"}}).policy,
        tmp_path / "exp",
        0,
        backend=double,  # type: ignore[arg-type]
    )
    run_dir = run_sim_generation(tmp_path / "exp" / "runs" / "rsi-seed0" / "gen1", pol)
    prun.close()
    assert double.prompts, "the model was asked"
    # the E0 reward (the simulated page's sentinel value) never reaches a prompt
    assert not any(str(REWARD_SENTINEL) in p or "0.73" in p for p in double.prompts)
    pr = load_protocol_run(run_dir)
    invalid = [c for p in pr.of("proposal") for c in p.payload["candidates"] if not c["valid"]]
    assert {c["reason"] for c in invalid} >= {
        "not an action line: expected click(REF) or submit()",
        "repeats an earlier line",
        "no element with ref 999",
    }
    executed = [o.payload["pair"]["action"] for o in pr.of("observation")]
    assert executed and all(a["type"] in ("click", "submit") and a.get("ref") != 999 for a in executed)
    assert all(c.get("prediction") is None for c in invalid)  # the world model predicts valid ones only
    # the model's calls are recorded in the policy run, with the prompt template versioned
    calls = Run.open(tmp_path / "exp" / "policy_model" / "seed0").events("model_call")
    assert len(calls) == len(double.prompts)


def test_llm_policy_bytes_round_trip_and_a_fresh_double_replays(tmp_path: Path) -> None:
    pol = LLMActionPolicy(ScriptedModelDouble(), temperature=0.7)
    back = pol.loader()(pol.to_bytes())
    assert back.version == pol.version and back.llm is pol.llm
    assert pol.with_temperature(0.0).version != pol.version
    acts = pol.propose("t", sim_page(2, [0], 0), 2, random.Random(0))
    assert {"type": "submit"} in acts


def test_llm_smoke_config_validates() -> None:
    cfg = load_experiment_config(ROOT / "configs" / "gui" / "llm_smoke.yaml")
    assert cfg.policy is not None and cfg.policy.kind == "llm" and cfg.policy.model.name == "default"
    assert cfg.policy.max_tokens <= 32


def test_a_config_without_policy_freezes_as_before() -> None:
    cfg = Config()
    assert "policy" not in cfg.run_config() and not cfg.uses_model()


def test_stepper_view_of_a_gui_run(tmp_path: Path) -> None:
    from rsi_workbench.domains.gui.components import ActionScoringPolicy

    pol = ActionScoringPolicy(utility={"p_success": 1.0}, seed=0, always_submit=True)
    exp = tmp_path / "exp"
    run_sim_generation(exp / "runs" / "rsi-seed0" / "gen1", pol)
    run_sim_generation(exp / "runs" / "world_based-seed0" / "gen1", pol)
    pr = load_protocol_run(exp / "runs" / "rsi-seed0" / "gen1")
    assert steps.is_gui_events(pr.events)
    eps = steps.gui_episodes(pr.events)
    assert eps == [f"e{j}" for j in range(6)]
    st = steps.gui_episode_steps(pr.events, "e1")
    assert st and [s.cycle for s in st] == sorted(s.cycle for s in st)
    for i, s in enumerate(st):
        if i and st[i - 1].ended:  # the engine asks once more; the verifier refuses every action
            assert s.chosen is None and all(c.reason == "the episode ended" for c in s.candidates)
            continue
        assert sum(c.chosen for c in s.candidates) == 1 and s.chosen is not None
        assert all(c.p_success is not None for c in s.candidates if c.valid)
        assert s.after is not None
        if i:
            assert s.before == st[i - 1].after  # each step starts on the page the previous one left
    every = [s for e in eps for s in steps.gui_episode_steps(pr.events, e)]
    clicks = [s for s in every if (s.chosen or "").startswith("click(") and s.checked_after]
    assert clicks, "some executed step clicked"
    md = steps.step_markdown(clicks[0])
    assert "DOM before" in md and "[x]" in md.split("DOM after")[1]  # a ticked box after a click
    assert "\n*" in md.split("DOM after")[1]  # and the changed element is marked
    if st[-1].ended:
        assert st[-1].raw_reward is not None

    from widgets.cycle_stepper import CycleStepper, gui_step_view, named_run_paths

    names = named_run_paths(exp)
    assert set(names) == {"rsi-seed0/gen1", "world_based-seed0/gen1"}  # same dir names kept apart
    view = gui_step_view(pr, "e1", st[0].cycle)
    assert view is not None and view.episode == "e1" and len(view.candidates) == len(st[0].candidates)
    assert view.parts[0].startswith(f"**e1 · cycle {st[0].cycle}**") and "DOM before" in view.parts[1]
    stepper = CycleStepper(run=str(exp), run_name="rsi-seed0/gen1", poll_ms=0)
    stepper.cycle = 1
    assert stepper._gui_step.visible and "DOM before" in stepper._gui_before.object
    assert "DOM after" in stepper._gui_after.object
    assert list(stepper._gui_cands.value["action"])  # the candidate table is filled


def test_stepper_hides_the_gui_view_for_other_runs(tmp_path: Path) -> None:
    class Other:
        events: list[Any] = []

        def of(self, kind: str, cycle: int | None = None) -> list[Any]:
            return []

    from widgets.cycle_stepper import gui_step_view

    assert gui_step_view(Other(), None, 1) is None
    assert json.dumps(steps.action_text({"type": "invalid", "raw": "x"})) == '"x"'


def test_gate_tuner_on_a_gui_experiment(tmp_path: Path) -> None:
    """Unchanged decisions at the declared thresholds, runs kept apart, a saved config that runs."""
    from rsi_workbench.domains.gui.components import ActionScoringPolicy
    from widgets.gate_tuner import GateTuner

    cfg = Config(train_episodes=4, gate_episodes=2, max_actions=4, explore_cycles=1, world_steps=30)
    exp = tmp_path / "exp"
    Run.create(exp, cfg.run_config(), kind="gui").close()
    pol = ActionScoringPolicy(utility={"p_success": 1.0}, seed=0, always_submit=True)
    for m in ("rsi", "world_based"):
        run_sim_generation(exp / "runs" / f"{m}-seed0" / "gen1", pol, cfg)
    tuner = GateTuner(run=str(exp))
    assert sorted(gi.run for gi in tuner._inputs) == ["runs/rsi-seed0/gen1", "runs/world_based-seed0/gen1"]
    ds = tuner.decisions()
    assert ds and not any(d.flipped for d in ds)
    tuner.max_brier = 0.6
    saved = load_experiment_config(tuner.save_config(tmp_path / "tuned.yaml"))
    assert isinstance(saved, Config) and saved.reliability.max_brier == 0.6
    assert saved.train_episodes == 4 and saved.min_adapt_examples == cfg.min_adapt_examples


def test_an_invalid_action_in_a_gate_is_never_executed() -> None:
    """The policy gate plays every proposed action; an invalid line gets a no-op observation, no browser."""
    from rsi_workbench.domains.gui.binding import GuiStepEnvironment

    env = GuiStepEnvironment("click-checkboxes")
    st = sim_page(2, [0], 0)
    obs = env.evaluate("t", st, {"type": "invalid", "raw": "hi", "reason": "not an action line"})
    assert obs.detail["not_executed"] == "not an action line" and obs.cost == 0.0
    assert obs.utility_terms["p_success"] == 0.0 and env._env is None  # no browser was started


def test_a_rerun_on_the_recorded_policy_run_asks_the_model_nothing(tmp_path: Path) -> None:
    """The model's answers are recorded in the policy run: the same run again replays every call."""
    settings = Config.model_validate({"policy": {"kind": "llm"}}).policy
    assert settings is not None
    first = ScriptedModelDouble()
    pol, prun = open_llm_policy(settings, tmp_path / "exp", 0, backend=first)
    run_sim_generation(tmp_path / "exp" / "runs" / "a", pol)
    prun.close()
    second = ScriptedModelDouble()
    pol2, prun2 = open_llm_policy(settings, tmp_path / "exp", 0, backend=second)
    run_sim_generation(tmp_path / "exp" / "runs" / "b", pol2)
    prun2.close()
    assert first.prompts and not second.prompts
    a = [p.payload["actions"] for p in load_protocol_run(tmp_path / "exp" / "runs" / "a").of("proposal")]
    b = [p.payload["actions"] for p in load_protocol_run(tmp_path / "exp" / "runs" / "b").of("proposal")]
    assert a == b
