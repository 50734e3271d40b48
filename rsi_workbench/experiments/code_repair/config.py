"""The code-repair experiment's config (``experiment: code_repair``): the methods compared, the
seeds, and the settings blocks of its components (tasks, protocol, the predictors' ``world:``, the
sandbox, the executor, the coder). Fields and defaults are those every stored ``config.json`` holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, field_validator, model_serializer, model_validator

from rsi_workbench.config import StrictModel
from rsi_workbench.domains.code_repair.coder_settings import CoderSettings, uses_model
from rsi_workbench.domains.code_repair.task_source import TaskSource
from rsi_workbench.domains.code_repair.world_settings import WorldSettings
from rsi_workbench.execute import ExecutorConfig, omit_unset_executor, resolve_executor
from rsi_workbench.protocol.loop import ProtocolSettings

Method = Literal[
    "random_k",
    "coder_prior",
    "static_verifier",
    "world_fixed",
    "world_adaptive",
    "info_gain",
    "lm_fixed",
    "lm_adaptive",
    "features_fixed",
    "features_adaptive",
    "features_oracle",
]
LM_METHODS = frozenset({"lm_fixed", "lm_adaptive"})  # the LM readout (world.lm_readout) as φ
# the features readout (world.lm_readout with use_lm: false): trained on the block's train_on (fixed,
# adaptive) or on its pools, HumanEvalFix's own bugs (oracle: the in-distribution φ*)
FEATURE_METHODS = frozenset({"features_fixed", "features_adaptive", "features_oracle"})
NO_MINILM = frozenset({"random_k", "coder_prior"}) | LM_METHODS | FEATURE_METHODS  # no MiniLM φ to train
ADAPTIVE_METHODS = frozenset({"world_adaptive", "lm_adaptive", "features_adaptive"})
DEFAULT_METHODS: tuple[Method, ...] = ("random_k", "static_verifier", "world_fixed", "world_adaptive")
METHOD_LABELS: dict[str, str] = {
    "random_k": "Random-K (random one of K)",
    "coder_prior": "the coder's own top-weighted candidate (no world model)",
    "static_verifier": "capacity-matched static verifier",
    "world_fixed": "RSI-Anything + fixed world model",
    "world_adaptive": "RSI-Anything + world-model adaptation",
    "info_gain": "information-gain acquisition (not utility ranking)",
    "lm_fixed": "RSI-Anything + fixed LM-likelihood readout",
    "lm_adaptive": "RSI-Anything + LM-likelihood readout adaptation",
    "features_fixed": "RSI-Anything + fixed features readout (world.lm_readout.train_on)",
    "features_adaptive": "RSI-Anything + features readout adaptation (eqs. 10-18)",
    "features_oracle": "features readout trained in distribution (the pools; fixed)",
}


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
        lm = sorted((LM_METHODS | FEATURE_METHODS) & set(self.methods))
        if lm and self.world.lm_readout is None:
            raise ValueError(
                f"methods {lm} need world.lm_readout (a block with the readout's pools: and model:)"
            )
        r = self.world.lm_readout
        if r is not None and r.train_on == "injected" and r.use_lm and LM_METHODS & set(self.methods):
            raise ValueError(
                "world.lm_readout.train_on: injected trains the features readout only: methods "
                f"{sorted(LM_METHODS & set(self.methods))} need use_lm: false there (or use features_*)"
            )
        return self

    @model_validator(mode="after")
    def _one_rule_source(self) -> Config:
        """Each method sets its own selection rule (:func:`.runs.method_settings`), so a non-default
        ``protocol.rule`` would be silently overridden by ``methods`` (given or default): refused.
        Stored configs carry the default rule, so they validate (and resume) as before."""
        default = ProtocolSettings.model_fields["rule"].default
        if self.protocol.rule != default:
            raise ValueError(
                f"protocol.rule: {self.protocol.rule!r} with methods {self.methods}: in code repair each "
                "method sets its own selection rule (random_k: random_k, info_gain: info_gain, the others: "
                f"{default}); drop protocol.rule and choose the rule through methods"
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


__all__ = [
    "ADAPTIVE_METHODS",
    "DEFAULT_METHODS",
    "EXTENSIBLE",
    "FEATURE_METHODS",
    "LM_METHODS",
    "METHOD_LABELS",
    "NO_MINILM",
    "Config",
    "Method",
    "SandboxSettings",
    "executor_spec",
    "stored_config",
    "wants_gpu",
]
