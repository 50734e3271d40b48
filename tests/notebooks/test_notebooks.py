"""Every notebook's structure (cleared outputs, a documented ``parameters`` cell); where no browser is
installed, every notebook on its defaults under papermill (else test_notebooks_in_lab.py runs them)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@pytest.fixture(scope="session")
def python3_kernel() -> str:
    """Make sure a ``python3`` kernelspec exists for this interpreter (installs it into sys.prefix if not)."""
    from jupyter_client.kernelspec import KernelSpecManager

    if "python3" not in KernelSpecManager().find_kernel_specs():
        subprocess.run([sys.executable, "-m", "ipykernel", "install", "--sys-prefix"], check=True)
    return "python3"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_structure(path: Path) -> None:
    """Outputs cleared; one cell tagged ``parameters`` documenting ``name: type = value  # meaning``; a smoke flag."""
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code), (
        f"{path.name}: clear outputs"
    )
    tagged = [c for c in code if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, f"{path.name}: exactly one cell tagged `parameters`"
    lines = [ln for ln in "".join(tagged[0]["source"]).splitlines() if ln.strip() and not ln.startswith("#")]
    assert lines and all(":" in ln.split("=")[0] and "  # " in ln for ln in lines), lines
    assert any(ln.startswith("smoke: bool = ") for ln in lines)


@pytest.mark.slow
@pytest.mark.skipif(
    Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists(),
    reason="test_notebooks_in_lab.py runs every notebook in JupyterLab (Run All in Chromium)",
)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_under_papermill(path: Path, python3_kernel: str, tmp_path: Path) -> None:
    """Without a browser: the notebook on its defaults, from its own folder (as JupyterLab runs it)."""
    import papermill as pm

    out = tmp_path / path.name
    pm.execute_notebook(
        str(path),
        str(out),
        kernel_name=python3_kernel,
        cwd=str(path.parent),
        progress_bar=False,
        execution_timeout=300,
    )
    nb = json.loads(out.read_text())
    errors = [o for c in nb["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
