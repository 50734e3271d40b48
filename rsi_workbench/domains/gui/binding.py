"""MiniWoB++ bound to the engine's task spec T_d (eq. 1), one episode step as the unit of feedback.

- :class:`GuiStepEnvironment` — X_d/S_d and external feedback. A task is one episode (an instance
  by seed); its state is the page after a prefix of validated actions (:class:`StepState`).
  :meth:`~GuiStepEnvironment.evaluate` replays the prefix on a fresh episode of the same seed in the
  browser, applies the action (validated by the host, :func:`parse_action`) and observes the page:
  each control's checked state after it, and — E0, read at an episode's end only — the page's raw
  reward of a submit right after it (for a submit: the episode's own verdict; otherwise a *probe*
  episode that submits the replayed page and is thrown away). The acting episode itself continues.
  A browser fault is retried on a fresh browser (at most ``max_retries`` times), then raised as an
  infrastructure failure, never recorded as the policy's.
- :class:`GuiVerifier` — V_d: only clicks on refs the page shows, and a submit where there is a button.
- :class:`PairAgent` — a retained (θ, φ) pair acting in a whole test episode: θ proposes K actions,
  φ predicts their outcomes, eq. 7 selects; it sees the page only (no reward).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from rsi_workbench.domains.gui import BrowserFailure, GuiEnv, GuiObservation, Submit, parse_action
from rsi_workbench.domains.gui.actions import submit_ref
from rsi_workbench.domains.gui.components import OutcomeWorldModel
from rsi_workbench.domains.gui.features import StepState, clicked_refs, controls, element_json
from rsi_workbench.protocol.seeds import derive_rng
from rsi_workbench.protocol.selection import ScoredCandidate, UtilityArgmax, UtilitySpec, select, utility
from rsi_workbench.protocol.spec import Observation
from rsi_workbench.protocol.state import digest

SUCCESS = 1.0 - 1e-9  # the raw reward of a submit with every control as asked (click-checkboxes: 1.0)


class InfrastructureFailure(RuntimeError):
    """The browser kept failing on one step after every retry: the infrastructure's fault, not the policy's."""


class GuiStepEnvironment:
    """The MiniWoB++ task behind the loop: one browser, episodes replayed by seed and action prefix."""

    def __init__(self, task: str, *, max_retries: int = 2, page_timer_s: float | None = 60.0) -> None:
        self.task = task
        self.max_retries = max_retries
        self.page_timer_s = page_timer_s
        self.seeds: dict[str, int] = {}  # task id -> instance seed (the experiment fills it per generation)
        self.probes: dict[str, float | None] = {}  # (seed, prefix) -> raw reward of a submit there
        self.replacements = 0
        self._env: GuiEnv | None = None

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env = None

    def _browser(self) -> GuiEnv:
        if self._env is None:
            self._env = GuiEnv(self.task, page_timer_s=self.page_timer_s).start()
        return self._env

    def _retrying(self, fn: Any) -> tuple[Any, list[str]]:
        errors: list[str] = []
        for attempt in range(1, self.max_retries + 2):
            try:
                return fn(self._browser()), errors
            except BrowserFailure as err:
                errors.append(f"attempt {attempt}: {err}")
                if self._env is not None:
                    self._env.kill()
                    self._env.close()
                    self._env = None
                self.replacements += 1
        raise InfrastructureFailure(f"browser failed {len(errors)} times on one step: {errors}")

    @staticmethod
    def _replay(env: GuiEnv, seed: int, actions: Sequence[Mapping[str, Any]]) -> GuiObservation:
        obs = env.reset(seed)
        taken: list[dict[str, Any]] = []
        for a in actions:
            act = parse_action(dict(a), obs)
            if env.apply(act, obs):
                raise RuntimeError(f"replaying seed {seed}: the page ended the episode before the prefix did")
            taken.append(act.model_dump())
            obs = env.observe(tuple(taken))
        return obs

    def _probe_key(self, seed: int, actions: Sequence[Mapping[str, Any]]) -> str:
        return digest([seed, [dict(a) for a in actions]])

    def _probe(self, env: GuiEnv, obs: GuiObservation) -> float | None:
        """Submit the page as it is and read the raw reward (E0, the episode's end)."""
        if submit_ref(obs) is None:
            return None
        env.apply(Submit(), obs)
        return float(env.final_reward()["raw_reward"])

    # -- Environment protocol ------------------------------------------------------------------
    def initial(self, task_id: str) -> tuple[StepState, Observation]:
        seed = self.seeds[task_id]

        def go(env: GuiEnv) -> tuple[GuiObservation, float | None]:
            obs = env.reset(seed)
            return obs, self._probe(env, obs)

        (obs, probe), errors = self._retrying(go)
        self.probes[self._probe_key(seed, ())] = probe
        state = StepState(task_id, seed, obs.utterance, tuple(element_json(e) for e in obs.elements))
        detail = {"seed": seed, "controls": len(controls(state)), "infra_errors": errors}
        return state, Observation({}, cost=0.0, evidence="E0", detail=detail)

    def evaluate(self, task_id: str, state: StepState, action: Mapping[str, Any]) -> Observation:
        if state.ended:
            raise RuntimeError(f"{task_id}: the episode already ended; nothing can be executed")
        ok, why = GuiVerifier().validate(task_id, state, action)
        if not ok:  # a model's invalid line reaching a gate's best-of: never executed, earns nothing
            labels = [int(c.checked) for c in controls(state)] + [0]
            terms = {"p_success": 0.0, "submit_score": 0.0, "ends_success": 0.0}
            detail = {"after": list(state.elements), "ended": False, "raw_reward": None, "not_executed": why}
            return Observation(terms, labels=labels, cost=0.0, evidence="E0", detail=detail)
        key_before = self._probe_key(state.seed, state.actions)

        def go(env: GuiEnv) -> dict[str, Any]:
            if key_before not in self.probes:  # a resumed run: the page before the action, submitted
                self.probes[key_before] = self._probe(env, self._replay(env, state.seed, state.actions))
            obs = self._replay(env, state.seed, state.actions)
            act = parse_action(dict(action), obs)
            ended = env.apply(act, obs)
            if ended or isinstance(act, Submit):
                verdict = env.final_reward()
                raw = float(verdict["raw_reward"]) if verdict["done"] else -1.0
                return {"after": obs, "ended": True, "raw": raw, "probe": raw}
            after = env.observe((*[dict(a) for a in state.actions], act.model_dump()))
            return {"after": after, "ended": False, "raw": None, "probe": self._probe(env, after)}

        res, errors = self._retrying(go)
        after = StepState(
            task_id, state.seed, state.utterance, tuple(element_json(e) for e in res["after"].elements)
        )
        checked_after = {c.ref: c.checked for c in controls(after)}
        probe = res["probe"]
        if not res["ended"]:
            self.probes[self._probe_key(state.seed, (*state.actions, dict(action)))] = probe
        labels = [int(checked_after.get(c.ref, c.checked)) for c in controls(state)]
        labels.append(int(probe is not None and probe >= SUCCESS))
        score = 0.0 if probe is None else float(probe)
        raw = res["raw"]
        return Observation(
            {
                "p_success": float(probe is not None and probe >= SUCCESS),
                "submit_score": score,
                "ends_success": float(bool(res["ended"]) and raw is not None and raw >= SUCCESS),
            },
            labels=labels,
            solved=bool(res["ended"]) and raw is not None and raw >= SUCCESS,
            cost=1.0,
            evidence="E0",
            detail={
                "after": list(after.elements),
                "ended": bool(res["ended"]),
                "raw_reward": raw,
                "probe_reward": probe,
                "score_before": self.probes.get(key_before),
                "infra_errors": errors,
            },
        )

    def advance(
        self, task_id: str, state: StepState, action: Mapping[str, Any], observation: Observation
    ) -> StepState:
        d = observation.detail
        return StepState(
            task_id,
            state.seed,
            state.utterance,
            tuple(dict(e) for e in d["after"]),
            (*state.actions, dict(action)),
            bool(d["ended"]),
            d["raw_reward"] if d["ended"] else None,
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


def episode_stats(actions: Sequence[Mapping[str, Any]], ended: bool, raw: float | None) -> dict[str, Any]:
    """Success (submitted with every control as asked), actions, wrong submit and repeated clicks."""
    refs = [int(a["ref"]) for a in actions if a.get("type") in ("click", "type")]
    submitted = bool(actions) and actions[-1].get("type") == "submit"
    success = bool(ended and raw is not None and raw >= SUCCESS)
    return {
        "success": success,
        "n_actions": len(actions),
        "wrong_submit": bool(submitted and not success),
        "repeated_clicks": len(refs) - len(set(refs)),
        "raw_reward": raw,
    }


class GuiVerifier:
    """V_d: a click must name a ref on the page; a submit needs a submit button."""

    def validate(self, task_id: str, state: StepState, action: Mapping[str, Any]) -> tuple[bool, str]:
        if state.ended:
            return False, "the episode ended"
        if action.get("type") == "invalid":  # a model's line that is no action (llm_policy.parse_answer)
            return False, str(action.get("reason") or "not an action")
        if action.get("type") == "submit":
            ok = any(e.get("id") == "subbtn" for e in state.elements)
            return ok, "" if ok else "no submit button"
        if action.get("type") == "click":
            ok = action.get("ref") in {e["ref"] for e in state.elements}
            return ok, "" if ok else f"no element with ref {action.get('ref')}"
        return False, f"action type {action.get('type')!r} is not proposed here"


class PairAgent:
    """A (θ, φ) pair as a :class:`~rsi_workbench.domains.gui.GuiPolicy`: propose K, predict, eq. 7 select."""

    def __init__(self, policy: Any, world: OutcomeWorldModel, k: int, spec: UtilitySpec, salt: str) -> None:
        """``policy``: an :class:`ActionScoringPolicy` or a language-model θ (``llm_policy``)."""
        self.policy = policy.with_temperature(0.0)
        self.world, self.k, self.spec, self.salt = world, k, spec, salt
        self.rule = UtilityArgmax()
        self.verifier = GuiVerifier()

    def act(self, obs: GuiObservation) -> dict[str, Any]:
        state = StepState(
            "test", 0, obs.utterance, tuple(element_json(e) for e in obs.elements), obs.actions_taken
        )
        rng: random.Random = derive_rng(self.salt, obs.utterance, len(obs.actions_taken))
        proposed = self.policy.propose("test", state, self.k, rng)
        acts = [a for a in proposed if self.verifier.validate("test", state, a)[0]]  # host-validated only
        if not acts:
            return {"type": "submit"}
        preds = self.world.predict("test", state, acts)
        scored = [
            ScoredCandidate(i, True, "", utility(p.utility_terms, self.spec)) for i, p in enumerate(preds)
        ]
        dec = select(scored, self.rule, budget_remaining=float("inf"), rng=rng)
        return acts[dec.selected[0]]


__all__ = [
    "GuiStepEnvironment",
    "GuiVerifier",
    "InfrastructureFailure",
    "PairAgent",
    "clicked_refs",
    "episode_stats",
]
