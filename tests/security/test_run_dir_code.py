"""Nothing a run directory contains runs code on the host when it is viewed or resumed.

A run directory can come from anyone (a colleague's upload, an archive). ``report`` and ``resume``
used to import whatever module its ``config.json`` named (``{"experiment": "this"}`` printed the
Zen of Python; ``"venv.__main__"`` made a virtual environment). Here each planted name, a module
with import-time side effects on a planted ``python_path``, a selection rule written as an import
path, and a predictor artifact whose unpickling would write a file, is refused (exit 2, the message
naming the path and ``--trust-plugin``) and nothing is written: the run directory and the working
directory hash the same before and after, and no marker file appears. ``export``, ``runs`` and
``query`` import nothing a run names. Every command runs in a subprocess from a scratch working
directory, so these pass as root and as ``nobody`` (tests/security/as_nobody.sh).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "protocol_domain" / "config.yaml"
ZEN = "Beautiful is better than ugly"  # what importing `this` prints
SIDE = "rsi_side_effect_mod"  # the planted module: importing it writes markers/<SIDE>


def snapshot(root: Path) -> dict[str, str]:
    """Every file's sha256 and every folder under ``root`` (new, removed or changed ones show)."""
    out: dict[str, str] = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        out[rel] = "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def plant(root: Path, markers: Path) -> Path:
    """A folder holding :data:`SIDE`, a module that leaves ``markers/<SIDE>`` when imported (and
    would be a usable environment, policy and rule if anything got as far as calling it)."""
    folder = root / "plant"
    folder.mkdir()
    (folder / f"{SIDE}.py").write_text(
        "import pathlib\n"
        f"pathlib.Path({str(markers)!r}, {SIDE!r}).write_text('imported\\n')\n"
        "class Env:\n    pass\n"
        "class Rule:\n    name, kind = 'r', 'utility'\n"
        "    def rank(self, candidates, rng):\n        return []\n"
        "Config = run_experiment = None\n"
        "def report(path):\n    return 'planted report'\n"
    )
    return folder


def cli(*args: str, cwd: Path, plant_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{plant_dir}"}
    return subprocess.run(
        [sys.executable, "-m", "rsi_workbench", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def protocol_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The own-domain example run once (a real ``experiment: protocol`` run with events and artifacts)."""
    root = tmp_path_factory.mktemp("example")
    out = root / "run"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    res = subprocess.run(
        [sys.executable, "-m", "rsi_workbench", "run", str(EXAMPLE), "--out", str(out)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return out


@pytest.fixture
def scene(tmp_path: Path) -> dict[str, Path]:
    markers = tmp_path / "markers"
    markers.mkdir()
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    return {"markers": markers, "cwd": cwd, "plant": plant(tmp_path, markers), "tmp": tmp_path}


def assert_refused(res: subprocess.CompletedProcess[str], path: str) -> None:
    assert res.returncode == 2, (res.returncode, res.stdout[-2000:], res.stderr[-3000:])
    assert "Traceback" not in res.stderr, res.stderr[-3000:]
    assert f"--trust-plugin {path}" in res.stderr and repr(path) in res.stderr, res.stderr


def assert_untouched(scene: dict[str, Path], res: subprocess.CompletedProcess[str]) -> None:
    assert os.listdir(scene["markers"]) == [], "a module the run named was imported"
    assert ZEN not in res.stdout + res.stderr, "`this` was imported"


# -- the experiment kind ------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["this", "venv.__main__", SIDE, f"{SIDE}:Env"])
@pytest.mark.parametrize("command", ["report", "resume"])
def test_an_experiment_import_path_is_refused(scene: dict[str, Path], kind: str, command: str) -> None:
    run = scene["tmp"] / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"experiment": kind}))
    (run / "events.jsonl").write_text("")
    before = snapshot(run), snapshot(scene["cwd"])
    res = cli(command, str(run), cwd=scene["cwd"], plant_dir=scene["plant"])
    assert_refused(res, kind)
    assert_untouched(scene, res)
    assert (snapshot(run), snapshot(scene["cwd"])) == before
    assert not (run / "venv").exists() and not (scene["cwd"] / "venv").exists()


def test_an_unknown_kind_is_refused_without_importing(scene: dict[str, Path]) -> None:
    run = scene["tmp"] / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"experiment": "no such kind"}))
    res = cli("report", str(run), cwd=scene["cwd"], plant_dir=scene["plant"])
    assert res.returncode == 2 and "unknown kind" in res.stderr, res.stderr


def test_a_trusted_experiment_import_path_is_imported(scene: dict[str, Path]) -> None:
    """The flag is what lets it through."""
    run = scene["tmp"] / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"experiment": SIDE}))
    res = cli("report", str(run), "--trust-plugin", SIDE, cwd=scene["cwd"], plant_dir=scene["plant"])
    assert os.listdir(scene["markers"]) == [SIDE], res.stderr
    assert res.returncode == 0 and "planted report" in res.stdout, res.stderr


# -- a protocol run's components and selection rule ------------------------------------------------------
def planted_protocol_run(protocol_run: Path, scene: dict[str, Path], **change: object) -> Path:
    run = scene["tmp"] / "planted-run"
    shutil.copytree(protocol_run, run)
    cfg = json.loads((run / "config.json").read_text())
    cfg["python_path"] = [str(scene["plant"])]
    for field, value in change.items():
        if field == "rule":
            cfg["protocol"]["rule"] = value
        else:
            cfg[field] = value
    (run / "config.json").write_text(json.dumps(cfg))
    return run


@pytest.mark.parametrize(
    ("field", "change", "path", "trusted"),
    [
        ("environment.target", {"environment": {"target": f"{SIDE}:Env", "kwargs": {}}}, f"{SIDE}:Env", ()),
        # the example's own components trusted, the planted rule still refused
        ("protocol.rule", {"rule": f"{SIDE}:Rule"}, f"{SIDE}:Rule", ("--trust-plugin", "sgd_step_size")),
    ],
)
def test_protocol_components_and_rules_are_refused(
    protocol_run: Path,
    scene: dict[str, Path],
    field: str,
    change: dict[str, object],
    path: str,
    trusted: tuple[str, ...],
) -> None:
    run = planted_protocol_run(protocol_run, scene, **change)
    before = snapshot(run), snapshot(scene["cwd"])
    res = cli("resume", str(run), *trusted, cwd=scene["cwd"], plant_dir=scene["plant"])
    assert_refused(res, path)
    assert f"{field} names" in res.stderr and str(scene["plant"]) in res.stderr, res.stderr
    assert_untouched(scene, res)
    # report reads the run's events only: it prints the table and imports nothing
    res = cli("report", str(run), cwd=scene["cwd"], plant_dir=scene["plant"])
    assert res.returncode == 0 and res.stdout.startswith("protocol run"), res.stderr[-3000:]
    assert_untouched(scene, res)
    assert (snapshot(run), snapshot(scene["cwd"])) == before


def test_serve_live_refuses_untrusted_components(protocol_run: Path, scene: dict[str, Path]) -> None:
    run = planted_protocol_run(protocol_run, scene, environment=f"{SIDE}:Env")
    # an unfinished run (serve --live steps only those): drop the last cycle_finished
    lines = (run / "events.jsonl").read_text().splitlines(keepends=True)
    last = max(i for i, ln in enumerate(lines) if '"cycle_finished"' in ln)
    (run / "events.jsonl").write_text("".join(lines[:last]))
    res = cli("serve", str(run), "--live", "--port", "0", cwd=scene["cwd"], plant_dir=scene["plant"])
    assert_refused(res, f"{SIDE}:Env")
    assert_untouched(scene, res)


# -- artifacts are never unpickled ---------------------------------------------------------------------
class Payload:
    """Unpickling this calls ``Path(marker).write_text(...)``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, ...]:
        return (self.marker.write_text, ("unpickled\n",))


def test_a_pickled_predictor_artifact_is_refused(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from types import SimpleNamespace

    from rsi_workbench.domains.code_repair.predictor import load_predictor_bytes
    from rsi_workbench.records import RunError

    marker = tmp_path / "marker"
    buf = io.BytesIO()
    torch.save({"kind": Payload(marker), "models": {}}, buf)
    crafted = buf.getvalue()
    # the control: an unrestricted load would run it (so the refusal below is of a live payload)
    control = tmp_path / "control"
    cbuf = io.BytesIO()
    torch.save({"kind": Payload(control), "models": {}}, cbuf)
    torch.load(io.BytesIO(cbuf.getvalue()), weights_only=False)
    assert control.exists()
    with pytest.raises(RunError, match="refused to unpickle"):
        load_predictor_bytes(crafted, SimpleNamespace(tasks={}, feat=None))
    assert not marker.exists()


# -- export, runs and query import nothing a run names ---------------------------------------------------
def test_export_runs_and_query_import_nothing_a_run_names(protocol_run: Path, scene: dict[str, Path]) -> None:
    run = planted_protocol_run(
        protocol_run, scene, environment=f"{SIDE}:Env", policy=f"{SIDE}:Env", rule=f"{SIDE}:Rule"
    )
    other = scene["tmp"] / "runs" / "other"
    other.mkdir(parents=True)
    (other / "config.json").write_text(json.dumps({"experiment": SIDE}))
    (other / "events.jsonl").write_text("")
    shutil.move(str(run), scene["tmp"] / "runs" / "planted")
    root = scene["tmp"] / "runs"
    before = snapshot(root)
    html = scene["tmp"] / "out" / "report.html"
    commands = [
        ("export", str(root / "planted"), "--html", str(html)),
        ("runs", "list", "--root", str(root)),
        ("runs", "show", str(root / "planted")),
        ("runs", "show", str(other)),
        ("query", "SELECT kind, count(*) FROM events GROUP BY kind", "--root", str(root)),
    ]
    for args in commands:
        res = cli(*args, cwd=scene["cwd"], plant_dir=scene["plant"])
        assert res.returncode == 0, (args, res.stderr[-3000:])
        assert_untouched(scene, res)
    assert html.exists()
    assert snapshot(root) == before and snapshot(scene["cwd"]) == {}
