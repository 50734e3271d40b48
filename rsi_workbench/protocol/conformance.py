"""The engine's contract, checked on a plug-in author's components: :func:`check_components`.

What the loop relies on, and what running a loop and reading its output would only reveal late:

- **build** — each factory builds a component with the methods its role needs;
- **JSON** — a state and an action survive ``dump_*`` → ``json`` → ``load_*`` → ``dump_*``
  unchanged; observations and predictions survive ``to_json`` → ``json`` → ``from_json``;
- **versions** — ``version`` is a non-empty string; a component stored with ``to_bytes`` and
  reloaded (``TaskSpec``'s loader, the class's ``from_bytes`` by default) keeps its version; a
  prediction carries the version of the predictor that made it; an updated policy or adapted
  predictor that stores differently has a new version;
- **determinism** — two loops of the same seed over freshly built components record the same events
  (time and wall-clock fields aside);
- **resume** — a loop stopped after its first cycle and re-opened over freshly built components
  records what the uninterrupted loop records.

Each failed check is reported with the check's name and what to change; :class:`ConformanceError`
lists all of them.
"""

from __future__ import annotations

import json
import random
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rsi_workbench.protocol.loop import Loop, effective_events
from rsi_workbench.protocol.run import default_budgets
from rsi_workbench.protocol.settings import ProtocolSettings
from rsi_workbench.protocol.spec import AlwaysValid, Observation, Prediction, TaskSpec, Verifier
from rsi_workbench.records import Run

__all__ = ["ConformanceError", "ConformanceReport", "check_components", "check_protocol_components"]

ROLE_METHODS = {
    "environment": (
        "initial",
        "evaluate",
        "advance",
        "signature",
        "dump_state",
        "load_state",
        "dump_action",
        "load_action",
    ),
    "policy": ("propose", "update", "to_bytes"),
    "predictor": ("predict", "adapt", "adapt_cost", "to_bytes"),
    "verifier": ("validate",),
}
WALL = ("runtime", "latency")


class ConformanceError(AssertionError):
    """One or more contract checks failed; ``failures`` holds ``(check, message)`` pairs."""

    def __init__(self, failures: list[tuple[str, str]]):
        self.failures = failures
        lines = "\n".join(f"  [{check}] {msg}" for check, msg in failures)
        super().__init__(f"{len(failures)} protocol contract check(s) failed:\n{lines}")


@dataclass
class ConformanceReport:
    """The checks that ran (``passed``) and those that failed (``failures``: check, message)."""

    passed: list[str] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures

    def __str__(self) -> str:
        lines = [f"ok    {c}" for c in self.passed] + [f"FAIL  {c}: {m}" for c, m in self.failures]
        return "\n".join(lines)


def _normalise(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {
            k: _normalise(v)
            for k, v in obj.items()
            if not (k == "time" or k == "sandbox" or k.endswith("_s") or k in WALL)
        }
    if isinstance(obj, list):
        return [_normalise(v) for v in obj]
    return obj


def _events(path: Path) -> list[tuple[str, int | None, Any]]:
    return [(e.kind, e.cycle, _normalise(e.payload)) for e in effective_events(Run.open(path))]


def _first_difference(a: list[Any], b: list[Any]) -> str:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return f"event {i} ({x[0]}, cycle {x[1]}) differs: {json.dumps(x[2], default=str)[:300]} vs {json.dumps(y[2], default=str)[:300]}"
    return f"{len(a)} events vs {len(b)}"


def _json_cycle(obj: Any) -> Any:
    return json.loads(json.dumps(obj, sort_keys=True))


def check_components(
    environment: Callable[[], Any],
    policy: Callable[[], Any],
    predictor: Callable[[], Any] | None = None,
    *,
    tasks: Sequence[Any],
    settings: ProtocolSettings | Mapping[str, Any] | None = None,
    seed: int = 0,
    verifier: Callable[[], Verifier] | None = None,
    budgets: Mapping[str, float] | None = None,
    rounds: int = 2,
    load_policy: Callable[[bytes], Any] | None = None,
    load_predictor: Callable[[bytes], Any] | None = None,
    raise_on_failure: bool = True,
) -> ConformanceReport:
    """Run the engine's contract checks (module doc) on the components the factories build.

    ``environment``, ``policy``, ``predictor`` and ``verifier`` are zero-argument factories (a
    class without required arguments is one, or ``lambda: LocalSearch(spread=1.0)``): the checks
    build fresh components for every loop. ``tasks`` should be a few task ids (the loops run
    ``rounds`` cycles over them); ``settings`` as for ``Loop.open`` (``max_rounds`` is set to
    ``rounds``). Raises :class:`ConformanceError` listing every failure (or, with
    ``raise_on_failure=False``, returns them in the report).

    Example::

        rw.check_protocol_components(SGDStepSize, LocalSearch, KernelPredictor, tasks=[2, 4, 8],
                                     settings={"k": 3, "utility": {"weights": {"score": 1.0}}})
    """
    rep = ConformanceReport()
    fail = rep.failures.append
    if settings is None:
        settings = ProtocolSettings()
    elif not isinstance(settings, ProtocolSettings):
        settings = ProtocolSettings.model_validate(dict(settings))
    settings = settings.model_copy(update={"max_rounds": max(2, rounds)})
    ids = [str(t) for t in tasks]
    if not ids:
        raise ValueError("check_components: give at least one task id")
    factories = {"environment": environment, "policy": policy, "predictor": predictor, "verifier": verifier}

    # build
    built: dict[str, Any] = {}
    for role, make in factories.items():
        if make is None:
            continue
        try:
            obj = make()
        except Exception as e:  # noqa: BLE001 - reported, with the role
            fail(("build", f"{role}: building it raised {type(e).__name__}: {e}"))
            continue
        missing = [m for m in ROLE_METHODS[role] if not callable(getattr(obj, m, None))]
        if missing:
            base = {"environment": "BaseEnvironment", "policy": "BasePolicy", "predictor": "BasePredictor"}
            hint = f" (subclass rsi_workbench.protocol.{base[role]} for defaults)" if role in base else ""
            fail(("build", f"{role} {type(obj).__name__} lacks {', '.join(missing)}{hint}"))
        built[role] = obj
    if rep.failures:
        return _finish(rep, raise_on_failure)
    rep.passed.append("build")
    env, pol, pred = built["environment"], built["policy"], built.get("predictor")

    def spec() -> TaskSpec:
        kw: dict[str, Any] = {}
        if load_policy is not None:
            kw["load_policy"] = load_policy
        if load_predictor is not None:
            kw["load_predictor"] = load_predictor
        return TaskSpec(
            name="conformance",
            tasks=ids,
            environment=environment(),
            policy=policy(),
            predictor=predictor() if predictor is not None else None,
            verifier=verifier() if verifier is not None else AlwaysValid(),
            budgets={
                **default_budgets(len(ids), settings),
                **{k: float(v) for k, v in (budgets or {}).items()},
            },
            **kw,
        )

    # JSON round trips of states, actions, observations and predictions
    n = len(rep.failures)
    try:
        _check_json(env, pol, pred, ids, settings.k, seed, fail)
    except Exception as e:  # noqa: BLE001
        fail(("json", f"calling the components raised {type(e).__name__}: {e}"))
    if len(rep.failures) == n:
        rep.passed.append("json")

    # versions
    n = len(rep.failures)
    try:
        _check_versions(spec(), fail)
    except Exception as e:  # noqa: BLE001
        fail(("versions", f"storing or reloading a component raised {type(e).__name__}: {e}"))
    if len(rep.failures) == n:
        rep.passed.append("versions")

    # determinism and resume: tiny loops in a temporary folder
    with tempfile.TemporaryDirectory() as tmp:
        runs = [Path(tmp) / name for name in ("first", "second", "resumed")]
        try:
            for path in runs[:2]:
                with Run.create(path, {"conformance": True}, kind="protocol") as run:
                    Loop.open(spec(), run, settings, seed=seed).run()
        except Exception as e:  # noqa: BLE001
            fail(("loop", f"a {settings.max_rounds}-cycle loop raised {type(e).__name__}: {e}"))
            return _finish(rep, raise_on_failure)
        rep.passed.append("loop")
        first, second = _events(runs[0]), _events(runs[1])
        if first != second:
            fail(
                (
                    "determinism",
                    "two loops of the same seed recorded different events: "
                    f"{_first_difference(first, second)}. Draw randomness only from the rng the loop "
                    "passes to propose and the seed passed to update/adapt; no global random state, "
                    "no set iteration order, no clock",
                )
            )
        else:
            rep.passed.append("determinism")
        try:
            with Run.create(runs[2], {"conformance": True}, kind="protocol") as run:
                Loop.open(spec(), run, settings, seed=seed).run(1)
            with Run.open(runs[2], mode="a") as run:
                Loop.open(spec(), run, settings, seed=seed).run()
        except Exception as e:  # noqa: BLE001
            fail(("resume", f"re-opening the loop after cycle 1 raised {type(e).__name__}: {e}"))
            return _finish(rep, raise_on_failure)
        resumed = _events(runs[2])
        if resumed != first:
            fail(
                (
                    "resume",
                    "a loop re-opened after cycle 1 recorded otherwise than an uninterrupted one: "
                    f"{_first_difference(first, resumed)}. Everything a component needs must be in "
                    "to_bytes (and a state in dump_state)",
                )
            )
        else:
            rep.passed.append("resume")
    return _finish(rep, raise_on_failure)


check_protocol_components = check_components


def _finish(rep: ConformanceReport, raise_on_failure: bool) -> ConformanceReport:
    if rep.failures and raise_on_failure:
        raise ConformanceError(rep.failures)
    return rep


def _check_json(
    env: Any, pol: Any, pred: Any, ids: list[str], k: int, seed: int, fail: Callable[[tuple[str, str]], None]
) -> None:
    for t in ids:
        state, obs = env.initial(t)
        _roundtrip_observation(obs, f"environment.initial({t!r})", fail)
        dumped = env.dump_state(state)
        try:
            again = _json_cycle(dumped)
        except (TypeError, ValueError) as e:
            fail(("json", f"dump_state of task {t!r}'s initial state is not JSON: {e}"))
            continue
        if env.dump_state(env.load_state(again)) != again:
            fail(
                (
                    "json",
                    f"task {t!r}: dump_state(load_state(dump_state(s))) != dump_state(s) for the initial state",
                )
            )
        actions = pol.propose(t, env.load_state(again), k, random.Random(seed))
        if not isinstance(actions, list) or len(actions) != k:
            fail(
                (
                    "json",
                    f"policy.propose must return a list of k={k} actions, got {type(actions).__name__} of {len(actions) if hasattr(actions, '__len__') else '?'}",
                )
            )
            continue
        for a in actions:
            da = env.dump_action(a)
            try:
                ja = _json_cycle(da)
            except (TypeError, ValueError) as e:
                fail(("json", f"dump_action({a!r}) is not JSON: {e}"))
                break
            if env.dump_action(env.load_action(ja)) != ja:
                fail(("json", f"dump_action(load_action(dump_action(a))) != dump_action(a) for a = {a!r}"))
                break
        if actions:
            _roundtrip_observation(
                env.evaluate(t, state, actions[0]), f"environment.evaluate({t!r}, ...)", fail
            )
        if pred is not None and actions:
            preds = pred.predict(t, state, actions)
            if len(preds) != len(actions):
                fail(
                    (
                        "json",
                        f"predictor.predict returned {len(preds)} predictions for {len(actions)} actions",
                    )
                )
            for p in preds:
                if not isinstance(p, Prediction):
                    fail(
                        ("json", f"predictor.predict must return Prediction objects, got {type(p).__name__}")
                    )
                    break
                if Prediction.from_json(_json_cycle(p.to_json())).to_json() != p.to_json():
                    fail(
                        (
                            "json",
                            "a prediction does not survive to_json → JSON → from_json (non-JSON values?)",
                        )
                    )
                    break
                if p.version != pred.version:
                    fail(
                        (
                            "versions",
                            f"a prediction carries version {p.version!r}, the predictor is {pred.version!r}",
                        )
                    )
                    break


def _roundtrip_observation(obs: Any, where: str, fail: Callable[[tuple[str, str]], None]) -> None:
    if not isinstance(obs, Observation):
        fail(("json", f"{where} must return an Observation, got {type(obs).__name__}"))
        return
    try:
        ok = Observation.from_json(_json_cycle(obs.to_json())).to_json() == obs.to_json()
    except (TypeError, ValueError) as e:
        fail(("json", f"{where}'s observation is not JSON: {e}"))
        return
    if not ok:
        fail(("json", f"{where}'s observation does not survive to_json → JSON → from_json"))


def _check_versions(spec: TaskSpec, fail: Callable[[tuple[str, str]], None]) -> None:
    parts: list[tuple[str, Any, Callable[[bytes], Any] | None]] = [("policy", spec.policy, spec.load_policy)]
    if spec.predictor is not None:
        parts.append(("predictor", spec.predictor, spec.load_predictor))
    for role, comp, load in parts:
        v = comp.version
        if not isinstance(v, str) or not v:
            fail(("versions", f"{role}.version must be a non-empty string, got {v!r}"))
            continue
        assert load is not None
        data = comp.to_bytes()
        back = load(data)
        if back.version != v:
            fail(("versions", f"{role} reloaded from to_bytes has version {back.version!r}, stored {v!r}"))
        if back.to_bytes() != data:
            fail(
                (
                    "versions",
                    f"{role} reloaded from to_bytes stores different bytes (state lost in to_bytes?)",
                )
            )
        try:  # on no records: what an update that changes nothing stores
            new = comp.update([], [], seed=0) if role == "policy" else comp.adapt([], seed=0)
        except Exception:  # noqa: BLE001 - an update may need records; the loop checks it then
            continue
        if new.to_bytes() != data and new.version == v:
            fail(
                (
                    "versions",
                    f"{role}.{'update' if role == 'policy' else 'adapt'} returned a component that stores "
                    f"differently but keeps version {v!r} (records would attribute its decisions to the old one)",
                )
            )
