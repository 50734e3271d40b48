"""Ray backend: the same functions as the process pool, as Ray tasks on a local instance or a cluster.

Results (and exceptions) come back to the driver, which alone appends events; tasks never touch a
run's event log. ``address: null`` starts a local instance (and shuts it down on :meth:`shutdown`),
``auto`` joins a running cluster, ``ray://host:port`` goes through Ray Client. If Ray is already
initialised in this process (a notebook, a test fixture) the executor uses it and leaves it running.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import os
import signal
import socket
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from rsi_workbench.execute.config import ExecutorConfig

T = TypeVar("T")
R = TypeVar("R")


def import_ray(address: str | None = None) -> Any:
    """``import ray`` with an error naming the extra (and ``ray[client]`` for ``ray://`` addresses)."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    # a local node's raylet registers with the GCS in 30 s by default; on a loaded host it may not
    os.environ.setdefault("RAY_raylet_start_wait_time_s", "120")
    try:
        import ray
    except ImportError as e:
        raise ImportError(
            'the ray executor needs Ray: pip install "rsi-workbench[ray]" (or pip install "ray>=2.9")'
        ) from e
    if address is not None and address.startswith("ray://"):
        try:
            import grpc  # noqa: F401 - Ray Client's transport, only in ray[client]
        except ImportError as e:
            raise ImportError(
                f'address {address!r} uses Ray Client, which needs pip install "ray[client]>=2.9"'
            ) from e
    return ray


class RayExecutor:
    """Ray tasks behind the :class:`~rsi_workbench.execute.Executor` interface (order-preserving map)."""

    def __init__(self, spec: ExecutorConfig):
        ray = self._ray = import_ray(spec.address)
        self.spec = spec
        self._started = False
        if spec.address not in (None, "auto", "local"):
            _check_reachable(spec.address)  # also when Ray already runs here: never a silent other cluster
        if not ray.is_initialized():
            kw: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            # a local node's start can time out on a loaded machine (its agents get 15 s): one retry
            for attempt in (1, 2) if spec.address is None else (2,):
                try:
                    if spec.address is None:
                        ray.init(num_cpus=spec.workers or os.cpu_count() or 1, **kw)
                    else:
                        ray.init(address=spec.address, **kw)
                    break
                except Exception as e:
                    ray.shutdown()
                    stop_own_ray_daemons()
                    if attempt == 2:
                        where = spec.address or "(local instance)"
                        raise ConnectionError(
                            f"could not start or reach Ray at address {where!r}: {e}"
                        ) from e
            self._started = True
        self.workers = max(1, int(ray.cluster_resources().get("CPU", spec.workers or 1)))
        self._opts = self.task_options(heavy=False)
        self._remotes: dict[str, Any] = {}

    def task_options(self, *, heavy: bool) -> dict[str, Any]:
        """Ray options of a task: ``num_cpus`` and ``resources`` for every task, ``num_gpus`` only for
        heavy ones (a whole run, predictor training): many small tasks (a sandbox test execution, a
        replay score) never hold a GPU."""
        spec, opts = self.spec, dict[str, Any]()
        if spec.num_cpus is not None:
            opts["num_cpus"] = spec.num_cpus
        if heavy and spec.num_gpus is not None:
            opts["num_gpus"] = spec.num_gpus
        if spec.resources:
            opts["resources"] = dict(spec.resources)
        return opts

    def run_tasks(
        self, fn: Callable[..., R], calls: Iterable[tuple[Any, ...]], *, max_retries: int = 3
    ) -> Iterator[R]:
        """Experiment-level fan-out: one heavy task per argument tuple (a (method, seed) run, a dreaming
        arm), all submitted now, results in call order. A task whose worker process or node dies is
        retried up to ``max_retries`` times (Ray's system-failure retries; an exception the task
        raises is not retried), so ``fn`` must be idempotent: it resumes its own run directory."""
        rf = self._ray.remote(_call).options(
            name=_task_name(fn),
            max_retries=max_retries,
            retry_exceptions=False,
            **self.task_options(heavy=True),
        )
        return self._gather(fn, [rf.remote(fn, *args) for args in calls])

    def _remote(self, fn: Callable[..., Any]) -> Any:
        name = _task_name(fn)
        rf = self._remotes.get(name)
        if rf is None:
            rf = self._remotes[name] = self._ray.remote(_call).options(name=name, **self._opts)
        return rf

    def submit(self, fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> cf.Future[R]:
        ref = self._remote(fn).remote(fn, *args, **kwargs)
        fut: cf.Future[R] = cf.Future()

        def done(_: Any) -> None:
            try:
                fut.set_result(self._ray.get(ref))
            except BaseException as e:  # noqa: BLE001 - delivered through the future like a pool would
                fut.set_exception(_with_task(e, fn, None))

        ref.future().add_done_callback(done)
        return fut

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        rf = self._remote(fn)
        refs = [rf.remote(fn, x) for x in items]  # all submitted now, like ProcessPoolExecutor.map
        return self._gather(fn, refs)

    def _gather(self, fn: Callable[..., Any], refs: list[Any]) -> Iterator[Any]:
        for i, ref in enumerate(refs):
            try:
                yield self._ray.get(ref)
            except BaseException as e:
                for r in refs[i + 1 :]:
                    self._ray.cancel(r)
                raise _with_task(e, fn, i) from None

    def shutdown(self, wait: bool = True) -> None:
        if self._started and self._ray.is_initialized():
            self._ray.shutdown()
        self._started = False

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


def stop_own_ray_daemons() -> int:
    """After a failed local start Ray leaves the daemons it had started (GCS, monitor, dashboard) running
    until this process exits; stop those that are this process's children. Returns how many."""
    me, n = os.getpid(), 0
    for d in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        try:
            stat = (d / "stat").read_text()
            ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
            cmd = (d / "cmdline").read_bytes() if ppid == me else b""
        except (OSError, ValueError):
            continue
        if b"/ray/" in cmd:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(d.name), signal.SIGTERM)
                n += 1
    return n


def _check_reachable(address: str) -> None:
    """Fail fast with the address in the message (``ray.init`` retries an unreachable GCS for minutes)."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=10).close()
    except OSError as e:
        raise ConnectionError(f"cannot reach the Ray cluster at {address!r}: {e}") from e


def _call(fn: Callable[..., R], *args: Any, **kwargs: Any) -> R:
    """Runs on a Ray worker: ``fn`` travels as an argument (cloudpickle), so any picklable callable works."""
    return fn(*args, **kwargs)


def _task_name(fn: Callable[..., Any]) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def _with_task(e: BaseException, fn: Callable[..., Any], index: int | None) -> BaseException:
    """Ray's error for a failed task (an instance of the task's own exception type, carrying the
    remote traceback), with a note naming the function and the item so the driver says which failed."""
    where = f"Ray task {_task_name(fn)}" + ("" if index is None else f" (item {index} of map)")
    e.add_note(f"raised in {where}")
    return e


__all__ = ["RayExecutor", "import_ray", "stop_own_ray_daemons"]
