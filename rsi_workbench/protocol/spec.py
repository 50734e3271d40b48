"""The task spec T_d of eq. 1 as small protocols, plus the records the engine passes around.

T_d = (X_d, S_d, A_d, W_d, V_d, M_d, C_d, B_d): a domain binds observations/state and external
feedback (:class:`Environment`), proposals of actions (:class:`Policy`, the component θ), the
world-model adapter (:class:`Predictor`, the component φ_d), validity (:class:`Verifier`), and
declares constraints and budgets (:class:`TaskSpec`). Metrics M_d are generic functions over
prediction/observation units (:mod:`rsi_workbench.protocol.metrics`).

A new domain subclasses :class:`BaseEnvironment`, :class:`BasePolicy` and (optionally)
:class:`BasePredictor`: each asks only for what a domain must define and gives the rest a
documented default (docs/extending-protocol.md).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Evidence = Literal["E0", "E1", "E2", "E3"]
"""E0 deterministic rule check (sandbox tests), E1 learned prediction, E2 simulator, E3 external measurement."""

State = Any
Action = Any


@dataclass(frozen=True)
class Prediction:
    """One candidate's predicted outcome (eq. 4–5), bound to the component version that made it.

    ``utility_terms`` are the r_τ,j of eq. 7 (e.g. P(all pass), pass fraction); ``probs`` holds one
    class-probability vector per evaluation unit (e.g. per public test) for Brier/ECE; ``uncertainty``
    is U(u_τ) when the predictor declares one. ``gaussian`` holds a regression readout: for a
    utility term, its predictive [mean, std] (scored against the observed term's value).
    """

    utility_terms: dict[str, float]
    version: str
    probs: list[list[float]] = field(default_factory=list)
    uncertainty: float | None = None
    evidence: Evidence = "E1"
    extra: dict[str, Any] = field(default_factory=dict)
    gaussian: dict[str, list[float]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Prediction:
        return cls(**dict(d))


@dataclass(frozen=True)
class Observation:
    """External (or gate) feedback on one executed action, with its evidence level.

    ``labels`` has one class index per evaluation unit, aligned with :attr:`Prediction.probs`;
    ``utility_terms`` are the observed r_τ,j; ``solved`` is the task's stop rule (e.g. all public
    tests pass); ``cost`` is in the external-feedback unit (one online test call = 1).
    """

    utility_terms: dict[str, float]
    labels: list[int] = field(default_factory=list)
    solved: bool = False
    cost: float = 1.0
    evidence: Evidence = "E0"
    detail: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Observation:
        return cls(**dict(d))


@dataclass(frozen=True)
class PairRecord:
    """A prediction–observation pair in the history H_k, bound to the versions that made it."""

    task_id: str
    cycle: int
    state: dict[str, Any]  # the environment's JSON dump of the pre-action state
    action: dict[str, Any]  # the environment's JSON dump of the executed action
    prediction: Prediction | None
    observation: Observation
    policy_version: str
    predictor_version: str | None
    split: str  # "update" | "gate"

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> PairRecord:
        d = dict(d)
        d["prediction"] = Prediction.from_json(d["prediction"]) if d.get("prediction") else None
        d["observation"] = Observation.from_json(d["observation"])
        return cls(**d)


@dataclass(frozen=True)
class ImaginedRecord:
    """An imagined outcome ê_τ admitted to D_sim by eq. 8 (never an observation)."""

    task_id: str
    cycle: int
    state: dict[str, Any]
    action: dict[str, Any]
    prediction: Prediction


@runtime_checkable
class Environment(Protocol):
    """X_d, S_d and external feedback: initial observation, evaluation, transition, signatures, audit."""

    def initial(self, task_id: str) -> tuple[State, Observation]:
        """The initial state and its online observation (the initial program counts as one call)."""
        ...

    def evaluate(self, task_id: str, state: State, action: Action) -> Observation:
        """External feedback for one action (for code repair: one run on the full public suite)."""
        ...

    def advance(self, task_id: str, state: State, action: Action, observation: Observation) -> State:
        """The next task state after observing ``action`` (e.g. keep the better program)."""
        ...

    def signature(self, task_id: str, state: State) -> str:
        """State signature (pre-action state, test suite) for matched comparisons in the pair gate."""
        ...

    def audit(self, task_id: str, state: State, actions: Sequence[Action]) -> list[dict[str, Any]]:
        """Metrics-only outcomes of every candidate on all tests; never seen by any decision."""
        ...

    def final_audit(self, task_id: str, state: State) -> dict[str, Any]:
        """Metrics-only final outcome of a task (e.g. hidden-test all-pass of the kept program)."""
        ...

    def dump_state(self, state: State) -> dict[str, Any]: ...

    def load_state(self, data: Mapping[str, Any]) -> State: ...

    def dump_action(self, action: Action) -> dict[str, Any]: ...

    def load_action(self, data: Mapping[str, Any]) -> Action: ...


@runtime_checkable
class Policy(Protocol):
    """The policy configuration θ: proposes candidates K_t = Propose_θ(s_t, g); versioned."""

    version: str

    def propose(self, task_id: str, state: State, k: int, rng: random.Random) -> list[Action]: ...

    def update(
        self, records: Sequence[PairRecord], imagined: Sequence[ImaginedRecord], *, seed: int
    ) -> Policy:
        """θ'_{k+1} = Update(θ_k, D_policy, D_sim) of eq. 9 (returns a new version; self is unchanged)."""
        ...

    def to_bytes(self) -> bytes: ...


@runtime_checkable
class Predictor(Protocol):
    """The predictor φ_d behind the world-model adapter W_d: predictions per candidate; versioned."""

    version: str

    def predict(self, task_id: str, state: State, actions: Sequence[Action]) -> list[Prediction]: ...

    def adapt(self, records: Sequence[PairRecord], *, seed: int) -> Predictor:
        """φ'_{d,k+1} = Adapt(φ_{d,k}, D_adapt) of eq. 12 (returns a new version)."""
        ...

    def adapt_cost(self, n_records: int) -> float:
        """ĉ_adapt of eq. 11 in update-compute units, estimated before adapting."""
        ...

    def to_bytes(self) -> bytes: ...


@runtime_checkable
class Verifier(Protocol):
    """V_d's validity check v_τ: which candidates may be executed at all (runs before ranking).

    Invalid candidates are never predicted, ranked or executed; the reason is recorded. Example::

        class InRange:
            def validate(self, task_id, state, action):
                return (-6.0 <= action <= 1.0, "" if -6.0 <= action <= 1.0 else "step size out of range")
    """

    def validate(self, task_id: str, state: State, action: Action) -> tuple[bool, str]: ...


class AlwaysValid:
    """A verifier that admits every candidate (for domains whose proposer only emits valid actions)."""

    def validate(self, task_id: str, state: State, action: Action) -> tuple[bool, str]:
        return True, ""


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:10]


class BaseEnvironment:
    """An :class:`Environment` with defaults: a domain defines :meth:`initial` and :meth:`evaluate`.

    Defaults, each overridable: :meth:`advance` keeps the state (override it to move, e.g. keep the
    better of state and action); :meth:`signature` is a stable hash of the task and
    :meth:`dump_state`; :meth:`audit` and :meth:`final_audit` record nothing (a domain with hidden,
    metrics-only outcomes overrides them); states and actions are dumped as ``{"state": s}`` /
    ``{"action": a}``, so they must be JSON-able (numbers, strings, lists, dicts) and round-trip
    through JSON; override the four dump/load methods otherwise. Example::

        class Quadratic(BaseEnvironment):
            def initial(self, task_id):
                return 0.0, self.evaluate(task_id, 0.0, 0.0)

            def evaluate(self, task_id, state, action):
                y = -((action - 3.0) ** 2)
                return Observation({"y": y}, solved=y > -0.01)

            def advance(self, task_id, state, action, observation):
                return action
    """

    def initial(self, task_id: str) -> tuple[State, Observation]:
        """The task's initial state and its online observation (it spends ``observation.cost``)."""
        raise NotImplementedError(f"{type(self).__name__} must define initial(task_id)")

    def evaluate(self, task_id: str, state: State, action: Action) -> Observation:
        """External feedback on one selected action (spends ``observation.cost`` of the budget)."""
        raise NotImplementedError(f"{type(self).__name__} must define evaluate(task_id, state, action)")

    def advance(self, task_id: str, state: State, action: Action, observation: Observation) -> State:
        """The next state after ``action`` was observed; the default keeps ``state``."""
        return state

    def signature(self, task_id: str, state: State) -> str:
        """A stable hash of ``task_id`` and :meth:`dump_state` (matched pairs in the pair gate)."""
        data = json.dumps([task_id, self.dump_state(state)], sort_keys=True, default=str).encode()
        return f"{task_id}:{_digest(data)}"

    def audit(self, task_id: str, state: State, actions: Sequence[Action]) -> list[dict[str, Any]]:
        """Metrics-only outcomes of every candidate; the default records none (an empty list)."""
        return []

    def final_audit(self, task_id: str, state: State) -> dict[str, Any]:
        """Metrics-only final outcome of a task; the default records only the final state."""
        return {"final_state": self.dump_state(state)}

    def dump_state(self, state: State) -> dict[str, Any]:
        """The state as JSON (recorded in events and snapshots); default ``{"state": state}``."""
        return {"state": state}

    def load_state(self, data: Mapping[str, Any]) -> State:
        """Inverse of :meth:`dump_state`."""
        return data["state"]

    def dump_action(self, action: Action) -> dict[str, Any]:
        """The action as JSON (recorded in proposals and pair records); default ``{"action": action}``."""
        return {"action": action}

    def load_action(self, data: Mapping[str, Any]) -> Action:
        """Inverse of :meth:`dump_action`."""
        return data["action"]


class _JSONComponent:
    """Versioned components stored as JSON of their constructor arguments.

    :meth:`params` is every public attribute (so ``__init__``'s keyword arguments must be stored
    under their own names and be JSON-able); :meth:`to_bytes` is their JSON, :meth:`from_bytes`
    calls the constructor with them; ``version`` defaults to the class name and a hash of
    :meth:`to_bytes`, so another parameter value is another version. It is recomputed on every
    access (the engine reads it per proposal): a component holding much data can assign
    ``self.version`` in ``__init__`` instead.
    """

    _version: str | None = None

    @property
    def version(self) -> str:
        """The component version recorded with every prediction, proposal and retention decision."""
        return self._version or f"{type(self).__name__}-{_digest(self.to_bytes())}"

    @version.setter
    def version(self, value: str) -> None:
        self._version = value

    def params(self) -> dict[str, Any]:
        """The constructor arguments: every attribute not starting with ``_``."""
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}

    def to_bytes(self) -> bytes:
        """The component's artifact (resume and retention reload it with :meth:`from_bytes`)."""
        try:
            return json.dumps(self.params(), sort_keys=True).encode()
        except TypeError as e:
            raise TypeError(
                f"{type(self).__name__}.to_bytes: its attributes are not JSON ({e}); keep only JSON "
                "values (numbers, strings, lists, dicts) in public attributes, name the rest with a "
                "leading underscore, or override to_bytes/from_bytes"
            ) from None

    @classmethod
    def from_bytes(cls, data: bytes) -> Any:
        """Rebuild a component from :meth:`to_bytes`."""
        return cls(**json.loads(data))


class BasePolicy(_JSONComponent):
    """A :class:`Policy` with defaults: a domain defines :meth:`propose`.

    :meth:`update` returns the policy unchanged (no policy learning: leave
    ``policy_update.enabled`` off, or override it to return a new instance); storage and versions
    come from the constructor arguments (see :class:`_JSONComponent`). Example::

        class Around(BasePolicy):
            def __init__(self, spread=1.0):
                self.spread = spread

            def propose(self, task_id, state, k, rng):
                return [state + rng.uniform(-self.spread, self.spread) for _ in range(k)]

            def update(self, records, imagined, *, seed):
                return Around(self.spread / 2)
    """

    def propose(self, task_id: str, state: State, k: int, rng: random.Random) -> list[Action]:
        """K candidate actions for ``task_id`` at ``state`` (``rng`` is seeded per run, cycle, task)."""
        raise NotImplementedError(f"{type(self).__name__} must define propose(task_id, state, k, rng)")

    def update(
        self, records: Sequence[PairRecord], imagined: Sequence[ImaginedRecord], *, seed: int
    ) -> Policy:
        """A proposed θ' from update-split pair records (and admitted imagined ones); default: self."""
        return self


class BasePredictor(_JSONComponent):
    """A :class:`Predictor` with defaults: a domain defines :meth:`predict`.

    :meth:`adapt` returns the predictor unchanged (override it to learn from the update records);
    :meth:`adapt_cost` charges one update-compute unit per record; storage and versions come from
    the constructor arguments (see :class:`_JSONComponent`). Example::

        class Flat(BasePredictor):
            def __init__(self, mean=0.0):
                self.mean = mean

            def predict(self, task_id, state, actions):
                return [Prediction({"y": self.mean}, self.version, gaussian={"y": [self.mean, 1.0]})
                        for _ in actions]

            def adapt(self, records, *, seed):
                ys = [r.observation.utility_terms["y"] for r in records]
                return Flat(sum(ys) / len(ys))
    """

    def predict(self, task_id: str, state: State, actions: Sequence[Action]) -> list[Prediction]:
        """One :class:`Prediction` per action, in order, tagged with ``self.version``."""
        raise NotImplementedError(f"{type(self).__name__} must define predict(task_id, state, actions)")

    def adapt(self, records: Sequence[PairRecord], *, seed: int) -> Predictor:
        """A proposed φ' from update-split pair records; default: self."""
        return self

    def adapt_cost(self, n_records: int) -> float:
        """ĉ_adapt in update-compute units, before adapting; default one unit per record."""
        return float(n_records)


def _derive_loader(component: Any, role: str) -> Callable[[bytes], Any]:
    load = getattr(type(component), "from_bytes", None)
    if not callable(load):
        raise TypeError(
            f"TaskSpec: the {role} {type(component).__name__} has no from_bytes classmethod; "
            f"pass load_{role}= (a function rebuilding it from to_bytes())"
        )
    return load  # type: ignore[no-any-return]


def _unset_loader(data: bytes) -> Any:  # the sentinel of TaskSpec.load_policy
    raise RuntimeError("TaskSpec.load_policy was not derived")


@dataclass
class TaskSpec:
    """T_d of eq. 1: everything fixed for a run (Table 1, first row) plus the initial components.

    ``load_policy`` / ``load_predictor`` rebuild a component from its ``to_bytes()`` (resume and
    retention reload components from content-addressed artifacts); left out, they are the
    component class's ``from_bytes`` (as :class:`BasePolicy` / :class:`BasePredictor` define it).
    ``budgets`` are B_d.
    """

    name: str
    tasks: Sequence[str]
    environment: Environment
    policy: Policy
    predictor: Predictor | None
    load_policy: Callable[[bytes], Policy] = _unset_loader
    load_predictor: Callable[[bytes], Predictor] | None = None
    verifier: Verifier = field(default_factory=AlwaysValid)
    budgets: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.load_policy is _unset_loader:
            self.load_policy = _derive_loader(self.policy, "policy")
        if self.predictor is not None and self.load_predictor is None:
            self.load_predictor = _derive_loader(self.predictor, "predictor")
