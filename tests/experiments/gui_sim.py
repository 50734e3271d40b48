"""A simulated click-checkboxes page behind the engine (no browser): a test double of
:class:`~rsi_workbench.domains.gui.binding.GuiStepEnvironment` whose observations have the same
shape (labels, ``detail.after`` elements, E0 ``raw_reward`` at the end), for stepper and policy tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rsi_workbench.domains.gui.binding import SUCCESS, GuiVerifier, episode_stats
from rsi_workbench.domains.gui.components import OutcomeWorldModel
from rsi_workbench.domains.gui.features import StepState, controls
from rsi_workbench.domains.gui.generation import protocol_settings
from rsi_workbench.domains.gui.generation import task_spec as _spec
from rsi_workbench.experiments.gui.experiment import Config
from rsi_workbench.protocol.loop import Loop
from rsi_workbench.protocol.spec import Observation
from rsi_workbench.protocol.state import digest
from rsi_workbench.records import Run

WORDS = ["alpha", "bravo", "charlie", "delta"]
REWARD_SENTINEL = 0.7312  # the simulated page's reward for a wrong submit: must never reach a prompt


def sim_page(n: int, wanted: Sequence[int], seed: int) -> StepState:
    els: list[dict[str, Any]] = [
        {"ref": 1, "parent_ref": None, "tag": "body", "text": None, "value": None, "id": ""},
        {"ref": 4, "parent_ref": 1, "tag": "div", "text": None, "value": None, "id": "boxes"},
    ]
    for i, w in enumerate(WORDS[:n]):
        lab, box = 10 + 2 * i, 11 + 2 * i
        els += [
            {"ref": lab, "parent_ref": 4, "tag": "label", "text": None, "value": None, "id": ""},
            {
                "ref": box,
                "parent_ref": lab,
                "tag": "input_checkbox",
                "text": "",
                "value": False,
                "id": f"ch{i}",
            },
            {"ref": -1 - i, "parent_ref": lab, "tag": "t", "text": w, "value": None, "id": ""},
        ]
    els.append({"ref": 30, "parent_ref": 1, "tag": "button", "text": "Submit", "value": None, "id": "subbtn"})
    utt = "Select " + (", ".join(WORDS[i] for i in wanted) or "nothing") + " and click Submit."
    return StepState(f"sim{seed}", seed, utt, tuple(els))


class SimGuiEnvironment:
    """Episodes on simulated pages: task ``e<j>`` has ``2 + j % 3`` boxes, box ``j % n`` wanted."""

    def __init__(self, tasks: Sequence[str]) -> None:
        self.pages = {}
        for j, t in enumerate(tasks):
            n = 2 + j % 3
            self.pages[t] = (sim_page(n, [j % n], j), [j % n])

    def _score(self, state: StepState, checked: list[bool], wanted: list[int]) -> float:
        ok = all(c == (i in wanted) for i, c in enumerate(checked))
        return 1.0 if ok else REWARD_SENTINEL

    def initial(self, task_id: str) -> tuple[StepState, Observation]:
        page = self.pages[task_id][0]
        return StepState(task_id, page.seed, page.utterance, page.elements), Observation({}, evidence="E0")

    def evaluate(self, task_id: str, state: StepState, action: Mapping[str, Any]) -> Observation:
        wanted = self.pages[task_id][1]
        ctrls = controls(state)
        checked = [c.checked for c in ctrls]
        for i, c in enumerate(ctrls):
            if action.get("type") == "click" and action.get("ref") in (c.ref, c.label_ref):
                checked[i] = not checked[i]
        by_ref = {c.ref: checked[i] for i, c in enumerate(ctrls)}
        after = [dict(e, value=by_ref[e["ref"]]) if e["ref"] in by_ref else dict(e) for e in state.elements]
        probe = self._score(state, checked, wanted)
        ended = action.get("type") == "submit"
        raw = probe if ended else None
        ok = float(probe >= SUCCESS)
        return Observation(
            {"p_success": ok, "submit_score": probe, "ends_success": ok if ended else 0.0},
            labels=[int(c) for c in checked] + [int(ok)],
            solved=bool(ended and ok),
            cost=1.0,
            evidence="E0",
            detail={
                "after": after,
                "ended": ended,
                "raw_reward": raw,
                "probe_reward": probe,
                "score_before": None,
            },
        )

    def advance(
        self, task_id: str, state: StepState, action: Mapping[str, Any], obs: Observation
    ) -> StepState:
        d = obs.detail
        after = tuple(dict(e) for e in d["after"])
        return StepState(
            task_id,
            state.seed,
            state.utterance,
            after,
            (*state.actions, dict(action)),
            d["ended"],
            d["raw_reward"],
        )

    def signature(self, task_id: str, state: StepState) -> str:
        return digest([task_id, state.seed, [dict(a) for a in state.actions]])

    def audit(self, task_id: str, state: StepState, actions: Sequence[Any]) -> list[dict[str, Any]]:
        return []

    def final_audit(self, task_id: str, state: StepState) -> dict[str, Any]:
        return {"seed": state.seed, **episode_stats(state.actions, state.ended, state.reward)}

    def dump_state(self, state: StepState) -> dict[str, Any]:
        return state.to_json()

    def load_state(self, data: Mapping[str, Any]) -> StepState:
        return StepState.from_json(data)

    def dump_action(self, action: Mapping[str, Any]) -> dict[str, Any]:
        return dict(action)

    def load_action(self, data: Mapping[str, Any]) -> dict[str, Any]:
        return dict(data)


class SeededSimEnvironment(SimGuiEnvironment):
    """The simulated pages addressed like the browser's environment: ``seeds`` maps a task id to an
    instance seed (the experiment fills it per generation); seed s has ``2 + s % 3`` boxes, box
    ``s % n`` wanted. ``content`` is an instance's content key by seed."""

    def __init__(self) -> None:
        super().__init__([])
        self.seeds: dict[str, int] = {}

    def _page(self, task_id: str) -> tuple[StepState, list[int]]:
        if task_id not in self.pages:
            s = self.seeds[task_id]
            n = 2 + s % 3
            self.pages[task_id] = (sim_page(n, [s % n], s), [s % n])
        return self.pages[task_id]

    def initial(self, task_id: str) -> tuple[StepState, Observation]:
        self._page(task_id)
        return super().initial(task_id)

    def evaluate(self, task_id: str, state: StepState, action: Mapping[str, Any]) -> Observation:
        self._page(task_id)
        return super().evaluate(task_id, state, action)

    @staticmethod
    def content(seed: int) -> str:
        return f"sim-{seed}"


def run_sim_generation(
    path: Path, policy: Any, config: Config | None = None, n_tasks: int = 6, method: str = "rsi"
) -> Path:
    """One GUI protocol run (a generation) on simulated pages with ``policy`` and a fresh world model."""
    config = config or Config(
        train_episodes=4, gate_episodes=2, max_actions=4, explore_cycles=1, world_steps=30
    )
    tasks = [f"e{j}" for j in range(n_tasks)]
    env = SimGuiEnvironment(tasks)
    spec = _spec(config, env, tasks, policy, OutcomeWorldModel(seed=0, steps=config.world_steps))  # type: ignore[arg-type]
    assert isinstance(spec.verifier, GuiVerifier)
    settings = protocol_settings(config, method, 1)
    with Run.create(path, {"sim": True}, kind="protocol") as run:
        Loop.open(spec, run, settings, seed=0).run()
    return path
