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

CHUNKS_PER_WORKER = 4  # map: about this many chunks (Ray tasks) per worker, fewer items or not


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
        raises is not retried), so ``fn`` must be idempotent: it resumes its own run directory. A GPU
        request the cluster cannot meet (fewer GPUs in all than one task asks for) is an error
        naming the address, not a task that waits forever."""
        opts = self.task_options(heavy=True)
        if opts.get("num_gpus"):
            have = float(self._ray.cluster_resources().get("GPU", 0.0))
            if have < opts["num_gpus"]:
                raise RuntimeError(
                    f"each {_task_name(fn)} task asks for num_gpus={opts['num_gpus']:g} but the Ray "
                    f"cluster at {self.spec.address or '(local instance)'!r} has {have:g} GPU(s): "
                    "start a node with GPUs (ray start ... --num-gpus=N) or leave num_gpus unset "
                    "(and the model block's device off cuda)"
                )
        rf = self._ray.remote(_call).options(
            name=_task_name(fn), max_retries=max_retries, retry_exceptions=False, **opts
        )
        return self._gather(fn, [rf.remote(fn, *args) for args in calls])

    def _remote(self, fn: Callable[..., Any], *, chunked: bool = False) -> Any:
        name = _task_name(fn)
        rf = self._remotes.get(name + "[]" * chunked)
        if rf is None:
            body = _call_chunk if chunked else _call
            rf = self._remotes[name + "[]" * chunked] = self._ray.remote(body).options(
                name=name, **self._opts
            )
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

    def map(self, fn: Callable[[T], R], items: Iterable[T], *, chunksize: int | None = None) -> Iterator[R]:
        """``fn`` over ``items``, all submitted now (like ``ProcessPoolExecutor.map``), results in item
        order. Items travel in chunks, one Ray task each: a task's round trip costs a few ms, paid
        once per chunk; the default size gives each worker about :data:`CHUNKS_PER_WORKER` chunks
        (one item per task when there are few items). ``fn`` is put in the object store once. Items
        before a failed one are still yielded, then its error, naming the item; a chunk whose worker
        dies is retried whole by Ray, so ``fn`` must be idempotent (as for the process pool)."""
        xs = list(items)
        size = chunksize or -(-len(xs) // (CHUNKS_PER_WORKER * self.workers)) or 1
        if size == 1:
            rf = self._remote(fn)
            return self._gather(fn, [rf.remote(fn, x) for x in xs])
        rc, fref = self._remote(fn, chunked=True), self._ray.put(fn)
        refs = [rc.remote(fref, xs[i : i + size], i) for i in range(0, len(xs), size)]
        return self._gather_chunks(fn, refs, size)

    def _gather(self, fn: Callable[..., Any], refs: list[Any]) -> Iterator[Any]:
        for i, ref in enumerate(refs):
            try:
                yield self._ray.get(ref)
            except BaseException as e:
                for r in refs[i + 1 :]:
                    self._ray.cancel(r)
                raise _with_task(e, fn, i) from None

    def _gather_chunks(self, fn: Callable[..., Any], refs: list[Any], size: int) -> Iterator[Any]:
        for c, ref in enumerate(refs):
            try:
                part = self._ray.get(ref)
            except BaseException as e:
                for r in refs[c + 1 :]:
                    self._ray.cancel(r)
                done = getattr(e, "rsi_chunk_done", None)  # Ray's error reads the cause's attributes
                yield from done or ()
                item = c * size + (len(done) if done is not None else 0)
                raise _with_task(e, fn, item, exact=done is not None) from None
            yield from part

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


def _call_chunk(fn: Callable[[T], R], items: list[T], start: int) -> list[R]:
    """Runs on a Ray worker: ``fn`` over one chunk of a map. A failing item's exception carries the
    results before it (``rsi_chunk_done``), so the driver yields them before raising."""
    out: list[R] = []
    for x in items:
        try:
            out.append(fn(x))
        except BaseException as e:
            with contextlib.suppress(AttributeError, TypeError):  # e.g. an exception with __slots__
                e.rsi_chunk_done = out  # type: ignore[attr-defined]
            raise
    return out


def _task_name(fn: Callable[..., Any]) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def _with_task(
    e: BaseException, fn: Callable[..., Any], index: int | None, *, exact: bool = True
) -> BaseException:
    """Ray's error for a failed task (an instance of the task's own exception type, carrying the
    remote traceback), with a note naming the function and the item so the driver says which failed
    (``exact=False``: the first item of the chunk that failed)."""
    item = (
        "" if index is None else f" (item {index} of map)" if exact else f" (chunk from item {index} of map)"
    )
    where = f"Ray task {_task_name(fn)}{item}"
    e.add_note(f"raised in {where}")
    return e


__all__ = ["RayExecutor", "import_ray", "stop_own_ray_daemons"]
