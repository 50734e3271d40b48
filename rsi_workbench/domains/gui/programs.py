"""Action programs: untrusted Python that acts on a GUI page from inside the sandbox, through data only.

An action program (an RSIAgent actor, a model-written policy) is Python source defining
``act(observation: dict) -> dict | list[dict]``. :class:`ProgramPolicy` runs it only inside a
sandbox :class:`~rsi_workbench.sandbox.Session` (no network, no host processes, no browser, no
``selenium``, a wall clock per call, CPU time and memory limits per episode): the host sends the observation as JSON
(utterance, fields, DOM elements with refs — never the reward), gets JSON back through the
session's one result frame, validates every action with :func:`parse_action` and hands it to the
episode runner, which applies it. Whatever else comes back — not an action, a script or reward
"action", an exception, a crash, a timeout, a process that exits or writes stray frames — is a
:class:`ProgramFailure` with its reason, which :func:`play_episode` records as ``policy_error``:
never credit, never a crash of the host. Each episode gets a fresh session (a program's state does not
leak across episodes, and one dead session never costs another episode anything).
"""

from __future__ import annotations

import collections
import json
import threading
from typing import Any

from rsi_workbench import sandbox
from rsi_workbench.sandbox import CallResult, Isolation, Limits, Session

from .actions import InvalidAction, parse_action
from .observation import GuiObservation

# per call: 2 s wall; per session (one episode, one process): 5/6 s CPU, 512 MiB, 300 s wall
PROGRAM_LIMITS = Limits(
    cpu_soft_s=5, cpu_hard_s=6, address_space_bytes=512 << 20, wall_s=2.0, session_wall_s=300.0
)
MAX_PLAN = 8  # at most this many actions from one call (the paper's per-episode cap)
LOG_CALLS = 200  # the last calls' records kept for inspection (``ProgramPolicy.calls``)
OUTPUT_CAP = 2000  # characters of a call's stdout/stderr kept in its record


class ProgramFailure(RuntimeError):
    """The program did not produce a valid action (its fault: recorded as ``policy_error``, never retried)."""


#: needed whatever the sandbox mode: a program that can reach chromedriver's port (or see the
#: browser's processes) could run script in the page and forge the reward
PROGRAM_NEEDS = ("network_namespace", "pid_namespace")


def program_isolation(
    mode: str | None = None, *, isolation: Isolation | None = None
) -> sandbox.IsolationGrant:
    """The sandbox plan for action programs (stdlib only; probed once per process) through the choke
    point: the stricter of ``mode`` and ``RSI_WORKBENCH_SANDBOX_MODE``, and always a network and a PID
    namespace (:data:`PROGRAM_NEEDS`); a weaker plan raises :class:`~rsi_workbench.sandbox.SandboxUnavailable`."""
    return sandbox.obtain_isolation(
        (), mode=mode, purpose="GUI action programs", needs=PROGRAM_NEEDS, isolation=isolation
    )


def check_program_isolation(iso: Isolation, mode: str | None) -> None:
    """A thin caller of :func:`program_isolation` for an already probed plan."""
    program_isolation(mode, isolation=iso)


def observation_data(obs: GuiObservation) -> dict[str, Any]:
    """What the program sees: the observation as JSON data, without the screenshot (and never a reward)."""
    d = obs.to_json()
    d.pop("screenshot", None)
    return json.loads(json.dumps(d, allow_nan=False))


def _actions(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [value]
    if (
        isinstance(value, list)
        and value
        and len(value) <= MAX_PLAN
        and all(isinstance(a, dict) for a in value)
    ):
        return list(value)
    raise ProgramFailure(
        f"act must return an action (a JSON object) or a list of 1..{MAX_PLAN} of them, not {str(value)[:200]}"
    )


def _failure(res: CallResult) -> str:
    if res.kind == "timeout":
        return f"program timed out: {res.message}"
    if res.kind == "raised":
        return f"program raised {res.message}"
    return f"program gave no valid result: {res.message or res.kind}"


class _Episode(threading.local):
    session: Session | None = None
    last_obs: GuiObservation | None = None
    pending: list[Any]

    def __init__(self) -> None:
        self.pending = []


class ProgramPolicy:
    """A :class:`GuiPolicy` whose decisions come from an untrusted program run in a sandbox session.

    ``act`` returns one validated action; a program that returned a list of actions is asked again only
    once its plan is used up. ``strict`` (default): an invalid action is a :class:`ProgramFailure`;
    otherwise it is handed on as data, and the episode runner records it as an invalid action.
    Thread-safe: each thread (a pool's browser worker) has its own session.
    """

    def __init__(
        self,
        source: str,
        *,
        entry: str = "act",
        limits: Limits = PROGRAM_LIMITS,
        mode: str | None = None,
        isolation: Isolation | None = None,
        strict: bool = True,
    ) -> None:
        self.source, self.entry, self.limits, self.strict = source, entry, limits, strict
        self.grant = program_isolation(mode, isolation=isolation)
        self.isolation = self.grant.isolation
        self.calls: collections.deque[dict[str, Any]] = collections.deque(maxlen=LOG_CALLS)
        self._state = _Episode()
        self._sessions: list[Session] = []
        self._lock = threading.Lock()

    def __enter__(self) -> ProgramPolicy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End every session (each sandboxed process and everything it started is killed)."""
        with self._lock:
            sessions, self._sessions = self._sessions, []
        for s in sessions:
            s.close()

    def _new_episode(self, st: _Episode) -> Session:
        if st.session is not None:
            st.session.close()
            with self._lock:
                self._sessions = [s for s in self._sessions if s is not st.session]
        st.pending = []
        st.session = Session(self.source, self.entry, isolation=self.isolation, limits=self.limits)
        with self._lock:
            self._sessions.append(st.session)
        if st.session.loaded.kind != "passed":
            self._record(st.session.loaded, None, "load")
        return st.session

    def _record(self, res: CallResult, step: int | None, what: str) -> None:
        with self._lock:
            self.calls.append(
                {
                    "what": what,
                    "step": step,
                    "kind": res.kind,
                    "message": res.message,
                    "stdout": res.stdout[:OUTPUT_CAP],
                    "stderr": res.stderr[:OUTPUT_CAP],
                    "wall_s": res.wall_s,
                }
            )

    def act(self, obs: GuiObservation) -> Any:
        st = self._state
        if (obs.step == 0 and obs is not st.last_obs) or st.session is None:
            self._new_episode(st)
        st.last_obs = obs
        session = st.session
        assert session is not None
        if session.loaded.kind != "passed":
            raise ProgramFailure(f"program did not load: {session.loaded.message}")
        if not st.pending:
            res = session.call([observation_data(obs)])
            self._record(res, obs.step, "act")
            if res.kind != "value":
                raise ProgramFailure(_failure(res))
            st.pending = _actions(res.value)
        proposal = st.pending.pop(0)
        if self.strict:
            try:
                parse_action(proposal, obs)
            except InvalidAction as err:
                st.pending = []
                raise ProgramFailure(f"invalid action: {err}") from None
        return proposal
