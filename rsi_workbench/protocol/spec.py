"""The task spec T_d of eq. 1 as small protocols, plus the records the engine passes around.

T_d = (X_d, S_d, A_d, W_d, V_d, M_d, C_d, B_d): a domain binds observations/state and external
feedback (:class:`Environment`), proposals of actions (:class:`Policy`, the component θ), the
world-model adapter (:class:`Predictor`, the component φ_d), validity (:class:`Verifier`), and
declares constraints and budgets (:class:`TaskSpec`). Metrics M_d are generic functions over
prediction/observation units (:mod:`rsi_workbench.protocol.metrics`).
"""

from __future__ import annotations

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
    """V_d's validity check v_τ: which candidates may be executed at all (runs before ranking)."""

    def validate(self, task_id: str, state: State, action: Action) -> tuple[bool, str]: ...


class AlwaysValid:
    """A verifier that admits every candidate (for domains whose proposer only emits valid actions)."""

    def validate(self, task_id: str, state: State, action: Action) -> tuple[bool, str]:
        return True, ""


@dataclass
class TaskSpec:
    """T_d of eq. 1: everything fixed for a run (Table 1, first row) plus the initial components.

    ``load_policy`` / ``load_predictor`` rebuild a component from its ``to_bytes()`` (resume and
    retention reload components from content-addressed artifacts). ``budgets`` are B_d.
    """

    name: str
    tasks: Sequence[str]
    environment: Environment
    policy: Policy
    predictor: Predictor | None
    load_policy: Callable[[bytes], Policy]
    load_predictor: Callable[[bytes], Predictor] | None = None
    verifier: Verifier = field(default_factory=AlwaysValid)
    budgets: dict[str, float] = field(default_factory=dict)
