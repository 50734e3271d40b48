"""One GUI episode on one browser: the policy acts on plain data, the page's reward is read at the end (E0).

The policy sees :class:`GuiObservation` only; its actions are validated by :func:`parse_action`
(an invalid one is recorded, has no effect and uses up one of the episode's actions). The page's
raw reward — MiniWoB++'s deterministic rule check, without the time discount — is read once, after
the policy has stopped, and recorded as E0 evidence. A watchdog kills the browser if a browser
command is still in flight ``grace_s`` after the episode's wall clock ran out (a hang), which the
pool turns into a retry on a fresh browser.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

from .actions import InvalidAction, parse_action
from .browser import BrowserFailure
from .env import GuiEnv
from .observation import GuiObservation

Outcome = Literal["done", "max_actions", "timeout", "policy_error", "infra_failure"]
# an episode the page never ended (action cap or wall clock) scores like MiniWoB++'s own time-out
UNFINISHED_REWARD = -1.0


class GuiPolicy(Protocol):
    """Proposes the next action for an observation, as plain data (e.g. ``{"type": "click", "ref": 6}``).

    One policy object may serve several browsers at once: keep per-episode state in the
    observation (``actions_taken``), not in the policy.
    """

    def act(self, obs: GuiObservation) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class EpisodeLimits:
    """The paper's caps: 8 actions and 120 s per episode; ``grace_s`` before a busy browser counts as hung.

    ``page_timer_s`` (for :class:`BrowserPool`'s browsers) replaces the page's own 10 s episode
    timer; None keeps MiniWoB++'s default.
    """

    max_actions: int = 8
    wall_clock_s: float = 120.0
    grace_s: float = 5.0
    page_timer_s: float | None = None


@dataclass(frozen=True)
class EpisodeResult:
    """What one episode showed, with the page's verdict as E0 evidence (raw reward, no time discount)."""

    task: str
    seed: int
    outcome: Outcome
    utterance: str = ""
    raw_reward: float | None = None  # None only for an infrastructure failure
    env_reward: float | None = None  # MiniWoB++'s time-discounted reward, for reference
    reason: Any = None
    actions: list[dict[str, Any]] = field(default_factory=list)
    invalid_actions: list[str] = field(default_factory=list)
    policy_error: str | None = None  # the policy raised instead of acting (its fault: never retried)
    attempts: int = 1
    infra_errors: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    evidence: Literal["E0"] = "E0"

    @property
    def success(self) -> bool:
        return self.outcome == "done" and (self.raw_reward or 0.0) > 0

    @property
    def n_actions(self) -> int:
        return len(self.actions) + len(self.invalid_actions)

    @property
    def infrastructure_failure(self) -> bool:
        return self.outcome == "infra_failure"

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["success"] = self.success
        d["n_actions"] = self.n_actions
        return d


class _Watchdog:
    """Kills the env's browser if a browser command is in flight after the hard deadline."""

    def __init__(self, env: GuiEnv, hard_deadline: float) -> None:
        self.env, self.hard_deadline = env, hard_deadline
        self.fired = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True, name="gui-episode-watchdog")

    def _watch(self) -> None:
        if self._stop.wait(max(0.0, self.hard_deadline - time.monotonic())):
            return
        while not self._stop.wait(0.1):
            if self.env.in_browser_call:
                self.fired = True
                self.env.kill()
                return

    def __enter__(self) -> _Watchdog:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def play_episode(
    env: GuiEnv, policy: GuiPolicy, seed: int, limits: EpisodeLimits = EpisodeLimits()
) -> EpisodeResult:
    """Play one episode of ``env.task`` from ``seed``; a browser fault raises :class:`BrowserFailure`."""
    t0 = time.monotonic()
    deadline = t0 + limits.wall_clock_s
    actions: list[dict[str, Any]] = []
    invalid: list[str] = []
    policy_error: str | None = None
    outcome: Outcome = "max_actions"
    watchdog = _Watchdog(env, deadline + limits.grace_s)
    try:
        with watchdog:
            obs = env.reset(seed)
            utterance = obs.utterance
            for _ in range(limits.max_actions):
                if time.monotonic() > deadline:
                    outcome = "timeout"
                    break
                try:
                    proposal = policy.act(obs)
                except Exception as err:  # the policy's own fault, never retried
                    policy_error = f"{type(err).__name__}: {err}"
                    outcome = "policy_error"
                    break
                if time.monotonic() > deadline:
                    outcome = "timeout"
                    break
                try:
                    action = parse_action(proposal, obs)
                except InvalidAction as err:
                    invalid.append(str(err))
                    continue
                actions.append(action.model_dump())
                if env.apply(action, obs):
                    outcome = "done"
                    break
                obs = env.observe(tuple(actions))
            verdict = env.final_reward()
    except BrowserFailure as err:
        if watchdog.fired:
            raise BrowserFailure(
                f"browser hung past the episode's wall clock ({limits.wall_clock_s} s)"
            ) from err
        raise
    done = verdict["done"] and outcome == "done"
    return EpisodeResult(
        task=env.task,
        seed=seed,
        outcome=outcome,
        utterance=utterance,
        raw_reward=verdict["raw_reward"] if done else UNFINISHED_REWARD,
        env_reward=verdict["env_reward"] if done else UNFINISHED_REWARD,
        reason=verdict["reason"] if done else outcome,
        actions=actions,
        invalid_actions=invalid,
        policy_error=policy_error,
        elapsed_s=time.monotonic() - t0,
    )
