"""A memory limit over a candidate's whole process tree: one cgroup per candidate process.

``RLIMIT_AS`` bounds each process on its own, so a candidate that starts four children holds four
times its limit. Where this host lets us write a cgroup hierarchy with the memory controller, every
candidate process gets its own group (``<workbench parent>/<host pid>-<n>``) with
``Limits.memory_bytes`` for the whole tree (v2: ``memory.max``, ``memory.swap.max`` 0,
``memory.oom.group`` 1; v1: ``memory.limit_in_bytes`` and ``memory.memsw.limit_in_bytes``); the
supervisor places the child in it right after starting it, before it is sent its job, and removes
the group once the child is reaped. Both layouts are supported: a v2 (unified) hierarchy with the
memory controller is preferred, else a v1 ``memory`` hierarchy (hybrid hosts). Where neither is
writable (an unprivileged user) the per-process rlimit is all there is, and the isolation record
says so (``memory_limit: "rlimit"``). See docs/sandbox-memory.md.
"""

from __future__ import annotations

import errno
import functools
import itertools
import logging
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from rsi_workbench.sandbox.plan import Isolation, Limits

MemoryMode = Literal["cgroup-v2", "cgroup-v1", "rlimit"]
PARENT_NAME = "rsi-workbench"
log = logging.getLogger("rsi_workbench.sandbox")
_counter = itertools.count()
_FALLBACK: list[str] = []  # why find_hierarchy found nothing writable


@dataclass(frozen=True)
class Hierarchy:
    """Where per-candidate groups are made: the workbench parent group and its hierarchy's version."""

    version: Literal["cgroup-v2", "cgroup-v1"]
    parent: Path


# ------------------------------------------------------------------------------- finding a hierarchy
def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """(mount root, mount point, fstype, super options) of every cgroup mount of this process."""
    out = []
    try:
        text = Path("/proc/self/mountinfo").read_text()
    except OSError:
        return []
    for line in text.splitlines():
        pre, sep, post = line.partition(" - ")
        fields, tail = pre.split(), post.split()
        if not sep or len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        out.append((fields[3], fields[4], tail[0], set(tail[2].split(","))))
    return out


def _own_paths() -> tuple[str | None, str | None]:
    """This process's (v2 path, v1 memory path) from /proc/self/cgroup."""
    v2 = v1 = None
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None, None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            v2 = parts[2]
        elif "memory" in parts[1].split(","):
            v1 = parts[2]
    return v2, v1


def _under(mount_root: str, mount_point: str, path: str) -> Path | None:
    """The directory of cgroup ``path`` under a mount of the hierarchy rooted at ``mount_root``."""
    root = mount_root.rstrip("/")
    if path != root and not path.startswith(root + "/"):
        return None
    return Path(mount_point, path[len(root) :].lstrip("/"))


def _write(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _controllers(path: Path, name: str) -> set[str]:
    try:
        return set((path / name).read_text().split())
    except OSError:
        return set()


def _v2_parents(own: Path, mount_point: str) -> list[Path]:
    """v2 bases to hold the workbench group: our own group when it can delegate ``memory`` (the
    root, or a group without processes), else its parent (no internal processes there either)."""
    bases = []
    if "memory" in _controllers(own, "cgroup.subtree_control") or own == Path(mount_point):
        bases.append(own)
    if "memory" in _controllers(own, "cgroup.controllers") and own != Path(mount_point):
        bases.append(own.parent)
    return bases


def _try_parent(version: Literal["cgroup-v2", "cgroup-v1"], base: Path) -> Hierarchy:
    """Make (or reuse) ``base/rsi-workbench`` and prove a limited child group can be made there."""
    if version == "cgroup-v2" and "memory" not in _controllers(base, "cgroup.subtree_control"):
        _write(base / "cgroup.subtree_control", "+memory")
    parent = base / PARENT_NAME
    parent.mkdir(exist_ok=True)
    if version == "cgroup-v2" and "memory" not in _controllers(parent, "cgroup.subtree_control"):
        _write(parent / "cgroup.subtree_control", "+memory")
    probe = parent / f"probe-{os.getpid()}-{next(_counter)}"
    probe.mkdir()
    try:
        _write(probe / ("memory.max" if version == "cgroup-v2" else "memory.limit_in_bytes"), str(1 << 30))
        if not os.access(probe / "cgroup.procs", os.W_OK):
            raise PermissionError(errno.EACCES, "cgroup.procs not writable", str(probe))
    finally:
        probe.rmdir()
    return Hierarchy(version, parent)


@functools.cache
def find_hierarchy() -> Hierarchy | None:
    """The writable memory hierarchy for per-candidate groups (v2 preferred, then v1), probed once
    per process; None where neither can be written (then :func:`fallback_reason` says why)."""
    mounts = _mounts()
    v2_path, v1_path = _own_paths()
    tries: list[tuple[Literal["cgroup-v2", "cgroup-v1"], Path]] = []
    for root, point, fstype, _ in mounts:
        if fstype == "cgroup2" and v2_path is not None:
            own = _under(root, point, v2_path)
            if own is not None and "memory" in _controllers(own, "cgroup.controllers"):
                tries += [("cgroup-v2", b) for b in _v2_parents(own, point)]
    for root, point, fstype, opts in mounts:
        if fstype == "cgroup" and "memory" in opts and v1_path is not None:
            own = _under(root, point, v1_path)
            if own is not None:
                tries += [("cgroup-v1", own), ("cgroup-v1", Path(point))]
    errors = []
    for version, base in dict.fromkeys(tries):
        try:
            h = _try_parent(version, base)
        except OSError as e:
            errors.append(f"{version} at {base}: {e.strerror or e}")
            continue
        _clean_stale(h)
        return h
    _FALLBACK.append(
        "; ".join(errors) if errors else "no cgroup hierarchy with the memory controller is mounted"
    )
    log.info("sandbox: memory limited per process only (RLIMIT_AS): %s", _FALLBACK[-1])
    return None


def memory_mode() -> MemoryMode:
    """How this host limits a candidate's memory: over its process tree through a cgroup
    (``cgroup-v2`` / ``cgroup-v1``), or per process only (``rlimit``)."""
    h = find_hierarchy()
    return h.version if h is not None else "rlimit"


def fallback_reason() -> str:
    """Why the per-candidate cgroup is not available here ("" when it is)."""
    return _FALLBACK[-1] if find_hierarchy() is None and _FALLBACK else ""


def _clean_stale(h: Hierarchy) -> None:
    """Remove groups left by host processes that died before removing them (killing what is left)."""
    try:
        entries = list(h.parent.iterdir())
    except OSError:
        return
    for d in entries:
        owner = d.name.split("-", 1)[0]
        if d.is_dir() and owner.isdigit() and not _alive(int(owner)):
            _remove(d, deadline_s=1.0)


def _remove(group: Path, deadline_s: float = 5.0) -> None:
    """rmdir a group, SIGKILLing whatever is still in it until it is empty (``cgroup.kill`` on v2)."""
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            group.rmdir()
            return
        except OSError as e:
            if e.errno == errno.ENOENT:
                return
            if e.errno != errno.EBUSY or time.monotonic() > deadline:
                log.warning("sandbox: could not remove cgroup %s: %s", group, e)
                return
        _kill_all(group)
        time.sleep(0.005)


def _kill_all(group: Path) -> None:
    if (group / "cgroup.kill").exists():
        try:
            _write(group / "cgroup.kill", "1")
            return
        except OSError:
            pass
    for p in _procs(group):
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _procs(group: Path) -> list[int]:
    try:
        return [int(x) for x in (group / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            out += [int(x) for x in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()]
        except (OSError, ValueError):
            pass
    return out


# ------------------------------------------------------------------------------- one candidate
class CandidateGroup:
    """The cgroup of one candidate process tree: made with its limit, holding the tree, removed."""

    def __init__(self, h: Hierarchy, memory_bytes: int):
        self.version = h.version
        while True:
            self.path = h.parent / f"{os.getpid()}-{next(_counter)}"
            try:
                self.path.mkdir()
                break
            except FileExistsError:  # left by an earlier process with our pid
                continue
        self.closed = False
        self.oom_kills = 0
        try:
            if h.version == "cgroup-v2":
                _write(self.path / "memory.max", str(memory_bytes))
                for name, value in (("memory.swap.max", "0"), ("memory.oom.group", "1")):
                    if (self.path / name).exists():
                        _write(self.path / name, value)
            else:
                _write(self.path / "memory.limit_in_bytes", str(memory_bytes))
                if (self.path / "memory.memsw.limit_in_bytes").exists():  # memory + swap: no swap
                    _write(self.path / "memory.memsw.limit_in_bytes", str(memory_bytes))
        except BaseException:
            self.path.rmdir()
            raise

    def place(self, pid: int) -> None:
        """Move ``pid`` and every descendant it already has into the group. Each process is moved
        before its children are listed: a child forked after its parent moved is born inside, one
        forked before is listed (fork and migration exclude each other in the kernel)."""
        procs = self.path / "cgroup.procs"
        todo, seen = [pid], set()
        while todo:
            p = todo.pop()
            if p in seen:
                continue
            seen.add(p)
            try:
                _write(procs, str(p))
            except ProcessLookupError:  # exited meanwhile
                continue
            todo += _children(p)

    def release(self) -> int:
        """Kill whatever is still in the group, remove it, and return how many processes the kernel
        killed for exceeding the group's memory limit."""
        if not self.closed:
            self.closed = True
            self.oom_kills = self._oom_kills()
            _remove(self.path)
        return self.oom_kills

    def _oom_kills(self) -> int:
        name = "memory.events" if self.version == "cgroup-v2" else "memory.oom_control"
        try:
            for line in (self.path / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0


def attach(pid: int, iso: Isolation, limits: Limits) -> CandidateGroup | None:
    """Give the just-started candidate process ``pid`` its own group limited to ``limits.tree_memory_bytes``
    (None when the plan's ``memory_limit`` is ``rlimit``). Called before the child is sent its job;
    on failure the child is killed and the error raised: a run never claims a limit it lacks."""
    mode = iso.memory_limit
    if mode == "rlimit":
        return None
    try:
        h = find_hierarchy()
        if h is None or h.version != mode:
            raise OSError(
                f"the isolation plan promises a {mode} memory limit but this process cannot make one "
                f"({fallback_reason() or (h.version if h else 'no hierarchy')})"
            )
        group = CandidateGroup(h, limits.tree_memory_bytes)
        try:
            group.place(pid)
        except BaseException:
            group.release()
            raise
        return group
    except BaseException:
        try:
            os.killpg(pid, signal.SIGKILL)  # the child is its own session leader
        except OSError:
            pass
        raise


def release(group: CandidateGroup | None) -> int:
    """Remove a candidate's group after its process was reaped; the number of processes the kernel
    killed for the group's memory limit (0 without a group)."""
    return group.release() if group is not None else 0


def memory_message(oom_kills: int, limits: Limits) -> str:
    """The verdict's message when a candidate's process tree ran into its memory limit."""
    return (
        f"memory limit exceeded: {limits.tree_memory_bytes} bytes for the whole process tree "
        f"(the kernel killed {oom_kills} process{'es' if oom_kills != 1 else ''})"
    )
