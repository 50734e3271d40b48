"""Isolation plans: how the candidate's process is started, and what the probe proved about it.

The preferred plan is Debian's ``bubblewrap``: new user/pid/net/ipc/uts/cgroup namespaces, an
allow-list of read-only binds (``/usr``, the interpreter's stdlib, the declared packages) on an
empty root, a private ``/tmp``, every capability dropped, no further user namespaces,
``--die-with-parent`` and ``--new-session``. Without ``bwrap`` the only plan is ``none`` (rlimits
and an empty environment, as ``nobody`` when started as root): ``best_effort`` runs it with a warning on every run,
``required`` refuses it. What a plan achieves is *probed* (from inside), never assumed.

Every user of the sandbox obtains its plan through :func:`obtain_isolation`, the one choke point:
the effective mode is the stricter of the caller's (a config's) and ``RSI_WORKBENCH_SANDBOX_MODE``,
the plan is probed, a plan weaker than the mode (or than the user's own needs) is refused, and
``best_effort`` warns. See ``docs/sandbox-modes.md``.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

SANDBOX_UID = 65534
PACKAGE_ROOT = "/opt/rsi-packages"
MODE_ENV = "RSI_WORKBENCH_SANDBOX_MODE"
SandboxMode = Literal["required", "best_effort"]
MODES: tuple[SandboxMode, ...] = ("required", "best_effort")  # strictest first

log = logging.getLogger("rsi_workbench.sandbox")


@dataclass(frozen=True)
class Limits:
    """Per-use limits: the defaults are a repair test's (CPU 10/11 s, 1 GiB, 1 MiB files, 3 s wall);
    a discovery program raises ``wall_s`` to minutes. ``session_wall_s`` bounds a whole session.
    ``address_space_bytes`` is each process's RLIMIT_AS; ``memory_bytes`` bounds the memory of the
    candidate's whole process tree where a cgroup can be made for it (None: ``address_space_bytes``,
    1 GiB by default; see :mod:`rsi_workbench.sandbox.cgroup` and docs/sandbox-memory.md)."""

    cpu_soft_s: int = 10
    cpu_hard_s: int = 11
    address_space_bytes: int = 1 << 30
    file_size_bytes: int = 1 << 20
    open_files: int = 64
    processes: int = 64
    wall_s: float = 3.0
    path: str = "/usr/bin:/bin"
    output_cap_bytes: int = 16 * 1024
    result_cap_bytes: int = 4 << 20
    tmp_bytes: int = 64 << 20
    session_wall_s: float = 600.0
    memory_bytes: int | None = None

    def __post_init__(self) -> None:
        if self.cpu_soft_s > self.cpu_hard_s:
            raise ValueError("SandboxLimits: cpu_soft_s must be <= cpu_hard_s")
        if self.wall_s <= 0:
            raise ValueError("SandboxLimits: wall_s must be > 0")
        if self.session_wall_s <= 0:
            raise ValueError("SandboxLimits: session_wall_s must be > 0")
        if self.memory_bytes is not None and self.memory_bytes <= 0:
            raise ValueError("SandboxLimits: memory_bytes must be > 0 (or None: address_space_bytes)")

    @property
    def tree_memory_bytes(self) -> int:
        """The memory limit of the candidate's whole process tree (where cgroups allow one)."""
        return self.address_space_bytes if self.memory_bytes is None else self.memory_bytes


@dataclass(frozen=True)
class Isolation:
    """What the probe achieved on this host (recorded with every execution)."""

    network_namespace: bool = False
    pid_namespace: bool = False
    private_tmp: bool = False
    unprivileged_user: bool = False
    rlimits: bool = True
    hiding: bool = False  # checkout, datasets, home dirs proven invisible from inside
    cannot_undo: bool = False  # no capabilities, no new user namespace, umount refused
    dies_with_supervisor: bool = False
    plan: str = "none"
    interpreter: str = sys.executable
    uid: int | None = None
    binds: tuple[tuple[str, str], ...] = ()
    masks: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()
    notes: str = ""
    memory_limit: str = "rlimit"  # "cgroup-v2" / "cgroup-v1": Limits.memory_bytes over the process tree

    @property
    def hidden_paths(self) -> tuple[str, ...]:
        return self.masks

    @property
    def complete(self) -> bool:
        """All of: no network, every descendant dies with the test, private /tmp, not root inside,
        host paths hidden by an allow-list, and nothing the candidate can do undoes any of it."""
        return (
            self.network_namespace
            and self.pid_namespace
            and self.private_tmp
            and self.unprivileged_user
            and self.hiding
            and self.cannot_undo
            and self.dies_with_supervisor
        )

    def record(self) -> dict[str, Any]:
        return {
            "plan": self.plan,
            "network_namespace": self.network_namespace,
            "pid_namespace": self.pid_namespace,
            "private_tmp": self.private_tmp,
            "unprivileged_user": self.unprivileged_user,
            "rlimits": self.rlimits,
            "hidden_host_paths": self.hiding,
            "cannot_undo": self.cannot_undo,
            "dies_with_supervisor": self.dies_with_supervisor,
            "complete": self.complete,
            "memory_limit": self.memory_limit,
        }

    def key(self) -> str:
        """A stable description of the plan, for execution-cache keys."""
        return json.dumps(
            {
                **self.record(),
                "interpreter": self.interpreter,
                "binds": self.binds,
                "packages": self.packages,
            },
            sort_keys=True,
        )


class SandboxUnavailable(RuntimeError):
    """``required`` mode was asked for but this host cannot give complete isolation."""


def _checked_mode(mode: str, where: str) -> SandboxMode:
    if mode not in MODES:
        raise ValueError(f"{where}={mode!r}: allowed values are 'required', 'best_effort'")
    return cast(SandboxMode, mode)


def env_mode() -> SandboxMode | None:
    """``RSI_WORKBENCH_SANDBOX_MODE`` (CI sets ``required``), or None when it is unset or empty."""
    mode = os.environ.get(MODE_ENV, "")
    return _checked_mode(mode, MODE_ENV) if mode else None


def default_mode() -> SandboxMode:
    """``RSI_WORKBENCH_SANDBOX_MODE`` (CI sets ``required``), else ``best_effort``."""
    return env_mode() or "best_effort"


def stricter(a: SandboxMode, b: SandboxMode) -> SandboxMode:
    """The stricter of two modes (``required`` > ``best_effort``)."""
    return "required" if "required" in (a, b) else "best_effort"


def effective_mode(mode: str | None = None) -> SandboxMode:
    """The mode a use of the sandbox runs under: the stricter of ``mode`` (a caller's or config's;
    None: no opinion) and the environment's ``RSI_WORKBENCH_SANDBOX_MODE``; neither: ``best_effort``."""
    asked = None if mode is None else _checked_mode(mode, "sandbox mode")
    return stricter(asked or "best_effort", env_mode() or "best_effort")


# ------------------------------------------------------------------------------- the allow-list
_LAYOUT_CODE = """
import json, os, sys, sysconfig
def facts():
    p, c = sysconfig.get_paths(), sysconfig.get_config_vars()
    return {"exe": os.path.realpath(sys.executable), "stdlib": p["stdlib"], "platstdlib": p["platstdlib"],
            "sites": sorted({p["purelib"], p["platlib"]}), "base": sys.base_prefix,
            "libdir": c.get("LIBDIR") or "", "shared": bool(c.get("Py_ENABLE_SHARED"))}
"""


@functools.cache
def _layout(interpreter: str) -> dict[str, Any]:
    """Where an interpreter's binary, stdlib, shared library and site dirs are."""
    if os.path.realpath(interpreter) == os.path.realpath(sys.executable):
        ns: dict[str, Any] = {}
        exec(_LAYOUT_CODE, ns)  # our own constant code: the same facts, without a subprocess
        lay = dict(ns["facts"]())
    else:
        code = _LAYOUT_CODE + "\nprint(json.dumps(facts()))\n"
        out = subprocess.run(
            [interpreter, "-I", "-c", code], capture_output=True, text=True, timeout=30, check=True
        )
        lay = dict(json.loads(out.stdout))
    # a shared libpython is found through the binary's RUNPATH (the build-time LIBDIR): bind the
    # library files found under the running prefix at that path (they differ when the prefix moved)
    libs = []
    if lay["shared"] and lay["libdir"]:
        for f in sorted(Path(lay["base"], "lib").glob("libpython*.so*")):
            libs.append((str(f.resolve()), os.path.join(lay["libdir"], f.name)))
    lay["libs"] = libs
    return lay


def _find_package(name: str, interpreter: str) -> str | None:
    if os.path.realpath(interpreter) == os.path.realpath(sys.executable):
        spec = importlib.util.find_spec(name)
        locs = spec.submodule_search_locations if spec is not None else None
        return str(next(iter(locs))) if locs else None
    code = (
        "import importlib.util,sys;s=importlib.util.find_spec(sys.argv[1]);"
        "print(list(s.submodule_search_locations)[0] if s and s.submodule_search_locations else '')"
    )
    out = subprocess.run([interpreter, "-I", "-c", code, name], capture_output=True, text=True, timeout=30)
    return out.stdout.strip() or None


def package_dirs(packages: tuple[str, ...], interpreter: str = sys.executable) -> list[tuple[str, str]]:
    """(host dir, name) of each declared package (as the sandbox interpreter would import it) and
    its vendored ``<name>.libs`` dir, if any."""
    out = []
    for name in packages:
        found = _find_package(name, interpreter)
        if not found:
            raise ValueError(
                f"declared sandbox package {name!r} is not installed for {interpreter} "
                f"(for Debian's python3 install python3-{name})"
            )
        d = Path(found).resolve()
        out.append((str(d), name))
        libs = d.with_name(d.name + ".libs")
        if libs.is_dir():
            out.append((str(libs), libs.name))
    return out


def allow_list(interpreter: str, packages: tuple[str, ...] = ()) -> tuple[list[tuple[str, str]], list[str]]:
    """Read-only binds (host path, sandbox path) and the site dirs masked with an empty tmpfs."""
    lay = _layout(interpreter)
    binds = [("/usr", "/usr")]
    # shared-library lookup (Debian's BLAS is reached through /etc/alternatives symlinks)
    binds += [(p, p) for p in ("/etc/ld.so.cache", "/etc/alternatives") if os.path.exists(p)]
    for p in (lay["exe"], lay["stdlib"], lay["platstdlib"]):
        if p and os.path.exists(p) and not p.startswith("/usr/"):
            binds.append((p, p))
    binds += [(src, dst) for src, dst in lay["libs"] if not dst.startswith("/usr/")]
    binds = list(dict.fromkeys(binds))
    masks = [s for s in [*lay["sites"], "/usr/lib/python3/dist-packages"] if os.path.isdir(s)]
    binds += [(src, f"{PACKAGE_ROOT}/{name}") for src, name in package_dirs(packages, interpreter)]
    return binds, list(dict.fromkeys(masks))


def bwrap_argv(iso: Isolation, limits: Limits, workdir: str = "/tmp") -> list[str]:
    """The ``bwrap`` command line for a plan (everything read-only except a private sized /tmp)."""
    bwrap = shutil.which("bwrap", path="/usr/bin:/bin") or "bwrap"
    argv = [bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL"]
    argv += ["--die-with-parent", "--new-session", "--clearenv", "--setenv", "PATH", limits.path]
    argv += ["--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
    for name in ("bin", "lib", "lib32", "lib64", "sbin"):
        p = Path("/") / name
        if p.is_symlink():
            argv += ["--symlink", os.readlink(p), str(p)]
    for src, dst in iso.binds:
        argv += ["--ro-bind", src, dst]
    for m in iso.masks:
        argv += ["--tmpfs", m, "--remount-ro", m]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    for d in ("/tmp", "/var/tmp", "/dev/shm"):
        argv += ["--size", str(limits.tmp_bytes), "--perms", "1777", "--tmpfs", d]
    argv += ["--chdir", workdir]
    return argv


def world_reachable(path: str) -> bool:
    """Whether any user can reach and read ``path`` (every ancestor searchable by others): bwrap runs
    as an unprivileged host user and resolves its bind sources as that user."""
    p = Path(os.path.realpath(path))
    try:
        if not p.stat().st_mode & 0o004:
            return False
        return all(a.stat().st_mode & 0o001 for a in p.parents)
    except OSError:
        return False


def sandbox_interpreters() -> list[str]:
    """Interpreters to try, this one first; as root only those an unprivileged user can reach."""
    cands = [sys.executable] + [
        p for p in ("/usr/bin/python3", "/usr/local/bin/python3") if os.path.exists(p)
    ]
    out = list(dict.fromkeys(os.path.realpath(c) for c in cands))
    if os.geteuid() == 0:
        out = [c for c in out if world_reachable(c) and world_reachable(_layout(c)["stdlib"])]
    return out


def sensitive_paths() -> list[str]:
    """Host paths the candidate must not see: the checkout, the dataset mirror and cache, home dirs."""
    checkout = Path(__file__).resolve().parents[2]
    cands = {str(checkout), str(Path.home() / ".cache"), "/work", "/srv", "/mnt", "/media"}
    data = os.environ.get("RSI_WORKBENCH_DATA")
    if data:
        cands.add(data)
    # the mirror the package finds without the variable (rsi_workbench.datasets.mirror_dir)
    cands.add(str(checkout.parent / "shared" / "datasets"))
    for home in ("/home", str(Path.home())):
        try:
            cands |= {os.path.join(home, x) for x in os.listdir(home)}
        except OSError:
            pass
    return sorted(c for c in cands if os.path.exists(c))


PROBE_PROGRAM = r"""
import os, socket
def probe(paths, keep):
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    caps = open("/proc/self/status").read().split("CapEff:")[1].split()[0]
    visible = [p for p in paths if os.path.exists(p) and not any(k.startswith(p.rstrip("/") + "/") for k in keep)]
    return {
        "pid": os.getpid(), "ppid": os.getppid(), "uid": os.getuid(),
        "ifaces": [n for _, n in socket.if_nameindex()],
        "tmp_private": os.path.ismount("/tmp"),
        "caps_zero": int(caps, 16) == 0,
        "umount_refused": libc.umount2(b"/tmp", 2) != 0,
        "userns_refused": libc.unshare(0x10000000) != 0,
        "visible": visible,
    }
"""


_ISOLATION_PARTS = (
    ("network_namespace", "no network"),
    ("pid_namespace", "own pid namespace"),
    ("private_tmp", "private /tmp"),
    ("unprivileged_user", "unprivileged"),
    ("hidden_host_paths", "checkout/datasets/home hidden"),
    ("cannot_undo", "cannot undo"),
    ("dies_with_supervisor", "dies with supervisor"),
)


def describe_isolation(record: dict[str, Any] | None) -> str:
    """One line for report and dashboard headers from :meth:`Isolation.record` (as stored in a run)."""
    if not record:
        return "sandbox isolation: not recorded (run made before isolation was recorded, or no sandbox)"
    missing = [label for key, label in _ISOLATION_PARTS if not record.get(key)]
    plan = record.get("plan", "?")
    if not missing:
        return f"sandbox isolation: complete ({plan}: " + ", ".join(lbl for _, lbl in _ISOLATION_PARTS) + ")"
    return f"sandbox isolation: INCOMPLETE ({plan}; missing: {', '.join(missing)})"


# ------------------------------------------------------------------------------ the choke point
@dataclass(frozen=True)
class IsolationGrant:
    """What :func:`obtain_isolation` gave one user: the probed plan, the effective mode, the mode
    the caller asked for and the environment's, the purpose, and the user's extra needs."""

    isolation: Isolation
    mode: SandboxMode
    requested: SandboxMode | None = None
    env: SandboxMode | None = None
    purpose: str = ""
    needs: tuple[str, ...] = ()

    def record(self) -> dict[str, Any]:
        """:meth:`Isolation.record` plus the modes and the purpose (what a run stores)."""
        return {
            **self.isolation.record(),
            "mode": self.mode,
            "requested_mode": self.requested,
            "env_mode": self.env,
            "purpose": self.purpose,
        }

    def record_in(self, run: Any, kind: str = "sandbox_isolation") -> bool:
        """Append a ``kind`` event holding :meth:`record` to ``run`` (anything with ``events(kind)``
        and ``append(kind, payload)``: a :class:`~rsi_workbench.records.Run`) unless an identical one
        is already there (a resumed session adds one only when its isolation differs); the caller
        commits. Whether an event was appended."""
        rec = self.record()
        if any(e.payload == rec for e in run.events(kind)):
            return False
        run.append(kind, rec)
        return True


def _mode_source(mode: SandboxMode, requested: SandboxMode | None, env: SandboxMode | None) -> str:
    if env == mode and requested != mode:
        return f"from {MODE_ENV}" + (f"; the caller's {requested!r} cannot weaken it" if requested else "")
    if requested == mode:
        return "asked by the caller (config)" + (f"; {MODE_ENV}={env}" if env else "")
    return "the default"


def enforce_mode(
    iso: Isolation,
    mode: SandboxMode,
    *,
    purpose: str,
    needs: tuple[str, ...] = (),
    source: str = "",
) -> None:
    """Refuse a plan weaker than ``mode`` (or lacking one of ``needs``, keys of
    :meth:`Isolation.record` required whatever the mode) with :class:`SandboxUnavailable` naming what
    is missing and the purpose; in ``best_effort`` log a warning for an incomplete plan."""
    rec = iso.record()
    unknown = [n for n in needs if n not in rec]
    if unknown:
        raise ValueError(f"{purpose}: unknown isolation needs {unknown} (allowed: {sorted(rec)})")
    missing = [k for k, v in rec.items() if v is False and k != "complete"]
    if mode == "required" and not iso.complete:
        raise SandboxUnavailable(
            f"{purpose}: sandbox mode 'required' ({source or 'asked'}) but this host cannot provide: "
            f"{', '.join(missing)} (plan: {iso.plan}; {iso.notes}). Install bubblewrap (make sysdeps) on a "
            f"kernel with user namespaces, or set {MODE_ENV}=best_effort (and no config asking "
            "'required') to run with the isolation recorded per execution."
        )
    lacking = [n for n in needs if not rec[n]]
    if lacking:
        raise SandboxUnavailable(
            f"{purpose}: needs {', '.join(lacking)} whatever the sandbox mode (bubblewrap: make sysdeps); "
            f"this host's plan is {iso.plan!r} ({iso.notes})"
        )
    if not iso.complete:
        log.warning(
            "sandbox (%s): best_effort with incomplete isolation (plan %s; missing %s): candidate code "
            "can see this host",
            purpose,
            iso.plan,
            ", ".join(missing),
        )


def obtain_isolation(
    packages: tuple[str, ...] = (),
    *,
    mode: str | None = None,
    purpose: str,
    needs: tuple[str, ...] = (),
    isolation: Isolation | None = None,
) -> IsolationGrant:
    """THE way every user of the sandbox gets its plan. The effective mode is the stricter of
    ``mode`` (the caller's or its config's; None: no opinion) and ``RSI_WORKBENCH_SANDBOX_MODE``
    (``required`` > ``best_effort``; a weakened request is logged and recorded as ``requested_mode``).
    The plan is probed (once per process and ``packages``) unless ``isolation`` gives it; a plan
    weaker than the mode, or lacking one of ``needs`` (e.g. ``("network_namespace",
    "pid_namespace")``), raises :class:`SandboxUnavailable` naming what is missing and ``purpose``;
    ``best_effort`` with an incomplete plan logs a warning. Returns the grant (its ``record()`` is
    what a run stores)."""
    from rsi_workbench.sandbox.supervisor import probe_isolation  # supervisor imports this module

    requested = None if mode is None else _checked_mode(mode, f"{purpose}: sandbox mode")
    env = env_mode()
    eff = stricter(requested or "best_effort", env or "best_effort")
    if requested is not None and requested != eff:
        log.warning(
            "sandbox (%s): mode %r asked, %s=%s is stricter and wins", purpose, requested, MODE_ENV, env
        )
    iso = isolation if isolation is not None else probe_isolation(tuple(packages))
    enforce_mode(iso, eff, purpose=purpose, needs=tuple(needs), source=_mode_source(eff, requested, env))
    return IsolationGrant(iso, eff, requested, env, purpose, tuple(needs))
