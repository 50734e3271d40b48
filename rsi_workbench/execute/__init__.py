"""Executor seam: ``concurrent.futures``-style backends that fan work out and bring results back.

Results always come back to the one driver process, which alone appends events. Backends:
``serial`` (in-process, deterministic order, easiest to debug), ``process`` (a process pool) and
``ray`` (Ray tasks on a local instance or a cluster: :mod:`rsi_workbench.execute.ray_backend`). An
experiment config names one with an :class:`~rsi_workbench.execute.config.ExecutorConfig` block.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from rsi_workbench.execute.config import (
    EXECUTOR_KINDS,
    ExecutorConfig,
    ExecutorKind,
    omit_unset_executor,
    resolve_executor,
)

if TYPE_CHECKING:
    from rsi_workbench.execute.ray_backend import RayExecutor

T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol):
    """What every backend offers (a subset of :class:`concurrent.futures.Executor`)."""

    workers: int

    def submit(self, fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> cf.Future[R]: ...

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]: ...

    def shutdown(self, wait: bool = True) -> None: ...

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc: object) -> None: ...


class SerialExecutor:
    """Runs each call immediately in this process; futures are already resolved."""

    workers = 1

    def submit(self, fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> cf.Future[R]:
        fut: cf.Future[R] = cf.Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as e:  # noqa: BLE001 - delivered through the future like a pool would
            fut.set_exception(e)
        return fut

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        return (fn(x) for x in items)

    def shutdown(self, wait: bool = True) -> None:
        return None

    def __enter__(self) -> SerialExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


class ProcessExecutor:
    """A process pool (``spawn``-safe functions only: module-level, picklable arguments)."""

    def __init__(self, workers: int | None = None, *, mp_context: str = "forkserver"):
        import multiprocessing as mp

        self.workers = workers or max(1, (os.cpu_count() or 1))
        self._pool = cf.ProcessPoolExecutor(max_workers=self.workers, mp_context=mp.get_context(mp_context))

    def submit(self, fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> cf.Future[R]:
        return self._pool.submit(fn, *args, **kwargs)

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        return self._pool.map(fn, items)

    def shutdown(self, wait: bool = True) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=not wait)

    def __enter__(self) -> ProcessExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


def make_executor(kind: ExecutorKind | ExecutorConfig = "serial", workers: int | None = None) -> Executor:
    """Build a backend from a kind name (``serial``, ``process``, ``ray``) or an executor block;
    ``workers`` fills a block's unset ``workers``. A one-worker process pool is the serial backend."""
    if isinstance(kind, str) and kind not in EXECUTOR_KINDS:
        raise ValueError(f"unknown executor {kind!r}; allowed: {', '.join(repr(k) for k in EXECUTOR_KINDS)}")
    spec = resolve_executor(kind, workers)
    if spec.kind == "serial" or (spec.kind == "process" and spec.workers == 1):
        return SerialExecutor()
    if spec.kind == "process":
        return ProcessExecutor(spec.workers)
    from rsi_workbench.execute.ray_backend import RayExecutor

    return RayExecutor(spec)


def __getattr__(name: str) -> Any:
    if name == "RayExecutor":  # lazily: importing the seam never imports Ray
        from rsi_workbench.execute.ray_backend import RayExecutor

        return RayExecutor
    raise AttributeError(name)


__all__ = [
    "EXECUTOR_KINDS",
    "Executor",
    "ExecutorConfig",
    "ExecutorKind",
    "ProcessExecutor",
    "RayExecutor",
    "SerialExecutor",
    "make_executor",
    "omit_unset_executor",
    "resolve_executor",
]
