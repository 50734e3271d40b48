"""A protocol run in one call: :func:`run_protocol`, the counterpart of ``rw.run_campaign`` and
``rw.run_rsiagent`` for the retained-pair loop (the task spec, the run directory and the loop are
built for you; ``Loop.open`` remains the way to step a loop by hand).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rsi_workbench.budget import EXTERNAL_FEEDBACK, UPDATE_COMPUTE
from rsi_workbench.protocol.loop import CycleReport, Loop
from rsi_workbench.protocol.selection import SelectionRule
from rsi_workbench.protocol.settings import ProtocolSettings
from rsi_workbench.protocol.spec import AlwaysValid, Environment, Policy, Predictor, TaskSpec, Verifier
from rsi_workbench.records import Run

__all__ = ["ProtocolResult", "default_budgets", "run_protocol"]


@dataclass
class ProtocolResult:
    """What :func:`run_protocol` did: the run directory, the cycles it ran in this call and the pair
    (θ, φ) retained at the end (read the run with ``rw.run_report(result.path)``)."""

    path: Path
    reports: list[CycleReport] = field(default_factory=list)
    policy: Policy | None = None
    predictor: Predictor | None = None

    @property
    def finished(self) -> bool:
        return bool(self.reports) and self.reports[-1].finished


def default_budgets(n_tasks: int, settings: ProtocolSettings) -> dict[str, float]:
    """B_d when none are declared: one external call per task and round (times the batch), plus each
    task's initial observation; 100 units of update compute (as ``experiment: protocol`` does)."""
    return {
        EXTERNAL_FEEDBACK: float(n_tasks * (1 + settings.max_rounds * settings.batch_size)),
        UPDATE_COMPUTE: 100.0,
    }


def run_protocol(
    environment: Environment,
    policy: Policy,
    predictor: Predictor | None = None,
    *,
    tasks: Sequence[Any],
    out: str | Path,
    settings: ProtocolSettings | dict[str, Any] | None = None,
    seed: int = 0,
    verifier: Verifier | None = None,
    budgets: dict[str, float] | None = None,
    name: str = "protocol",
    rule: SelectionRule | str | None = None,
    cycles: int | None = None,
    resume: bool = False,
    progress: bool = False,
    load_policy: Callable[[bytes], Policy] | None = None,
    load_predictor: Callable[[bytes], Predictor] | None = None,
) -> ProtocolResult:
    """Run (or, with ``resume``, continue) the retained-pair loop on ``tasks``; records in ``out``.

    ``settings``: :class:`ProtocolSettings` or its dict form (default: the declared defaults);
    ``budgets``: B_d, missing ones filled in by :func:`default_budgets`; ``cycles``: stop after this
    many cycles of this call (default: until the loop finishes); ``rule``: a selection rule object or
    name instead of ``settings.rule``. Task ids are strings (``str(t)`` of what you pass).
    Components are stored as artifacts and reloaded through ``load_policy`` / ``load_predictor``
    (default: their class's ``from_bytes``), exactly as ``Loop.open`` does.

    Example (a self-contained domain: guess a hidden number; the predictor knows it roughly)::

        import tempfile
        import rsi_workbench as rw
        from rsi_workbench.protocol import BaseEnvironment, BasePolicy, BasePredictor, Observation, Prediction

        class Guess(BaseEnvironment):
            def initial(self, task_id):
                return 0, self.evaluate(task_id, 0, 0)

            def evaluate(self, task_id, state, action):
                hit = abs(action - int(task_id)) <= 1
                return Observation({"score": float(hit)}, [int(not hit)], solved=hit)

            def advance(self, task_id, state, action, observation):
                return action

        class Around(BasePolicy):
            def propose(self, task_id, state, k, rng):
                return [rng.randint(0, 9) for _ in range(k)]

        class Rough(BasePredictor):
            def predict(self, task_id, state, actions):
                near = [abs(a - int(task_id)) <= 2 for a in actions]
                return [Prediction({"score": float(n)}, self.version, [[0.7, 0.3] if n else [0.2, 0.8]]) for n in near]

        result = rw.run_protocol(
            Guess(), Around(), Rough(),
            tasks=[3, 5, 7],
            out=tempfile.mkdtemp() + "/guess",
            settings={"k": 3, "max_rounds": 2, "utility": {"weights": {"score": 1.0}}, "audit": False},
        )
        print(result.finished, rw.run_report(result.path).splitlines()[0])
    """
    if settings is None:
        settings = ProtocolSettings()
    elif not isinstance(settings, ProtocolSettings):
        settings = ProtocolSettings.model_validate(settings)
    ids = [str(t) for t in tasks]
    declared = {**default_budgets(len(ids), settings), **{k: float(v) for k, v in (budgets or {}).items()}}
    spec_kw: dict[str, Any] = {}
    if load_policy is not None:
        spec_kw["load_policy"] = load_policy
    if load_predictor is not None:
        spec_kw["load_predictor"] = load_predictor
    spec = TaskSpec(
        name=name,
        tasks=ids,
        environment=environment,
        policy=policy,
        predictor=predictor,
        verifier=verifier if verifier is not None else AlwaysValid(),
        budgets=declared,
        **spec_kw,
    )
    config = {
        "name": name,
        "seed": seed,
        "tasks": ids,
        "budgets": declared,
        "protocol": settings.model_dump(mode="json"),
    }
    with Run.create(Path(out), config, kind="protocol", exist_ok=resume) as run:
        loop = Loop.open(spec, run, settings, seed=seed, progress=progress, rule=rule)
        reports = loop.run(cycles)
        return ProtocolResult(Path(out), reports, loop.policy, loop.predictor)
