"""A built wheel carries the dataset registry: installed alone (no checkout, no site-packages), it lists it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _source_copy(dest: Path) -> Path:
    """What the wheel is built from (pyproject, README, the package, its widgets and the dataset registry), outside the checkout,
    so the build writes no build/ or egg-info into the working tree other tests read."""
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    dest.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, dest / name)
    shutil.copytree(REPO / "rsi_workbench", dest / "rsi_workbench", symlinks=True, ignore=skip)
    shutil.copytree(REPO / "widgets", dest / "widgets", ignore=skip)  # rsi_workbench/widgets -> ../widgets
    shutil.copytree(
        REPO / "datasets", dest / "datasets", ignore=skip
    )  # rsi_workbench/datasets.json -> ../datasets/registry.json
    return dest


def test_an_installed_wheel_lists_the_dataset_registry(tmp_path: Path) -> None:
    src = _source_copy(tmp_path / "src")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    wheels = tmp_path / "wheels"
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", wheels, src], check=True, cwd=src
    )
    (wheel,) = wheels.glob("rsi_workbench-*.whl")
    target = tmp_path / "target"
    subprocess.run([*pip, "install", "--no-deps", "--no-compile", "--target", target, wheel], check=True)
    # -I -S: no PYTHONPATH, no site-packages (so no editable install of the checkout); only the target.
    program = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import rsi_workbench.datasets as d; "
        "print(json.dumps({'file': d.__file__, 'names': sorted(d.registry()), "
        "'url': d.spec('humaneval').url}))"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", program, str(target)],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        check=True,
    )
    got = json.loads(out.stdout)
    assert Path(got["file"]).is_relative_to(target)
    assert {"humaneval", "humanevalpack-python", "perera2018-suzuki", "sklearn-iris"} <= set(got["names"])
    assert got["url"].startswith("https://")
    assert not (REPO / "datasets" / "manifest.json").exists()  # one registry, inside the package
