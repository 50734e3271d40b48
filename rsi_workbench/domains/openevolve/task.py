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
from rsi_workbench.sandbox.plan import PACKAGE_ROOT, package_dirs

START, END = "# EVOLVE-BLOCK-START", "# EVOLVE-BLOCK-END"
#: the packages an evaluator may import inside the sandbox (besides the standard library)
PACKAGES = ("numpy", "scipy")
#: where the staged copy of the task directory is bound inside the sandbox (read-only)
TASK_ROOT = "/opt/rsi-openevolve"
COMPAT_DIR = Path(__file__).with_name("openevolve_compat")
DEFAULT_TIMEOUT = 300.0  # OpenEvolve's evaluator.timeout default
DEFAULT_THRESHOLDS = (0.5, 0.75, 0.9)  # OpenEvolve's evaluator.cascade_thresholds default
MAX_TASK_BYTES = 64 << 20
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


def task_digest(root: Path) -> dict[str, str]:
    """sha256 of every file of the task directory (relative path → hex), caches left out."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if p.is_file() and not any(part in ("__pycache__", ".git") for part in rel.parts):
            out[str(rel)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


_STAGED: dict[tuple[str, str], tuple[Path, int]] = {}  # (dir, digest) -> (staged copy, pid that made it)
_CLEANUP_PID: list[int] = []


def _cleanup_staged() -> None:
    """Remove the staged copies this process made (never a parent's, after a fork)."""
    for key, (path, pid) in list(_STAGED.items()):
        if pid == os.getpid():
            shutil.rmtree(path, ignore_errors=True)
            del _STAGED[key]


def _register_cleanup() -> None:
    """At exit of this process: atexit for a normal interpreter, a multiprocessing finalizer for a
    process-pool worker (which leaves through ``os._exit`` and runs no atexit handler)."""
    if _CLEANUP_PID and _CLEANUP_PID[0] == os.getpid():
        return
    _CLEANUP_PID[:] = [os.getpid()]
    import multiprocessing.util

    atexit.register(_cleanup_staged)
    multiprocessing.util.Finalize(None, _cleanup_staged, exitpriority=10)


def stage_task(root: Path, digest: str) -> Path:
    """A world-readable copy of the task directory (``task/``) and the compatibility package
    (``compat/``) in a fresh temp folder, made once per process and directory version: the sandbox
    binds it read-only (bwrap resolves bind sources as an unprivileged user, so the original's
    folder may be unreachable, e.g. a pytest tmp_path), and the candidate cannot touch the original."""
    key = (str(root), digest)
    if key in _STAGED and _STAGED[key][0].is_dir():
        return _STAGED[key][0]
    _register_cleanup()
    stage = Path(tempfile.mkdtemp(prefix="rsi-openevolve-"))
    shutil.copytree(root, stage / "task", ignore=shutil.ignore_patterns(*_IGNORED), symlinks=False)
    shutil.copytree(COMPAT_DIR, stage / "compat", ignore=shutil.ignore_patterns(*_IGNORED))
    for dirpath, _dirs, filenames in os.walk(stage):
        os.chmod(dirpath, 0o755)
        for f in filenames:
            os.chmod(os.path.join(dirpath, f), stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH)
    _STAGED[key] = (stage, os.getpid())
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


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def verdict(metrics: dict[str, Any], artifacts: dict[str, Any] | None = None) -> Evaluation:
    """The node's verdict from an evaluator's metrics. ``score`` is ``combined_score`` when it is a
    number, else the mean of the numeric metrics but ``error`` (OpenEvolve's fallback). Invalid
    (a weak result, not a failure): no numeric metric, a non-finite score (score None), an ``error``
    metric (how OpenEvolve evaluators report a candidate that failed), or ``validity`` 0."""
    arts = artifacts or {}
    score = _number(metrics.get("combined_score"))
    if score is None:
        nums = [x for k, v in metrics.items() if k != "error" and (x := _number(v)) is not None]
        score = sum(nums) / len(nums) if nums else None
    if score is None:
        return Evaluation(None, None, False, "the evaluator returned no numeric metric")
    if not math.isfinite(score):
        return Evaluation(None, None, False, f"the evaluator's score is {score}")
    if "error" in metrics:
        detail = metrics["error"] if isinstance(metrics["error"], str) else arts.get("error", "")
        detail = detail or arts.get("stderr", "") or arts.get("error_message", "")
        return Evaluation(
            score, score, False, f"the evaluator reported an error: {str(detail)[:300]}".rstrip(": ")
        )
    validity = metrics.get("validity")
    if validity is not None and (_number(validity) == 0.0 or validity is False):
        return Evaluation(score, score, False, "the evaluator's validity metric is 0")
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
        Timeout → ``fail_class="timeout"``; an evaluator that raised, returned something else than a
        dict / EvaluationResult, or a sandbox failure → ``"error"``; never raises for the candidate."""
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
        metrics: dict[str, Any] = out["metrics"] if isinstance(out.get("metrics"), dict) else {}
        arts: dict[str, Any] = out["artifacts"] if isinstance(out.get("artifacts"), dict) else {}
        ev = verdict(metrics, arts)
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
    """Refuse an unusable task directory with a message naming the file: the folder,
    ``initial_program.py`` with its markers, ``evaluator.py`` defining ``evaluate``, ``config.yaml``'s
    evaluator section, and a total size the sandbox copy can hold."""
    import ast

    if not root.is_dir():
        raise OpenEvolveTaskError(f"{root}: not a directory (an OpenEvolve task directory)")
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
    size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    if size > MAX_TASK_BYTES:
        raise OpenEvolveTaskError(f"{root}: {size} bytes; the sandbox copy holds at most {MAX_TASK_BYTES}")


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
