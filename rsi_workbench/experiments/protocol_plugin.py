"""``protocol`` experiment: the retained-pair loop on a domain of one's own, named by import path.

A config names the domain's environment, policy and (optional) predictor and verifier as
``package.module:Name`` (with keyword arguments), its task ids, seed, budgets and the declared
protocol (``protocol:``, :class:`~rsi_workbench.protocol.settings.ProtocolSettings`); nothing in
the package is edited. ``python_path`` (folders, relative to the config file; default the config's
own folder) is put in front of the import search path while the run imports them, and stored
resolved in the run's ``config.json``. One run = one seed: the output directory is the protocol
run itself (``loop_opened`` first, so the cycles, gates and events dashboards open it), and the
report is the engine's generic one (:func:`rsi_workbench.protocol.report.run_report`).
docs/extending-protocol.md has the walk-through.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from rsi_workbench.budget import EXTERNAL_FEEDBACK, UPDATE_COMPUTE
from rsi_workbench.config import InputPath, StrictModel, config_error
from rsi_workbench.plugins import PluginError, import_object, is_import_path, search_path
from rsi_workbench.protocol.loop import Loop
from rsi_workbench.protocol.report import run_report
from rsi_workbench.protocol.settings import ProtocolSettings
from rsi_workbench.protocol.spec import (
    AlwaysValid,
    BaseEnvironment,
    BasePolicy,
    BasePredictor,
    TaskSpec,
)
from rsi_workbench.records import Run

__all__ = ["Component", "Config", "build_spec", "check_config", "open_live_loop", "report", "run_experiment"]

#: methods each role must have (what the engine calls), and the base class whose stubs must be overridden
ROLES: dict[str, tuple[tuple[str, ...], type | None]] = {
    "environment": (
        ("initial", "evaluate", "advance", "signature", "audit", "final_audit")
        + ("dump_state", "load_state", "dump_action", "load_action"),
        BaseEnvironment,
    ),
    "policy": (("propose", "update", "to_bytes", "from_bytes"), BasePolicy),
    "predictor": (("predict", "adapt", "adapt_cost", "to_bytes", "from_bytes"), BasePredictor),
    "verifier": (("validate",), None),
}
REQUIRED = {"environment": ("initial", "evaluate"), "policy": ("propose",), "predictor": ("predict",)}


class Component(StrictModel):
    """One domain component: the import path of its class (or factory) and its keyword arguments;
    a plain string is the import path with no arguments."""

    target: str = Field(description="import path package.module:Name of the class or factory")
    kwargs: dict[str, Any] = Field(default_factory=dict, description="keyword arguments it is called with")

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, data: Any) -> Any:
        return {"target": data} if isinstance(data, str) else data

    @model_validator(mode="after")
    def _path_form(self) -> Component:
        if ":" not in self.target or not is_import_path(self.target):
            raise ValueError(f"{self.target!r} is not an import path package.module:Name")
        return self


class Config(StrictModel):
    """The ``protocol`` experiment: one seeded run of the loop on the named components."""

    experiment: Literal["protocol"] = "protocol"
    name: str = Field(default="protocol", description="the task spec's name (recorded in loop_opened)")
    python_path: list[InputPath] = Field(
        default_factory=lambda: ["."],
        description="folders put in front of the import search path (relative: to the config file)",
    )
    environment: Component
    policy: Component
    predictor: Component | None = None
    verifier: Component | None = Field(default=None, description="validity check; default: all valid")
    tasks: list[str] = Field(min_length=1, description="task ids the environment knows")
    seed: int = 0
    budgets: dict[str, float] = Field(
        default_factory=dict,
        description=(
            "external_feedback and update_compute; unset external_feedback: one call per task and "
            "round plus the initial ones; unset update_compute: 100"
        ),
    )
    protocol: ProtocolSettings = Field(default_factory=ProtocolSettings)

    @field_validator("tasks", mode="before")
    @classmethod
    def _ids_as_strings(cls, v: Any) -> Any:
        """Task ids are strings; YAML numbers (``tasks: [2, 4, 8]``) are taken as their text."""
        return (
            [str(t) if isinstance(t, int | float) and not isinstance(t, bool) else t for t in v]
            if isinstance(v, list)
            else v
        )

    def resolved_budgets(self) -> dict[str, float]:
        """The budgets B_d the run declares (defaults filled in)."""
        p = self.protocol
        out = {
            EXTERNAL_FEEDBACK: float(len(self.tasks) * (1 + p.max_rounds * p.batch_size)),
            UPDATE_COMPUTE: 100.0,
        }
        out.update({k: float(v) for k, v in self.budgets.items()})
        return out


def _load(config: Config, role: str, source: str | None = None) -> Any:
    """The class (or factory) a component names; with ``source``, a ConfigError naming the field."""
    comp: Component = getattr(config, role)
    try:
        obj = import_object(comp.target)
    except PluginError as e:
        if source is None:
            raise
        raise config_error(source, f"{role}.target", str(e)) from None
    if source is not None:
        _check_component(obj, comp, role, source)
    return obj


def _check_component(obj: Any, comp: Component, role: str, source: str) -> None:
    field = f"{role}.target"
    if not callable(obj):
        raise config_error(source, field, f"{comp.target} is not a class or factory")
    if isinstance(obj, type):
        methods, base = ROLES[role]
        missing = [m for m in methods if not callable(getattr(obj, m, None))]
        if missing:
            raise config_error(
                source, field, f"{comp.target} lacks {', '.join(missing)} (a {role} needs them)"
            )
        if base is not None and issubclass(obj, base):
            stubs = [m for m in REQUIRED.get(role, ()) if getattr(obj, m) is getattr(base, m)]
            if stubs:
                raise config_error(source, field, f"{comp.target} does not define {', '.join(stubs)}")
    try:
        inspect.signature(obj).bind(**comp.kwargs)
    except TypeError as e:
        raise config_error(source, f"{role}.kwargs", f"{comp.target}: {e}") from None
    except ValueError:  # no signature to check (a builtin): calling it will tell
        pass


def check_config(config: Config, source: str) -> None:
    """Preflight (before a run directory exists): every component imports from ``python_path``, has
    the methods its role needs and accepts its kwargs; a custom selection rule imports; budgets are
    the two declared ones. Each failure is a ConfigError ``<config>: <field>: <what is wrong>``."""
    for i, d in enumerate(config.python_path):
        if not Path(d).is_dir():
            raise config_error(source, f"python_path.{i}", f"{d}: no such folder")
    unknown = sorted(set(config.budgets) - {EXTERNAL_FEEDBACK, UPDATE_COMPUTE})
    if unknown:
        raise config_error(
            source, "budgets", f"unknown budget(s) {unknown}; allowed: external_feedback, update_compute"
        )
    with search_path(config.python_path):
        for role in ("environment", "policy", "predictor", "verifier"):
            if getattr(config, role) is not None:
                _load(config, role, source)
        rule = config.protocol.rule
        if ":" in rule:
            try:
                import_object(rule)
            except PluginError as e:
                raise config_error(source, "protocol.rule", str(e)) from None


def _make(config: Config, role: str) -> Any:
    comp: Component | None = getattr(config, role)
    return None if comp is None else _load(config, role)(**comp.kwargs)


def build_spec(config: Config) -> TaskSpec:
    """The task spec T_d from the config's components (call inside :func:`search_path`)."""
    return TaskSpec(
        name=config.name,
        tasks=list(config.tasks),
        environment=_make(config, "environment"),
        policy=_make(config, "policy"),
        predictor=_make(config, "predictor"),
        verifier=_make(config, "verifier") or AlwaysValid(),
        budgets=config.resolved_budgets(),
    )


def run_experiment(config: Config, out: Path, *, resume: bool = False) -> Path:
    """Run (or resume) the loop in ``out`` until it finishes; returns ``out``."""
    with search_path(config.python_path):
        spec = build_spec(config)
        with Run.create(out, config, kind="protocol", exist_ok=resume) as run:
            loop = Loop.open(spec, run, config.protocol, seed=config.seed, progress=True)
            loop.run()
    return Path(out)


def open_live_loop(path: Path, owner: Run) -> Loop | None:
    """The loop of the unfinished run at ``path``, rebuilt from its ``config.json`` so a live
    dashboard (``serve --live``) can step it; None when the run is finished. ``python_path`` stays
    on the import search path of this (server) process, since steps import lazily."""
    import sys

    from rsi_workbench.protocol.loop import effective_events

    finished = [e for e in effective_events(Run.open(path)) if e.kind == "cycle_finished"]
    if finished and finished[-1].payload["report"].get("finished"):
        return None
    config = Config.model_validate_json((Path(path) / "config.json").read_text())
    handle = owner if Path(owner.path) == Path(path) else Run.open(path, mode="a")
    sys.path[:0] = [d for d in config.python_path if d not in sys.path]
    return Loop.open(build_spec(config), handle, config.protocol, seed=config.seed)


def report(path: str | Path) -> str:
    """The engine's generic report of the run (it reads events only: no component is imported)."""
    return run_report(path)
