"""Work done concurrently, recorded in a fixed order: the records of a phase of parallel items.

:func:`ordered_map` runs ``fn`` over items in threads. While an item runs, every
:meth:`Run.append <rsi_workbench.records.run.Run.append>` made from its thread (on any run: the
loop's, a model recorder's) is **deferred** into that item's buffer instead of written;
:meth:`Deferred.flush` later writes a buffer's events, in the order they were appended, so the
events of item 0 come before those of item 1 whatever order the threads finished in. A deferred
append returns an :class:`~rsi_workbench.records.events.Event` with ``seq = -1`` (not yet written);
callers that need a written event's sequence number do not run inside a phase.

Items run in consecutive **groups** of at most ``workers`` (one thread each, all started together)
on one long-lived pool of threads that lasts as long as the process. A thread that exits would take
with it every process it started with a parent-death signal: bubblewrap's ``--die-with-parent``
(PR_SET_PDEATHSIG) fires when the starting *thread* exits, so a sandbox judge kept for reuse would
be killed while another thread uses it.
Each item knows its :class:`Slot` (:func:`current_slot`): its index and its group, which offers a
deterministic **lockstep** (:meth:`Group.gather`): calls wait until every unfinished item of the
group waits too, then each channel's requests run as one batch in item order. A backend uses it to
batch several items' requests into one call with a composition that does not depend on timing
(the local backend's ``batch_across_tasks``).
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Hashable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


@dataclass
class Deferred:
    """The appends of one item, held back: ``(run, kind, payload, cycle)`` in append order."""

    entries: list[tuple[Any, str, dict[str, Any], int | None]] = field(default_factory=list)

    def flush(self) -> int:
        """Write the held events to their runs, in order; returns how many were written."""
        n = 0
        for run, kind, payload, cycle in self.entries:
            run.append(kind, payload, cycle=cycle)
            n += 1
        self.entries.clear()
        return n


_DEFERRED: contextvars.ContextVar[Deferred | None] = contextvars.ContextVar("rsi_deferred", default=None)
_SLOT: contextvars.ContextVar[Slot | None] = contextvars.ContextVar("rsi_slot", default=None)


def deferred_buffer() -> Deferred | None:
    """The buffer this thread's appends go to, or None when appends are written at once."""
    return _DEFERRED.get()


@contextmanager
def deferring(buf: Deferred) -> Iterator[Deferred]:
    """Within the block, this thread's run appends go to ``buf``."""
    tok = _DEFERRED.set(buf)
    try:
        yield buf
    finally:
        _DEFERRED.reset(tok)


class Group:
    """The items of one group of a phase, and their lockstep (:meth:`gather`)."""

    def __init__(self, indices: Sequence[int]):
        self._cv = threading.Condition()
        self._present = set(indices)
        self._waiting: dict[int, tuple[Hashable, Any]] = {}
        self._results: dict[int, tuple[bool, Any]] = {}
        self._batch: dict[Hashable, Callable[[list[Any]], list[Any]]] = {}
        self.batches: list[tuple[Hashable, list[int]]] = []  # (channel, item indices) per batch run

    def leave(self, index: int) -> None:
        with self._cv:
            self._present.discard(index)
            self._fire_if_ready()
            self._cv.notify_all()

    def gather(
        self, index: int, channel: Hashable, request: Any, run: Callable[[list[Any]], list[Any]]
    ) -> Any:
        """Wait until every unfinished item of the group waits in a ``gather``; then each channel's
        requests go to its ``run`` as one list in item order (channels in the order of their first
        item), and each caller gets its own result back (or its batch's exception). An item that
        has left the lockstep (:meth:`leave`) runs its request alone, at once."""
        with self._cv:
            if index not in self._present:
                alone = True
            else:
                alone = False
                self._waiting[index] = (channel, request)
            if not alone:
                self._batch.setdefault(channel, run)
                self._fire_if_ready()
                self._cv.notify_all()
                while index not in self._results:
                    self._cv.wait()
                ok, value = self._results.pop(index)
        if alone:
            outs = run([request])
            if len(outs) != 1:
                raise RuntimeError(f"a lockstep batch returned {len(outs)} results for 1 request")
            return outs[0]
        if not ok:
            raise value
        return value

    def _fire_if_ready(self) -> None:
        if not self._waiting or set(self._waiting) != self._present:
            return
        order = sorted(self._waiting)
        channels: dict[Hashable, list[int]] = {}
        for i in order:
            channels.setdefault(self._waiting[i][0], []).append(i)
        waiting, self._waiting = self._waiting, {}
        for ch, idx in channels.items():  # run under the lock: every member is waiting anyway
            run = self._batch.pop(ch)
            self.batches.append((ch, idx))
            try:
                outs = run([waiting[i][1] for i in idx])
                if len(outs) != len(idx):
                    raise RuntimeError(
                        f"a lockstep batch returned {len(outs)} results for {len(idx)} requests"
                    )
                for i, o in zip(idx, outs, strict=True):
                    self._results[i] = (True, o)
            except BaseException as e:  # noqa: BLE001 - delivered to every member of the batch
                for i in idx:
                    self._results[i] = (False, e)


@dataclass(frozen=True)
class Slot:
    """An item's place in a phase: its index and its group."""

    index: int
    group: Group


def current_slot() -> Slot | None:
    """The running item's slot, or None outside :func:`ordered_map`."""
    return _SLOT.get()


def _run_item(fn: Callable[[T], R], item: T, buf: Deferred, slot: Slot) -> R:
    tok = _SLOT.set(slot)
    try:
        with deferring(buf):
            return fn(item)
    finally:
        _SLOT.reset(tok)
        slot.group.leave(slot.index)


_POOL_THREADS = 512  # groups are far smaller; a phase waits for threads only if 512 are busy
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _shared_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(_POOL_THREADS, thread_name_prefix="rsi-phase")
        return _pool


def ordered_map(fn: Callable[[T], R], items: Sequence[T], workers: int) -> tuple[list[R], list[Deferred]]:
    """``[fn(x) for x in items]`` run in threads (groups of at most ``workers``), each item's run
    appends deferred into its own buffer. Returns the results and the buffers, both in item order;
    nothing is written until the caller flushes a buffer. The first exception of an item (in item
    order) is raised after every item of its group finished; its buffers are dropped."""
    workers = max(1, int(workers))
    results: list[R] = []
    bufs: list[Deferred] = []
    for start in range(0, len(items), workers):
        chunk = list(range(start, min(len(items), start + workers)))
        group = Group(chunk)
        gbufs = [Deferred() for _ in chunk]
        pool = _shared_pool()
        futs = [
            pool.submit(_run_item, fn, items[i], b, Slot(i, group)) for i, b in zip(chunk, gbufs, strict=True)
        ]
        for f in futs:
            f.exception()  # wait for all before raising the first
        for f in futs:
            results.append(f.result())
        bufs.extend(gbufs)
    return results, bufs
