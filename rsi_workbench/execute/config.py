"""The one executor block every experiment config accepts, and how the older shapes map onto it.

``executor: {kind: serial|process|ray, workers, address, num_cpus, num_gpus, resources}``. Configs
written before the block existed (``executor: process`` plus ``workers:`` in dreaming and discovery,
``sandbox: {workers: N}`` in code repair, nothing in reactions) still validate and mean what they
meant; :func:`omit_unset_executor` keeps their dumped ``config.json`` identical, so old runs resume.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

ExecutorKind = Literal["serial", "process", "ray"]
EXECUTOR_KINDS: tuple[str, ...] = ("serial", "process", "ray")
_ADDRESS = re.compile(r"^(auto|local|ray://[^\s:/]+:\d+|[^\s:/]+:\d+)$")


class ExecutorConfig(BaseModel):
    """Where an experiment's fan-out (sandbox tests, attempts, cohorts, executions) runs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: ExecutorKind = "serial"
    workers: int | None = Field(
        default=None,
        ge=1,
        description="process: pool size; ray with address null: CPUs of the local instance "
        "(null: the experiment's older setting, else all cores)",
    )
    address: str | None = Field(
        default=None,
        description="ray only: null starts a local instance, 'auto' joins a running cluster, "
        "'ray://host:port' connects through Ray Client (needs ray[client])",
    )
    num_cpus: float | None = Field(
        default=None, gt=0, description="ray only: CPUs per task (Ray's default 1)"
    )
    num_gpus: float | None = Field(default=None, ge=0, description="ray only: GPUs per task")
    resources: dict[str, float] = Field(
        default_factory=dict, description="ray only: custom resources per task, e.g. {sandbox: 1}"
    )

    @model_validator(mode="after")
    def _check(self) -> ExecutorConfig:
        if self.address is not None and not _ADDRESS.match(self.address):
            raise ValueError(
                f"address {self.address!r}: allowed null, 'auto', 'ray://host:port' or 'host:port'"
            )
        if self.kind != "ray":
            given = [k for k in ("address", "num_cpus", "num_gpus") if getattr(self, k) is not None] + (
                ["resources"] if self.resources else []
            )
            if given:
                raise ValueError(f"{', '.join(given)} apply to kind 'ray' only (kind is {self.kind!r})")
        return self


def resolve_executor(spec: str | ExecutorConfig, workers: int | None = None) -> ExecutorConfig:
    """The block for ``spec``: a kind name (the old shape, with its ``workers``) or a block whose
    unset ``workers`` falls back to ``workers``."""
    if isinstance(spec, ExecutorConfig):
        return (
            spec
            if spec.workers is not None or workers is None
            else spec.model_copy(update={"workers": workers})
        )
    if spec not in EXECUTOR_KINDS:
        raise ValueError(f"unknown executor {spec!r}; allowed: {', '.join(repr(k) for k in EXECUTOR_KINDS)}")
    return ExecutorConfig(kind=spec, workers=workers)  # type: ignore[arg-type]


def omit_unset_executor(data: Any) -> Any:
    """A dumped config without ``executor: null``, so configs that never gave the block dump exactly as
    they did before it existed (their runs' ``config.json`` stays equal and they resume)."""
    if isinstance(data, dict) and "executor" in data and data["executor"] is None:
        data = {k: v for k, v in data.items() if k != "executor"}
    return data


__all__ = ["EXECUTOR_KINDS", "ExecutorConfig", "ExecutorKind", "omit_unset_executor", "resolve_executor"]
