"""An OpenEvolve task directory as a program-evolution task, evaluated only in the sandbox.

The directory is used unchanged: ``initial_program.py`` with ``# EVOLVE-BLOCK-START`` /
``# EVOLVE-BLOCK-END`` (only the first such block is edited; the text around it is kept byte for
byte), ``evaluator.py`` with ``evaluate(program_path)`` (optionally ``evaluate_stage1`` /
``evaluate_stage2`` / ``evaluate_stage3``), and, when present, ``config.yaml`` whose ``evaluator:``
section gives ``timeout`` (seconds per stage; OpenEvolve's default 300), ``cascade_evaluation``
(default true) and ``cascade_thresholds`` (default [0.5, 0.75, 0.9]); its other sections are OpenEvolve's
and ignored here.

One evaluation (:meth:`OpenEvolveTask.evaluate_program`) — the evaluator and the candidate it runs,
with any ``sys.executable`` subprocesses and temp files — is one sandbox call through the isolation
choke point (:func:`openevolve_isolation`): a copy of the directory (taken once per process, see
:func:`stage_task`) is bound read-only at :data:`TASK_ROOT`; nothing else of the host is visible
under ``bwrap``. The metrics come back as plain data and the host derives the node's verdict
(:func:`verdict`). The verdict is only as trustworthy as the evaluator.
"""

from __future__ import annotations

import atexit
import dataclasses
import fnmatch
import hashlib
import math
import os
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rsi_workbench import sandbox
from rsi_workbench.domains.math.task import AttemptResult, Evaluation
from rsi_workbench.domains.openevolve.harness import HARNESS
from rsi_workbench.sandbox import Isolation, Limits, values
from rsi_workbench.sandbox.plan import PACKAGE_ROOT, SANDBOX_UID, package_dirs

START, END = "# EVOLVE-BLOCK-START", "# EVOLVE-BLOCK-END"
#: the packages an evaluator may import inside the sandbox (besides the standard library)
PACKAGES = ("numpy", "scipy")
#: where the staged copy of the task directory is bound inside the sandbox (read-only)
TASK_ROOT = "/opt/rsi-openevolve"
COMPAT_DIR = Path(__file__).with_name("openevolve_compat")
DEFAULT_TIMEOUT = 300.0  # OpenEvolve's evaluator.timeout default
DEFAULT_THRESHOLDS = (0.5, 0.75, 0.9)  # OpenEvolve's evaluator.cascade_thresholds default
MAX_TASK_BYTES = 64 << 20
MAX_TASK_ENTRIES = 10_000
_IGNORED = ("__pycache__", ".git", "*.pyc", "openevolve_output")


class OpenEvolveTaskError(ValueError):
    """An OpenEvolve task directory is unusable; the message names the file and what is wrong."""


@dataclass(frozen=True)
class EvolveBlock:
    """A program split at its evolve block: ``prefix`` (through the START marker's line), the block,
    ``suffix`` (from the END marker's line). ``prefix + block + suffix`` is the program."""

    prefix: str
    block: str
    suffix: str

    @property
    def program(self) -> str:
        return self.prefix + self.block + self.suffix

    def with_block(self, block: str) -> str:
        """The program with its evolve block replaced (the text around it unchanged)."""
        if block and not block.endswith("\n"):
            block += "\n"
        return self.prefix + block + self.suffix


def split_evolve_block(text: str, source: str = "program") -> EvolveBlock:
    """The first ``# EVOLVE-BLOCK-START`` ... ``# EVOLVE-BLOCK-END`` block of ``text``;
    :class:`OpenEvolveTaskError` naming ``source`` when the markers are missing or out of order."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, s in enumerate(lines) if s.strip().startswith(START)), None)
    if start is None:
        raise OpenEvolveTaskError(f"{source}: no '{START}' marker line (only the evolve block is edited)")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].strip().startswith(END)), None)
    if end is None:
        raise OpenEvolveTaskError(f"{source}: '{START}' at line {start + 1} has no '{END}' line after it")
    return EvolveBlock("".join(lines[: start + 1]), "".join(lines[start + 1 : end]), "".join(lines[end:]))


@dataclass(frozen=True)
class EvaluatorSettings:
    """The ``evaluator:`` section of the directory's ``config.yaml`` that applies here."""

    timeout: float = DEFAULT_TIMEOUT
    cascade_evaluation: bool = True
    cascade_thresholds: tuple[float, ...] = DEFAULT_THRESHOLDS


def read_settings(path: Path) -> EvaluatorSettings:
    """``config.yaml``'s ``evaluator:`` timeout and cascade settings (defaults when the file or a key is absent)."""
    if not path.is_file():
        return EvaluatorSettings()
    import yaml

    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise OpenEvolveTaskError(f"{path}: cannot parse: {e}") from None
    ev = data.get("evaluator") if isinstance(data, dict) else None
    if ev is None:
        return EvaluatorSettings()
    if not isinstance(ev, dict):
        raise OpenEvolveTaskError(f"{path}: evaluator: must be a mapping")
    timeout = ev.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 86400:
        raise OpenEvolveTaskError(f"{path}: evaluator.timeout: must be a number of seconds in (0, 86400]")
    cascade = ev.get("cascade_evaluation", True)
    if not isinstance(cascade, bool):
        raise OpenEvolveTaskError(f"{path}: evaluator.cascade_evaluation: must be true or false")
    th = ev.get("cascade_thresholds", list(DEFAULT_THRESHOLDS))
    if not isinstance(th, list) or not all(
        isinstance(t, (int, float)) and not isinstance(t, bool) for t in th
    ):
        raise OpenEvolveTaskError(f"{path}: evaluator.cascade_thresholds: must be a list of numbers")
    return EvaluatorSettings(float(timeout), cascade, tuple(float(t) for t in th))


def _ignored(name: str) -> bool:
    return any(fnmatch.fnmatch(name, pat) for pat in _IGNORED)


def _walk(root: Path, copy_to: Path | None = None, digest: dict[str, str] | None = None) -> int:
    """Walk the task directory without following anything: every entry must be a regular file or a
    directory (caches left out); a symbolic link (to a file, to a directory, a loop), a FIFO, a
    socket or a device is refused with :class:`OpenEvolveTaskError` naming it. Directories are
    opened relative to their parent's descriptor with ``O_NOFOLLOW``, so an entry swapped for a link
    after the check is refused too. ``copy_to``: copy what is walked there (folders 0700, files
    0600); ``digest``: fill in each file's sha256. Returns the bytes walked (at most
    :data:`MAX_TASK_BYTES`, in at most :data:`MAX_TASK_ENTRIES` entries)."""
    total, entries = 0, 0
    flags = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)

    def refuse(rel: str, why: str) -> OpenEvolveTaskError:
        return OpenEvolveTaskError(f"{root / rel}: {why}; a task directory is copied, never followed")

    def walk(dir_fd: int, rel: str, dst: Path | None) -> None:
        nonlocal total, entries
        for name in sorted(os.listdir(dir_fd)):
            if _ignored(name):
                continue
            r = f"{rel}{name}"
            entries += 1
            if entries > MAX_TASK_ENTRIES:
                raise OpenEvolveTaskError(f"{root}: more than {MAX_TASK_ENTRIES} entries")
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                try:
                    target = os.readlink(name, dir_fd=dir_fd)
                except OSError:
                    target = "?"
                raise refuse(r, f"a symbolic link (to {target})")
            if stat.S_ISDIR(st.st_mode):
                fd = os.open(name, flags | os.O_DIRECTORY, dir_fd=dir_fd)
                try:
                    sub = None
                    if dst is not None:
                        sub = dst / name
                        os.mkdir(sub, 0o700)
                    walk(fd, r + "/", sub)
                finally:
                    os.close(fd)
                continue
            if not stat.S_ISREG(st.st_mode):
                raise refuse(r, "not a regular file or a directory")
            try:
                fd = os.open(name, flags | os.O_NONBLOCK, dir_fd=dir_fd)
            except OSError as e:  # ELOOP: swapped for a link since the stat
                raise refuse(r, f"cannot be opened as a file ({e.strerror})") from None
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise refuse(r, "not a regular file")
                h = hashlib.sha256() if digest is not None else None
                out = os.open(dst / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600) if dst else -1
                try:
                    while chunk := os.read(fd, 1 << 20):
                        total += len(chunk)
                        if total > MAX_TASK_BYTES:
                            raise OpenEvolveTaskError(
                                f"{root}: more than {MAX_TASK_BYTES} bytes; the sandbox copy holds at most that"
                            )
                        if h is not None:
                            h.update(chunk)
                        if out >= 0:
                            os.write(out, chunk)
                finally:
                    if out >= 0:
                        os.close(out)
                if h is not None and digest is not None:
                    digest[r] = h.hexdigest()
            finally:
                os.close(fd)

    top = os.open(os.path.realpath(root), flags | os.O_DIRECTORY)  # the root as named; nothing under it
    try:
        walk(top, "", copy_to)
    finally:
        os.close(top)
    return total


def task_digest(root: Path) -> dict[str, str]:
    """sha256 of every file of the task directory (relative path → hex), caches left out; a link or
    a special file is refused (see :func:`_walk`)."""
    out: dict[str, str] = {}
    _walk(root, digest=out)
    return dict(sorted(out.items()))


_STAGED: dict[tuple[str, str], tuple[Path, int]] = {}  # (dir, digest) -> (staged copy, pid that made it)
_CLEANUP_PID: list[int] = []
_STAGE_PREFIX = "rsi-openevolve-"


def _cleanup_staged() -> None:
    """Remove the staged copies this process made (never a parent's, after a fork)."""
    for key, (path, pid) in list(_STAGED.items()):
        if pid == os.getpid():
            shutil.rmtree(path, ignore_errors=True)
            del _STAGED[key]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def clean_stale_stages(tmp: str | None = None) -> list[Path]:
    """Remove the staged copies left by processes that are gone (a run killed with SIGKILL runs no
    exit handler): folders ``rsi-openevolve-<pid>-*`` in the temp folder, real directories owned by
    this user (or, as root, by the sandbox's), whose ``<pid>`` no longer exists. Returns them."""
    base = Path(tmp or tempfile.gettempdir())
    owners = {os.geteuid()} | ({SANDBOX_UID} if os.geteuid() == 0 else set())
    removed = []
    for p in base.glob(f"{_STAGE_PREFIX}*-*"):
        pid_s = p.name[len(_STAGE_PREFIX) :].split("-", 1)[0]
        if not pid_s.isdigit() or int(pid_s) == os.getpid() or _alive(int(pid_s)):
            continue
        try:
            st = p.lstat()
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_uid in owners:
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p)
    return removed


def _register_cleanup() -> None:
    """At exit of this process: atexit for a normal interpreter, a multiprocessing finalizer for a
    process-pool worker (which leaves through ``os._exit`` and runs no atexit handler). Once per
    process, first removing the copies that processes killed earlier left behind."""
    if _CLEANUP_PID and _CLEANUP_PID[0] == os.getpid():
        return
    _CLEANUP_PID[:] = [os.getpid()]
    import multiprocessing.util

    clean_stale_stages()
    atexit.register(_cleanup_staged)
    multiprocessing.util.Finalize(None, _cleanup_staged, exitpriority=10)


def _hand_to_sandbox_user(stage: Path) -> None:
    """As root, give the copy to the sandbox's user (:data:`SANDBOX_UID`: bwrap and plan ``none``
    run the evaluator as that host user); otherwise it stays this user's. Folders 0700, files 0600."""
    uid = SANDBOX_UID if os.geteuid() == 0 else None
    for dirpath, dirs, files in os.walk(stage):
        for name in [*dirs, *files]:
            path = os.path.join(dirpath, name)
            os.chmod(path, 0o700 if name in dirs else 0o600, follow_symlinks=False)
            if uid is not None:
                os.lchown(path, uid, uid)
    os.chmod(stage, 0o700)
    if uid is not None:
        os.lchown(stage, uid, uid)


def stage_task(root: Path, digest: str) -> Path:
    """A private copy of the task directory (``task/``) and the compatibility package (``compat/``)
    in a fresh temp folder ``rsi-openevolve-<pid>-*``, made once per process and directory version:
    the sandbox binds it read-only, so the candidate cannot touch the original, and bwrap, which
    resolves bind sources as the sandbox's user, reaches it even when the original's folder is
    unreachable (e.g. a pytest tmp_path). Links and special files are refused, never followed
    (:func:`_walk`); the size cap counts what is copied. Readable only by the sandbox's user (see
    :func:`_hand_to_sandbox_user`); removed when this process exits, and by the next process's
    :func:`clean_stale_stages` when it was killed."""
    key = (str(root), digest)
    if key in _STAGED and _STAGED[key][0].is_dir():
        return _STAGED[key][0]
    _register_cleanup()
    stage = Path(tempfile.mkdtemp(prefix=f"{_STAGE_PREFIX}{os.getpid()}-"))
    _STAGED[key] = (stage, os.getpid())  # registered first: removed at exit even if the copy fails
    try:
        for src, name in ((root, "task"), (COMPAT_DIR, "compat")):
            os.mkdir(stage / name, 0o700)
            _walk(src, stage / name)
        _hand_to_sandbox_user(stage)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        del _STAGED[key]
        raise
    return stage


def openevolve_isolation(stage: Path, mode: str | None = None) -> sandbox.IsolationGrant:
    """The sandbox plan for OpenEvolve evaluators, through the choke point: the probed plan for
    numpy and scipy plus a read-only bind of the staged task directory at :data:`TASK_ROOT`; the
    stricter of ``mode`` and ``RSI_WORKBENCH_SANDBOX_MODE`` refuses a weaker plan."""
    purpose = "OpenEvolve evaluators"
    base = sandbox.obtain_isolation(PACKAGES, mode=mode, purpose=purpose).isolation
    iso = dataclasses.replace(base, binds=(*base.binds, (str(stage), TASK_ROOT)))
    return sandbox.obtain_isolation(PACKAGES, mode=mode, purpose=purpose, isolation=iso)


def evaluation_limits(timeout: float, stages: int) -> Limits:
    """One evaluation's limits: ``stages`` × ``timeout`` of wall clock plus 10 s to start, CPU twice
    that per process (RLIMIT_CPU counts each process on its own), 2 GiB of address space."""
    wall = timeout * max(1, stages) + 10.0
    cpu = max(2, int(2 * wall) + 1)
    return Limits(
        cpu_soft_s=cpu,
        cpu_hard_s=cpu + 1,
        address_space_bytes=2 << 30,
        file_size_bytes=16 << 20,
        open_files=256,
        wall_s=wall,
        session_wall_s=wall,
        output_cap_bytes=32 * 1024,
    )


def _real(v: Any) -> tuple[float | None, str]:
    """``(float, "")`` for a finite real number (an int or a float, never a bool); otherwise
    ``(None, what it is)``, e.g. ``"nan"``, ``"an int beyond float range"``, ``"a str ('0')"``."""
    if isinstance(v, bool):
        return None, f"a bool ({v})"
    if isinstance(v, int):
        try:
            return float(v), ""
        except OverflowError:
            return None, "an int beyond float range"
    if isinstance(v, float):
        return (v, "") if math.isfinite(v) else (None, repr(v).strip("'"))
    if v is None:
        return None, "None"
    if isinstance(v, str) and v.startswith("<an int of ") and v.endswith(" bits>"):  # the harness's note
        return None, f"an int beyond float range ({v[11:-1]})"
    shown = f" ({str(v)[:40]!r})" if isinstance(v, str) else ""
    return None, f"a {type(v).__name__}{shown}"


def _number(v: Any) -> float | None:
    """A finite real number as a float, else None (never raises: a huge int is None too)."""
    return _real(v)[0]


def _is_numeric(v: Any) -> bool:
    """A metric OpenEvolve would average: an int or a float (not a bool), finite or not."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _validity(v: Any) -> str:
    """ "" when a ``validity`` metric says valid, else the reason the node is invalid. Accepted forms:
    ``True`` / ``False`` and the numbers 1 / 0 (what OpenEvolve's own examples write, e.g.
    ``np.float64(1.0)``); anything else (``"0"``, ``0.5``, NaN, ``None``) makes the node invalid."""
    if v is True or (_is_numeric(v) and _number(v) == 1.0):
        return ""
    if v is False or (_is_numeric(v) and _number(v) == 0.0):
        return "the evaluator's validity metric is 0"
    what = _real(v)[1] or repr(v)
    return f"validity is {what}; accepted: true/false or 1/0"


def verdict(metrics: Any, artifacts: dict[str, Any] | None = None) -> Evaluation:
    """The node's verdict from an evaluator's metrics; never raises, whatever the evaluator returned.

    ``score`` is ``combined_score`` when the metrics have one, else the mean of the numeric metrics
    but ``error`` (OpenEvolve's fallback; strings, booleans and other non-numbers are skipped as
    OpenEvolve skips them). Invalid (a weak result, not a failure), with a reason naming what was
    returned: metrics that are not a dict; a ``combined_score`` (or, without one, a numeric metric)
    that is not a finite real number (NaN, ±inf, an int beyond float range, a string, a bool: score
    None); no numeric metric; an ``error`` metric (how OpenEvolve evaluators report a candidate that
    failed); a ``validity`` metric that is not ``True`` or 1 (see :func:`_validity`)."""
    arts = artifacts if isinstance(artifacts, dict) else {}
    if not isinstance(metrics, dict):
        return Evaluation(None, None, False, f"metrics is a {type(metrics).__name__}, not a dict")
    if "combined_score" in metrics:
        score, why = _real(metrics["combined_score"])
        if score is None:
            return Evaluation(None, None, False, f"combined_score is {why}")
    else:
        nums = []
        for k, v in metrics.items():
            if k == "error" or not _is_numeric(v):
                continue
            x, why = _real(v)
            if x is None:
                return Evaluation(None, None, False, f"metric {str(k)[:60]!r} is {why} (no combined_score)")
            nums.append(x)
        if not nums:
            return Evaluation(None, None, False, "the evaluator returned no numeric metric")
        score = sum(x / len(nums) for x in nums)  # no overflow for finite metrics
        if not math.isfinite(score):
            return Evaluation(None, None, False, f"the mean of the numeric metrics is {score}")
    if "error" in metrics:
        detail = metrics["error"] if isinstance(metrics["error"], str) else arts.get("error", "")
        detail = detail or arts.get("stderr", "") or arts.get("error_message", "")
        return Evaluation(
            score, score, False, f"the evaluator reported an error: {str(detail)[:300]}".rstrip(": ")
        )
    if "validity" in metrics and (why := _validity(metrics["validity"])):
        return Evaluation(score, score, False, why)
    return Evaluation(score, score, True)


@dataclass
class OpenEvolveTask:
    """An OpenEvolve task directory as a discovery task (``score`` = the evaluator's, higher is
    better). Satisfies :class:`~rsi_workbench.domains.math.DiscoveryTask`: ``attempt`` is the
    non-LLM baseline move (:func:`~rsi_workbench.domains.openevolve.mutate.mutate_block`)."""

    root: Path
    settings: EvaluatorSettings = field(default_factory=EvaluatorSettings)
    mode: str | None = None
    initial: EvolveBlock = field(init=False)
    stages: int = field(init=False)
    digest: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        self.root = Path(self.root).resolve()
        check_task_dir(self.root)
        self.initial = split_evolve_block(
            (self.root / "initial_program.py").read_text(), str(self.root / "initial_program.py")
        )
        text = (self.root / "evaluator.py").read_text()
        cascade = self.settings.cascade_evaluation and "def evaluate_stage1" in text
        self.stages = 1 + cascade * sum(f"def evaluate_stage{i}" in text for i in (2, 3))
        self.digest = task_digest(self.root)

    @property
    def name(self) -> str:
        return f"openevolve:{self.root.name}"

    @property
    def direction(self) -> str:
        return "max"

    @property
    def best_known(self) -> float | None:
        return None

    @property
    def seed_program(self) -> str:
        return self.initial.program

    def record(self) -> dict[str, Any]:
        """What a run stores about the task: the directory, its files' sha256, the evaluator settings."""
        s = self.settings
        return {
            "dir": str(self.root),
            "files": self.digest,
            "timeout": s.timeout,
            "cascade_evaluation": s.cascade_evaluation,
            "cascade_thresholds": list(s.cascade_thresholds),
            "stages": self.stages,
        }

    def staged(self) -> Path:
        """This process's staged copy of the directory (see :func:`stage_task`)."""
        return stage_task(self.root, hashlib.sha256(repr(sorted(self.digest.items())).encode()).hexdigest())

    def isolation_grant(self) -> sandbox.IsolationGrant:
        """The plan evaluations run under (through the choke point; refused below the mode)."""
        return openevolve_isolation(self.staged(), self.mode)

    def split(self, program: str) -> EvolveBlock:
        """``program`` split at its evolve block; a program whose text around the block differs from
        the initial program's is refused (only the block may change)."""
        blk = split_evolve_block(program)
        if (blk.prefix, blk.suffix) != (self.initial.prefix, self.initial.suffix):
            raise OpenEvolveTaskError(
                "program: the text outside the evolve block differs from initial_program.py"
            )
        return blk

    def evaluate_program(
        self, program: str, *, move: str = "program", info: dict[str, Any] | None = None
    ) -> AttemptResult:
        """Run the evaluator on ``program`` in the sandbox; the verdict is derived on the host.
        Timeout → ``fail_class="timeout"``; an evaluator that raised or a sandbox failure →
        ``"error"``; a return value that is not a dict / EvaluationResult of metrics, or a score that
        is not a finite number → ``"invalid"`` with the reason (:func:`verdict`); never raises for
        the candidate."""
        stage = self.staged()
        iso: Isolation = openevolve_isolation(stage, self.mode).isolation
        if iso.plan == "bwrap":
            task_dir, compat, pkg_path = f"{TASK_ROOT}/task", f"{TASK_ROOT}/compat", [PACKAGE_ROOT]
        else:  # plan none: the staged copy at its host path (no bind)
            task_dir, compat = str(stage / "task"), str(stage / "compat")
            pkg_path = sorted({str(Path(d).parent) for d, _ in package_dirs(iso.packages, iso.interpreter)})
        s = self.settings
        args = [
            task_dir,
            compat,
            program,
            s.timeout,
            s.cascade_evaluation,
            list(s.cascade_thresholds),
            pkg_path,
        ]
        t0 = time.perf_counter()
        res = sandbox.call(
            HARNESS, "evaluate_task", args, limits=evaluation_limits(s.timeout, self.stages), isolation=iso
        )
        meta: dict[str, Any] = {**(info or {}), "sandbox_kind": res.kind, "stderr": res.stderr[-500:]}
        seconds = time.perf_counter() - t0
        if res.kind == "timeout":
            meta["stage"] = "?"
            return AttemptResult(program, None, f"timeout: {res.message}", "timeout", move, seconds, meta)
        if res.kind != "value" or not isinstance(res.value, dict):
            detail = res.message or res.kind
            return AttemptResult(
                program, None, f"evaluation failed: {detail}"[:500], "error", move, seconds, meta
            )
        out = res.value
        meta.update(
            stage=out.get("stage", ""),
            stages=out.get("stages", []),
            metrics=values.encode(_jsonable(out.get("metrics", {}))),
            artifacts=values.encode(_jsonable(out.get("artifacts", {}))),
            compat=bool(out.get("compat")),
        )
        if out.get("outcome") in ("timeout", "error"):
            err = out.get("error") or ["Error", "", ""]
            text = f"{out['outcome']} in {out.get('stage')}: {err[0]}: {err[1]}"[:500]
            meta["traceback"] = str(err[2])[-1500:]
            return AttemptResult(program, None, text, str(out["outcome"]), move, seconds, meta)
        arts: dict[str, Any] = out["artifacts"] if isinstance(out.get("artifacts"), dict) else {}
        if out.get("invalid"):  # a stage returned no dict of metrics
            ev = Evaluation(None, None, False, str(out["invalid"])[:300])
        else:
            ev = verdict(out.get("metrics"), arts)
        return AttemptResult(program, ev, "", None if ev.valid else "invalid", move, seconds, meta)

    def evaluate(self, solution: Any) -> Evaluation:
        """The evaluator's verdict on a program (``solution`` is the program text)."""
        res = self.evaluate_program(str(solution))
        return res.evaluation or Evaluation(None, None, False, res.error)

    def attempt(self, parent_state: Any, seed: int) -> AttemptResult:
        """The non-LLM baseline move: mutate the parent's evolve block (numeric literals and
        operators, seeded) and evaluate the child; ``info['mutations']`` records what changed."""
        from rsi_workbench.domains.openevolve.mutate import mutate_block

        parent = self.initial if parent_state is None else self.split(str(parent_state))
        block, changes = mutate_block(parent.block, seed, prefix=parent.prefix, suffix=parent.suffix)
        return self.evaluate_program(parent.with_block(block), move="mutate", info={"mutations": changes})


def _jsonable(x: Any) -> Any:
    """Plain data (as decoded from the sandbox) with tuples as lists, for :func:`values.encode`."""
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    return x if x is None or isinstance(x, (bool, int, float, str)) else repr(x)


def check_task_dir(root: Path) -> None:
    """Refuse an unusable task directory with a message naming the file: the folder, any entry
    that is a symbolic link or not a regular file or folder (:func:`_walk`), ``initial_program.py``
    with its markers, ``evaluator.py`` defining ``evaluate``, ``config.yaml``'s
    evaluator section, and a total size the sandbox copy can hold."""
    import ast

    if not root.is_dir():
        raise OpenEvolveTaskError(f"{root}: not a directory (an OpenEvolve task directory)")
    _walk(root)  # no links, no special files, within the size cap: before any file is read
    init, ev = root / "initial_program.py", root / "evaluator.py"
    if not init.is_file():
        raise OpenEvolveTaskError(f"{init}: missing (an OpenEvolve task directory holds initial_program.py)")
    if not ev.is_file():
        raise OpenEvolveTaskError(f"{ev}: missing (an OpenEvolve task directory holds evaluator.py)")
    split_evolve_block(init.read_text(), str(init))
    try:
        tree = ast.parse(ev.read_text(), str(ev))
    except SyntaxError as e:
        raise OpenEvolveTaskError(f"{ev}: line {e.lineno}: syntax error: {e.msg}") from None
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    if "evaluate" not in names:
        raise OpenEvolveTaskError(f"{ev}: defines no top-level function evaluate(program_path)")
    read_settings(root / "config.yaml")


def load_task(
    root: str | os.PathLike[str], *, timeout: float | None = None, mode: str | None = None
) -> OpenEvolveTask:
    """The task of an OpenEvolve directory; ``timeout`` overrides ``config.yaml``'s evaluator timeout."""
    r = Path(root)
    check_task_dir(r.resolve() if r.exists() else r)
    settings = read_settings(r / "config.yaml")
    if timeout is not None:
        settings = dataclasses.replace(settings, timeout=float(timeout))
    return OpenEvolveTask(r, settings, mode)
