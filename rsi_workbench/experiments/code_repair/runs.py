"""One (method, seed) run of the code-repair experiment: its task spec T_d (the coder θ_0, the
method's predictor φ_0, the budgets), its protocol settings, its run directory and its
``run_finished`` fingerprints. Used by the serial driver (:mod:`.experiment`) and the Ray tasks
(:mod:`.fanout`) alike."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rsi_workbench.domains.code_repair.binding import CodeRepairEnvironment, CompileVerifier, RepairPolicy
from rsi_workbench.domains.code_repair.coder_settings import coder_run_path, open_llm_coder, uses_model
from rsi_workbench.experiments.code_repair.config import (
    ADAPTIVE_METHODS,
    EXTENSIBLE,
    FEATURE_METHODS,
    LM_METHODS,
    Config,
    stored_config,
)
from rsi_workbench.protocol.loop import ProtocolSettings
from rsi_workbench.protocol.spec import Predictor, TaskSpec
from rsi_workbench.records import Run, has_events


def method_settings(base: ProtocolSettings, method: str) -> ProtocolSettings:
    """The protocol settings of one method: its selection rule and whether adaptation is on."""
    rule = {"random_k": "random_k", "info_gain": "info_gain"}.get(method, "utility_argmax")
    adapt = base.adaptation.model_copy(update={"enabled": method in ADAPTIVE_METHODS})
    return base.model_copy(update={"rule": rule, "adaptation": adapt})


def finished_children(config: Config, out: Path, name: str, seed: int) -> dict[str, Any]:
    """The ``child_runs`` of a ``run_finished``: the fingerprint of ``runs/<name>`` and, with a model
    coder, of the seed's record of coder calls so far (it grows with the seed's later methods)."""
    from rsi_workbench.records import child_runs

    coder = [coder_run_path(out, seed)] if uses_model(config.coder) else []
    return child_runs(out, out / "runs" / name, grows=[p for p in coder if has_events(p)])


def open_or_create(path: Path, config: Config, extra: dict[str, Any], *, kind: str, resume: bool) -> Run:
    """Create a run directory, or re-open it when its stored config means the same experiment (compared
    after validation, so fields added later with defaults do not block resuming older runs)."""
    cfg_file = path / "config.json"
    if not cfg_file.exists():
        data = {**extra, "experiment": config.model_dump(mode="json")} if extra else config
        return Run.create(path, data, kind=kind, **extra)
    if not resume:
        return Run.create(path, config, kind=kind)  # raises: the directory already exists
    import json

    stored = json.loads(cfg_file.read_text())
    if extra:  # one (method, seed) run: the same protocol (the experiment may have grown since)
        skip = set(EXTENSIBLE) | {"executor"}  # where a run executes never changes what it computes
        old = Config.model_validate(stored["experiment"]).model_dump(mode="json", exclude=skip)
        same = all(stored.get(k) == v for k, v in extra.items()) and old == config.model_dump(
            mode="json", exclude=skip
        )
    else:  # the same experiment, whatever executor resumes it (`rsi-workbench resume --executor`)
        same = stored_config(path).model_copy(update={"executor": config.executor}) == config
    if not same:
        from rsi_workbench.records import RunError

        raise RunError(
            f"{path} holds a different experiment config; refusing to mix configs in one run "
            "(to add seeds or methods to a finished experiment: `rsi-workbench run CONFIG --out DIR --extend`)"
        )
    return Run.open(path, mode="a")


def make_spec(
    config: Config,
    env: CodeRepairEnvironment,
    tasks: list[Any],
    predictor: Predictor | None,
    method: str,
    *,
    seed: int | None = None,
    out: Path | None = None,
    coder_load: Callable[[], Any] | None = None,
) -> TaskSpec:
    """T_d for one code-repair run: the fixed coder θ_0, the method's predictor φ_0, budgets B_d.
    A model coder (``coder.kind`` llm or hybrid) records its calls in ``<out>/coder/seed<seed>``;
    ``coder_load`` loads its backend once for several runs (one seed's methods in one Ray task)."""
    from rsi_workbench.domains.code_repair.predictor import load_predictor_bytes

    llm = None
    if uses_model(config.coder):
        assert config.coder is not None
        if out is None or seed is None:
            raise ValueError(
                "a model coder needs the experiment directory and seed: make_spec(..., seed=, out=)"
            )
        llm = (
            open_llm_coder(config.coder, Path(out), seed)
            if coder_load is None
            else open_llm_coder(config.coder, Path(out), seed, load=coder_load)
        )
        env.track_attempts = True  # the prompt shows this task's earlier attempts
    kind = config.coder.kind if config.coder is not None else "mutation"

    return TaskSpec(
        name="code_repair",
        tasks=[t.task_id for t in tasks],
        environment=env,
        policy=RepairPolicy(env, kind=kind, llm=llm),
        predictor=predictor,
        load_policy=lambda b: RepairPolicy.from_bytes(env, b, llm),
        load_predictor=(lambda b: load_predictor_bytes(b, predictor)) if predictor is not None else None,
        verifier=CompileVerifier(),
        budgets={
            "external_feedback": float(len(tasks) * (1 + config.protocol.max_rounds)),
            "update_compute": config.update_compute_budget,
        },
    )


def build_predictor(
    config: Config, method: str, seed: int, tasks: list[Any], env: CodeRepairEnvironment, out: Path
) -> Predictor | None:
    """φ_0 of a method: none for Random-K, the coder's own weights, the LM or features readout (the
    features_* methods: ``world.lm_readout`` with ``use_lm: false``; the oracle trains on its pools),
    the static verifier, or the cross-fitted world model."""
    if method == "random_k":
        return None
    if method == "coder_prior":
        from rsi_workbench.domains.code_repair.coder_prior import CoderPriorPredictor

        return CoderPriorPredictor()
    if method in LM_METHODS | FEATURE_METHODS:
        from rsi_workbench.domains.code_repair.lm_readout import lm_readout_predictor

        s = config.world.lm_readout
        assert s is not None
        if method in FEATURE_METHODS:
            update: dict[str, Any] = {"use_lm": False}
            if method == "features_oracle":
                update["train_on"] = "pools"
            s = s.model_copy(update=update)
        return lm_readout_predictor(s, seed, tasks, out, source=config.tasks.path, env=env)
    from rsi_workbench.domains.code_repair.predictor import trained_predictor

    kind = "static_verifier" if method == "static_verifier" else "world_model"
    return trained_predictor(config.world, kind, seed, tasks, env, out, **training_inputs(config))


def training_inputs(config: Config) -> dict[str, Any]:
    """The plain values φ's training reads beside ``world:`` (torch threads, task file, workers)."""
    return {"threads": config.torch_threads, "source": config.tasks.path, "workers": config.sandbox.workers}


__all__ = [
    "build_predictor",
    "finished_children",
    "make_spec",
    "method_settings",
    "open_or_create",
    "training_inputs",
]
