"""A run directory's writer lock that survives its holder's death on a shared filesystem.

A fanned-out run (one Ray task per (method, seed) run or dreaming arm) holds ``<run>/writer.lock``
while it appends. The file names its holder: host, pid, the pid's start time (so a reused pid is not
mistaken for the holder) and, on Ray, the node id. A kernel ``flock`` is not enough across nodes (on
NFS a dead client's lock lingers), so the next attempt (Ray's retry of a task whose worker died)
takes the lock over only after checking the holder is gone:

- same host: the pid is gone, a zombie, or a different process with that pid (start time differs);
- another host, on Ray: the holder's node is dead, or a probe task pinned to that node says so;
- otherwise (another host, no way to ask): the lock is treated as held and the error names the holder.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from pathlib import Path
from typing import Any

LOCK_FILE = "writer.lock"


class WriterLockHeld(RuntimeError):
    """Another live process holds the run directory's writer lock."""


def _start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (``/proc/<pid>/stat`` field 22), or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
    return None if fields[0] == "Z" else int(fields[19])  # a zombie has exited: not a holder


def pid_alive(pid: int, start_ticks: int | None = None) -> bool:
    """Whether ``pid`` runs on this host (and, given ``start_ticks``, is the same process)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    if not Path("/proc").is_dir():  # pragma: no cover - not Linux: trust kill(0)
        return True
    ticks = _start_ticks(pid)
    return ticks is not None and (start_ticks is None or ticks == start_ticks)


def _ray_node_id() -> str | None:
    try:
        import ray

        return ray.get_runtime_context().get_node_id() if ray.is_initialized() else None
    except Exception:  # noqa: BLE001 - not on Ray, or Ray without a runtime context
        return None


def holder_alive(holder: dict[str, Any], probe_timeout_s: float = 60.0) -> bool:
    """Whether the process ``holder`` describes still runs (True when that cannot be decided)."""
    if holder.get("host") == socket.gethostname():
        return pid_alive(int(holder["pid"]), holder.get("start_ticks"))
    node = holder.get("node_id")
    if not node:
        return True
    try:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        if not ray.is_initialized():
            return True
        if not any(n["NodeID"] == node and n["Alive"] for n in ray.nodes()):
            return False  # the holder's node is gone, and its processes with it
        probe: Any = ray.remote(pid_alive).options(
            num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)
        )
        ref = probe.remote(int(holder["pid"]), holder.get("start_ticks"))
        return bool(ray.get(ref, timeout=probe_timeout_s))
    except Exception:  # noqa: BLE001 - cannot decide: keep the lock
        return True


class WriterLock:
    """``with WriterLock(run_dir) as lock:`` - the single writer of ``run_dir``; ``lock.took_over`` is
    the dead holder it replaced (None when the lock was free)."""

    def __init__(self, directory: str | os.PathLike[str]):
        self.path = Path(directory) / LOCK_FILE
        self.took_over: dict[str, Any] | None = None
        self._held = False
        self.me = {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "start_ticks": _start_ticks(os.getpid()),
            "node_id": _ray_node_id(),
            "since": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }

    def _create(self) -> bool:
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(self.me) + "\n")
            f.flush()
            os.fsync(f.fileno())
        return True

    def holder(self) -> dict[str, Any] | None:
        """Who holds the lock now (None: free); an unreadable file (torn by a crash mid-write) counts
        as a holder that died before it could write itself down."""
        for attempt in (1, 2):
            try:
                text = self.path.read_text()
            except FileNotFoundError:
                return None
            try:
                return dict(json.loads(text))
            except ValueError:
                if attempt == 1:
                    time.sleep(0.5)  # a holder between creating the file and writing itself down
        return {"host": self.me["host"], "pid": -1, "torn": text}

    def acquire(self) -> WriterLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(3):  # a free lock, or a dead holder replaced; a race with another taker: retry
            if self._create():
                self._held = True
                return self
            text = self.path.read_text() if self.path.exists() else ""
            holder = self.holder()
            if holder is None:
                continue
            if holder.get("pid", -1) >= 0 and holder_alive(holder):
                raise WriterLockHeld(
                    f"{self.path.parent} is being written by pid {holder['pid']} on {holder.get('host')} "
                    f"since {holder.get('since')} ({self.path}); if that process is gone and this host "
                    "cannot tell (another machine, no Ray), delete the lock file"
                )
            # the holder is gone: move its lock aside; if what moved is not what was judged, put it back
            aside = self.path.with_name(f"{LOCK_FILE}.stale-{os.getpid()}")
            try:
                os.rename(self.path, aside)
            except FileNotFoundError:
                continue
            if aside.read_text() != text:
                os.replace(aside, self.path)
                continue
            aside.unlink()
            if self._create():
                self.took_over, self._held = holder, True
                return self
        raise WriterLockHeld(f"{self.path}: could not take the writer lock (other takers kept winning)")

    def release(self) -> None:
        if self._held:
            with contextlib.suppress(FileNotFoundError):
                if self.holder() == self.me:
                    self.path.unlink()
            self._held = False

    def __enter__(self) -> WriterLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


__all__ = ["LOCK_FILE", "WriterLock", "WriterLockHeld", "holder_alive", "pid_alive"]
