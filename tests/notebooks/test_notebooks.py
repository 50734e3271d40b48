"""Every notebook runs headless under papermill with ``smoke=True`` and kernel ``python3``; a failing cell fails."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# notebook number -> the shared real run (fixture) it opens in the test
RUN_FOR = {
    "01": "code_repair_run",
    "02": "code_repair_run",
    "03": "dreaming_run",
    "04": "discovery_run",
    "05": "rsiagent_run",
}
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
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_under_papermill(path: Path, python3_kernel: str, tmp_path: Path, request) -> None:
    import papermill as pm

    out = tmp_path / path.name
    params: dict[str, object] = {"smoke": True}
    fixture = RUN_FOR.get(path.stem[:2])
    if fixture:  # open the shared real run instead of making another one
        params["run"] = str(request.getfixturevalue(fixture))
    pm.execute_notebook(
        str(path),
        str(out),
        parameters=params,
        kernel_name=python3_kernel,
        cwd=str(REPO),
        progress_bar=False,
        execution_timeout=300,
    )
    nb = json.loads(out.read_text())
    errors = [o for c in nb["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
