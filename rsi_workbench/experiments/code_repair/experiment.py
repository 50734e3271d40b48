"""The code-repair experiment (``experiment: code_repair``): four selection methods sharing one
proposer and candidate budget, several seeds, one run per (method, seed), one experiment directory.

Layout of an experiment directory::

    <out>/config.json, events.jsonl        the experiment (a run of kind code_repair_experiment)
    <out>/predictors/seed<s>/              training runs: cross-fitted predictor checkpoints (artifacts)
    <out>/runs/<method>-seed<s>/           one protocol run per (method, seed)
    <out>/exec_cache.jsonl                 sandbox outcomes shared by the runs (same program, same tests)
    <out>/report.txt                       the results table (written by `rsi-workbench run`/`resume`)

Everything is resumable: finished runs are skipped, an interrupted run resumes from its events. A
finished experiment grows (``rsi-workbench run CONFIG --out DIR --extend``): a config that differs only
by added seeds or methods appends an ``experiment_extended`` event and runs only the new (method, seed)
runs, reusing the transitions, the per-seed predictors and the execution cache already in ``DIR``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, field_validator, model_serializer, model_validator

from rsi_workbench.config import InputPath, StrictModel
from rsi_workbench.execute import ExecutorConfig, omit_unset_executor, resolve_executor
from rsi_workbench.experiments.code_repair.binding import (
    CodeRepairEnvironment,
    CompileVerifier,
    ExecutionCache,
    RepairPolicy,
)
from rsi_workbench.experiments.code_repair.coders import (
    CoderSettings,
    close_coder,
    coder_run_path,
    open_llm_coder,
    uses_model,
)
from rsi_workbench.experiments.code_repair.predictor import save_features
from rsi_workbench.models.config import ModelConfig
from rsi_workbench.protocol.loop import Loop, ProtocolSettings
from rsi_workbench.protocol.spec import Predictor, TaskSpec
from rsi_workbench.records import Run, has_events

Method = Literal[
    "random_k", "static_verifier", "world_fixed", "world_adaptive", "info_gain", "lm_fixed", "lm_adaptive"
]
LM_METHODS = frozenset({"lm_fixed", "lm_adaptive"})  # the LM readout (world.lm_readout) as φ
DEFAULT_METHODS: tuple[Method, ...] = ("random_k", "static_verifier", "world_fixed", "world_adaptive")
METHOD_LABELS: dict[str, str] = {
    "random_k": "Random-K (random one of K)",
    "static_verifier": "capacity-matched static verifier",
    "world_fixed": "RSI-Anything + fixed world model",
    "world_adaptive": "RSI-Anything + world-model adaptation",
    "info_gain": "information-gain acquisition (not utility ranking)",
    "lm_fixed": "RSI-Anything + fixed LM-likelihood readout",
    "lm_adaptive": "RSI-Anything + LM-likelihood readout adaptation",
}


class TaskSource(StrictModel):
    """Which repair tasks: a JSONL file in the task format (README), or HumanEvalFix when ``path`` is null."""

    path: InputPath | None = Field(
        default=None, description="task file (JSONL; relative: to the config file); null = HumanEvalFix"
    )
    ids: list[str] = Field(default_factory=list, description="only these task ids (empty = all)")
    limit: int | None = Field(default=None, ge=1, description="first N tasks after `ids` filtering")
    allow_failing_reference: bool = Field(
        default=False,
        description="run a task file some of whose references fail their own tests (reported apart)",
    )


class ListwiseSettings(StrictModel):
    """The paper's listwise KL over each state's candidate pool, beside the pairwise hinge (world model
    only; the static verifier stays cross-entropy only): KL(softmax(u_obs/τ) || softmax(u_pred/τ))."""

    tau: float = Field(default=0.1, gt=0.0, description="the softmax temperature τ (the paper: 0.1)")
    weight: float = Field(default=0.2, gt=0.0, description="the loss weight (not in the paper; the hinge's)")
    pool_size: int | None = Field(
        default=4, ge=2, le=4, description="pools of exactly this many candidates (k=4); null = any >= 2"
    )


class LMReadoutSettings(StrictModel):
    """The LM-likelihood readout as the protocol predictor (methods ``lm_fixed`` / ``lm_adaptive``):
    eq. 4's P(pass) readout on [Δ log p, per-token Δ, operator, suspiciousness] (``lm_ranker.
    ReadoutPredictor``), cross-fitted over ``folds`` task folds and fitted on the pooled candidates
    (label: passes every hidden test) of a pools directory's tasks outside a task's fold."""

    model: ModelConfig = Field(default_factory=ModelConfig, description="a model block that scores")
    pools: InputPath = Field(
        description="a pools directory (`rsi-workbench tasks pools`) of the same task source: the "
        "readout's training candidates (relative: to the config file)"
    )
    folds: int = Field(default=5, ge=2, description="task folds of the cross-fitted readout")
    use_lm: bool = Field(default=True, description="false: the features readout (no Δ log p, no model)")
    scores_from: InputPath | None = Field(
        default=None,
        description="an LM score cache (JSONL) to start from, read only; null: the pools "
        "directory's lm_scores.jsonl when present (a key covers the model identity, so only "
        "matching scores are used)",
    )


class LearningRates(StrictModel):
    """The world model's learning rates per role (training and adaptation); null fields: the paper's
    LoRA-regime W1 values (opf 1e-5, readout 1e-4). Head-regime values (>= 1e-3) test whether the
    heads on cached MiniLM features were under-trained"""

    opf: float | None = Field(default=None, gt=0.0, le=1.0, description="the OPF head's learning rate")
    readout: float | None = Field(default=None, gt=0.0, le=1.0, description="the readout's learning rate")

    def train_fields(self) -> dict[str, float]:
        """The TrainConfig fields these set (``lr_opf``, ``lr_readout``; unset ones are left out)."""
        return {f"lr_{k}": v for k, v in (("opf", self.opf), ("readout", self.readout)) if v is not None}


class WorldSettings(StrictModel):
    """The predictors φ (world model, static verifier): encoder, cross-fitting, training, adaptation."""

    encoder: str = Field(
        default="minilm",
        description="minilm | tiny | lm:default (a causal LM's hidden states) | a local checkpoint path",
    )
    folds: int = Field(
        default=4, ge=3, description="K-fold cross-fitting by problem (audit, gate, train folds)"
    )
    transitions: InputPath | None = Field(
        default=None,
        description="an existing world-transitions run dir to train on (read only; relative: to the "
        "config file); null = build one",
    )
    train_pool: int = Field(
        default=0, ge=0, description="extra tasks outside the batch used only as training data"
    )
    injected_per_problem: int = Field(
        default=1, ge=0, description="training bugs injected per reference solution"
    )
    train_epochs: int = Field(default=10, ge=1)
    adapt_epochs: int = Field(default=20, ge=1)
    adapt_trainable: list[str] = Field(
        default_factory=lambda: ["opf", "readout"], description="Adapt's roles"
    )
    adapt_cost_per_row_epoch: float = Field(default=0.001, ge=0.0, description="update-compute units")
    device: str = "cpu"
    listwise: ListwiseSettings | None = Field(
        default=None, description="the listwise KL loss: null/false = off; true or {tau, weight, pool_size}"
    )
    staged: bool = Field(
        default=False,
        description="staged training of the world model: initial -> semantic (heads, then joint) -> "
        "expanded -> incumbent, train_epochs split 1/4, 1/8 + 1/8, 1/4, 1/4",
    )
    lr: LearningRates | None = Field(
        default=None,
        description="the world model's learning rates {opf, readout} (training and adaptation; the "
        "static verifier keeps the defaults); null: the paper's opf 1e-5, readout 1e-4",
    )
    lm_readout: LMReadoutSettings | None = Field(
        default=None,
        description="the LM-likelihood readout of methods lm_fixed / lm_adaptive (ReadoutPredictor): "
        "{model, pools, folds}; required by those methods",
    )

    @field_validator("listwise", mode="before")
    @classmethod
    def _listwise_switch(cls, v: Any) -> Any:
        if v is True:
            return {}
        return None if v is False else v

    @model_validator(mode="after")
    def _staged_epochs(self) -> WorldSettings:
        if self.staged and self.train_epochs < 4:
            raise ValueError(
                f"world.staged needs train_epochs >= 4 (one epoch or more per stage of initial -> "
                f"semantic -> expanded -> incumbent), got train_epochs={self.train_epochs}"
            )
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)  # recipe switches left off dump as before they existed (runs resume)
        if isinstance(data, dict):
            if data.get("listwise", 0) is None:
                data.pop("listwise")
            if data.get("staged") is False:
                data.pop("staged")
            for k in ("lr", "lm_readout"):
                if data.get(k, 0) is None:
                    data.pop(k)
        return data


class SandboxSettings(StrictModel):
    mode: Literal["required", "best_effort"] | None = Field(
        default=None,
        description="the stricter of this and $RSI_WORKBENCH_SANDBOX_MODE wins (required > best_effort); "
        "null: the environment's, else best_effort",
    )
    workers: int = Field(default=1, ge=1, description="process-pool workers for test executions")


class Config(StrictModel):
    """The code-repair experiment: tasks, methods, seeds, protocol thresholds, predictors, budgets."""

    experiment: Literal["code_repair"] = "code_repair"
    name: str = "code_repair"
    tasks: TaskSource = Field(default_factory=TaskSource)
    methods: list[Method] = Field(default_factory=lambda: list(DEFAULT_METHODS))
    seeds: list[int] = Field(default_factory=lambda: [0, 1, 2])
    baseline: Method = Field(default="static_verifier", description="paired differences are against this")
    protocol: ProtocolSettings = Field(default_factory=ProtocolSettings)
    world: WorldSettings = Field(default_factory=WorldSettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    executor: ExecutorConfig | None = Field(
        default=None, description="where test executions fan out; null: a process pool of sandbox.workers"
    )
    update_compute_budget: float = Field(default=5000.0, ge=0.0, description="update-compute units per run")
    torch_threads: int = Field(default=1, ge=1, description="fixed torch threads (determinism)")
    coder: CoderSettings | None = Field(
        default=None, description="the proposer: null = the mutation coder; or {kind: llm|hybrid, model: ...}"
    )

    @field_validator("methods")
    @classmethod
    def _unique(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v) or not v:
            raise ValueError("methods must be a non-empty list without repeats")
        return v

    @model_validator(mode="after")
    def _lm_block(self) -> Config:
        lm = sorted(LM_METHODS & set(self.methods))
        if lm and self.world.lm_readout is None:
            raise ValueError(
                f"methods {lm} need world.lm_readout (a block with the readout's pools: and model:)"
            )
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = omit_unset_executor(handler(self))  # configs without the block dump as they always did
        if isinstance(data, dict) and data.get("coder", 0) is None:
            data.pop("coder")  # likewise the coder block
        return data


def executor_spec(config: Config) -> ExecutorConfig:
    """The executor block a config means: its own, or the older ``sandbox.workers`` shape (a process
    pool of that many workers, serial for one); a block's unset ``workers`` is ``sandbox.workers``.
    On Ray, an unset ``num_gpus`` is 1 when the config puts a heavy step on CUDA (:func:`wants_gpu`),
    so those tasks are scheduled where a GPU is; small tasks never hold one."""
    if config.executor is not None:
        spec = resolve_executor(config.executor, config.sandbox.workers)
        if spec.kind == "ray" and spec.num_gpus is None and wants_gpu(config):
            spec = spec.model_copy(update={"num_gpus": 1.0})
        return spec
    w = config.sandbox.workers
    return ExecutorConfig(kind="process" if w > 1 else "serial", workers=w)


def wants_gpu(config: Config) -> bool:
    """Whether a heavy step of the experiment names CUDA: the model coder on the local ``transformers``
    backend with ``device: cuda`` (generation), or ``world.device: cuda`` (φ training, adaptation).
    ``device: auto`` asks for no GPU (it uses one a worker happens to see); a served model
    (``backend: openai``) holds its own."""
    if config.world.device.startswith("cuda"):
        return True
    c = config.coder
    return c is not None and uses_model(c) and c.model.backend == "transformers" and c.model.device == "cuda"


def load_tasks(src: TaskSource) -> list[Any]:
    """Load the task batch named by the config (any file in the task format runs unchanged)."""
    from rsi_workbench.domains.code_repair import load_humanevalfix, load_task_file

    tasks = load_task_file(src.path) if src.path else load_humanevalfix()
    if src.ids:
        known = {t.task_id: t for t in tasks}
        missing = [i for i in src.ids if i not in known]
        if missing:
            raise ValueError(
                f"tasks.ids: unknown task ids {missing[:5]} (source: {src.path or 'HumanEvalFix'})"
            )
        tasks = [known[i] for i in src.ids]
    if src.limit is not None:
        tasks = tasks[: src.limit]
    return tasks


def deterministic_torch(threads: int) -> None:
    """Fixed torch threads and deterministic algorithms, so a resumed run repeats the same numbers."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a declared extra
        return
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True, warn_only=True)


def method_settings(base: ProtocolSettings, method: str) -> ProtocolSettings:
    """The protocol settings of one method: its selection rule and whether adaptation is on."""
    rule = {"random_k": "random_k", "info_gain": "info_gain"}.get(method, "utility_argmax")
    adapt = base.adaptation.model_copy(update={"enabled": method in ("world_adaptive", "lm_adaptive")})
    return base.model_copy(update={"rule": rule, "adaptation": adapt})


EXTENSIBLE = frozenset({"seeds", "methods"})  # the fields `--extend` may grow; all others must match


def stored_config(path: str | Path) -> Config:
    """The experiment's config as it stands now: ``config.json`` (frozen at creation) with the seeds
    and methods of its latest ``experiment_extended`` event."""
    import json

    from rsi_workbench.records import Run, pin_config_additions

    path = Path(path)
    cfg = Config.model_validate(pin_config_additions(json.loads((path / "config.json").read_text()), Config))
    ext = Run.open(path).events("experiment_extended")
    if ext:
        cfg = cfg.model_copy(update={k: ext[-1].payload[k] for k in EXTENSIBLE})
    return cfg


def _extension(stored: Config, config: Config, path: Path) -> dict[str, Any] | None:
    """What ``config`` adds to the stored experiment (None: nothing), or a RunError when it differs
    in anything but added seeds and methods."""
    from rsi_workbench.records import RunError

    a, b = stored.model_dump(mode="json"), config.model_dump(mode="json")
    changed = sorted(k for k in a if k not in EXTENSIBLE and a[k] != b[k])
    if changed:
        raise RunError(
            f"{path}: --extend only adds seeds or methods; the config also changes {changed} "
            "(start a new experiment for that)"
        )
    dropped = {k: sorted(set(a[k]) - set(b[k])) for k in EXTENSIBLE if set(a[k]) - set(b[k])}
    if dropped:
        raise RunError(f"{path}: --extend keeps every finished run; the config drops {dropped}")
    added = {f"added_{k}": [x for x in b[k] if x not in a[k]] for k in sorted(EXTENSIBLE)}
    if not any(added.values()):
        return None
    return {"seeds": b["seeds"], "methods": b["methods"], **added}


def run_experiment(config: Config, out: Path, *, resume: bool = False, extend: bool = False) -> Path:
    """Run (or resume, or extend with more seeds or methods) every (method, seed) run of the experiment."""
    from tqdm.auto import tqdm

    from rsi_workbench.domains.code_repair import Sandbox
    from rsi_workbench.execute import make_executor

    out = Path(out)
    tasks = load_tasks(config.tasks)  # fails before any directory is made
    if not tasks:
        raise ValueError("the task source holds no tasks")
    sandbox = Sandbox(config.sandbox.mode)
    started = _started(out)
    failing = started.get("failing_reference", []) if started else _failing_references(config, sandbox, tasks)
    exp = _open_experiment(out, config, resume=resume, extend=extend)
    deterministic_torch(config.torch_threads)
    cache = ExecutionCache(out / "exec_cache.jsonl")
    t0 = time.time()
    done = {e.payload["run"] for e in exp.events("run_finished")}
    where = executor_spec(config)
    with make_executor(where) as ex:
        fan_out = where.kind == "ray" or (where.kind == "process" and where.workers != 1)
        env = CodeRepairEnvironment(tasks, sandbox, executor=ex if fan_out else None, cache=cache)
        if not exp.events("experiment_started"):
            exp.append(
                "experiment_started",
                {
                    "tasks": [t.task_id for t in tasks],
                    "methods": config.methods,
                    "seeds": config.seeds,
                    "sandbox": sandbox.isolation_record(),  # the isolation achieved and the effective mode
                    "failing_reference": failing,
                },
            )
            exp.commit()
        jobs = [(m, s) for s in config.seeds for m in config.methods]
        ran = any(f"{m}-seed{s}" not in done for m, s in jobs)
        if where.kind == "ray":  # runs (a model coder: seed groups) as Ray tasks (experiment-level fan-out)
            from rsi_workbench.experiments.code_repair.fanout import run_fanned_out

            pending = [(m, s) for m, s in jobs if f"{m}-seed{s}" not in done]
            run_fanned_out(config, out, tasks, env, exp, pending, ex)
            jobs = []
        bar = tqdm(jobs, desc="code-repair runs", unit="run")
        for method, seed in bar:
            name = f"{method}-seed{seed}"
            bar.set_postfix_str(name)
            if name in done:
                continue
            t_setup = time.time()
            predictor = build_predictor(config, method, seed, tasks, env, out)
            t1 = time.time()
            path = out / "runs" / name
            spec = make_spec(config, env, tasks, predictor, method, seed=seed, out=out)
            run = _open_or_create(
                path, config, {"method": method, "seed": seed}, kind="code_repair_run", resume=True
            )
            with run:
                loop = Loop.open(
                    spec, run, method_settings(config.protocol, method), seed=seed, progress=True
                )
                loop.run()
            close_coder(spec)
            save_features()
            exp.append(
                "run_finished",
                {
                    "run": name,
                    "method": method,
                    "seed": seed,
                    "wall_s": time.time() - t1,
                    "predictor_s": t1 - t_setup,  # training or loading φ_0 (0-ish when reused)
                    **finished_children(config, out, name, seed),
                },
            )
            exp.commit()
    if ran or not exp.events("experiment_finished"):  # a no-op resume records no session
        exp.append("experiment_finished", {"wall_s": time.time() - t0})
        exp.commit()
    exp.close()
    return out


CHILD_RUN_EVENTS = ("run_finished",)  # the experiment's events that finish a child run (records.children)


def finished_children(config: Config, out: Path, name: str, seed: int) -> dict[str, Any]:
    """The ``child_runs`` of a ``run_finished``: the fingerprint of ``runs/<name>`` and, with a model
    coder, of the seed's record of coder calls so far (it grows with the seed's later methods)."""
    from rsi_workbench.records import child_runs

    coder = [coder_run_path(out, seed)] if uses_model(config.coder) else []
    return child_runs(out, out / "runs" / name, grows=[p for p in coder if has_events(p)])


def _open_experiment(out: Path, config: Config, *, resume: bool, extend: bool) -> Run:
    """The experiment run: created, re-opened (resume: the same config), or extended (``extend``: the
    stored config plus seeds or methods, recorded as an ``experiment_extended`` event)."""
    from rsi_workbench.records import RunError

    if not extend:
        return _open_or_create(out, config, {}, kind="code_repair_experiment", resume=resume)
    if not (out / "config.json").exists():
        raise RunError(f"{out}: --extend needs an existing experiment directory (none here)")
    added = _extension(stored_config(out), config, out)
    exp = Run.open(out, mode="a")
    if added is not None:
        exp.append("experiment_extended", added)
        exp.commit()
    return exp


def _started(out: Path) -> dict[str, Any] | None:
    """The ``experiment_started`` payload of an existing experiment directory (None: not started)."""
    if not has_events(out):  # plain or compacted
        return None
    ev = Run.open(out).events("experiment_started")
    return ev[0].payload if ev else None


def _failing_references(config: Config, sandbox: Any, tasks: list[Any]) -> list[str]:
    """Task-file tasks whose reference fails one of its own tests (public or hidden), checked before
    any directory is made: refused unless ``tasks.allow_failing_reference``; the report counts them
    apart. HumanEvalFix (no ``tasks.path``) is not re-checked."""
    if config.tasks.path is None:
        return []
    from rsi_workbench.config import ConfigError

    env = CodeRepairEnvironment(tasks, sandbox)  # its own in-memory cache: the experiment's stays as it was

    failing = [
        t.task_id
        for t in tasks
        if t.reference is not None
        and any(
            o.status.value != "AC"
            for suite in ("public", "hidden")
            for o in env.run(t.task_id, [t.reference], suite)[0]
        )
    ]
    if failing and not config.tasks.allow_failing_reference:
        raise ConfigError(
            f"{config.tasks.path}: {len(failing)} task(s) whose reference fails its own tests: "
            f"{', '.join(failing)} (see `rsi-workbench tasks validate --run {config.tasks.path}`; "
            "set tasks.allow_failing_reference: true to run them anyway, reported apart)",
            file=config.tasks.path,
        )
    return failing


def _open_or_create(path: Path, config: Config, extra: dict[str, Any], *, kind: str, resume: bool) -> Run:
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
    from rsi_workbench.experiments.code_repair.predictor import load_predictor_bytes

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
    """φ_0 of a method: none for Random-K, the static verifier, or the cross-fitted world model."""
    if method == "random_k":
        return None
    if method in LM_METHODS:
        from rsi_workbench.experiments.code_repair.lm_protocol import lm_readout_predictor

        return lm_readout_predictor(config, seed, tasks, out)
    from rsi_workbench.experiments.code_repair.predictor import trained_predictor

    kind = "static_verifier" if method == "static_verifier" else "world_model"
    return trained_predictor(config, kind, seed, tasks, env, out)
