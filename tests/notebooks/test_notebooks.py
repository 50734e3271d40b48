"""Every notebook's structure (cleared outputs, a documented ``parameters`` cell); where no browser is
installed, every notebook on its defaults under papermill (else test_notebooks_in_lab.py runs them)."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
# A <script src=...> that is not a local file: a saved notebook's outputs must load nothing from the network.
NETWORK_SCRIPT = re.compile(r"<script[^>]*\ssrc\s*=\s*[\"']?(?:https?:)?//", re.IGNORECASE)


def _parameters_cell(path: Path) -> dict[str, str]:
    """The names and default values the notebook's ``parameters`` cell assigns (as Python reads them)."""
    import ast

    nb = json.loads(path.read_text())
    (cell,) = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    tree = ast.parse("".join(cell["source"]))
    return {
        node.target.id: ast.literal_eval(node.value)  # type: ignore[arg-type]
        for node in tree.body
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
    }


def network_scripts(nb: dict) -> list[str]:  # type: ignore[type-arg]
    """Every ``<script src=http...>`` in the notebook's outputs (text/html and the like)."""
    found = []
    for c in nb["cells"]:
        for o in c.get("outputs", []):
            for mime, data in o.get("data", {}).items():
                text = "".join(data) if isinstance(data, list) else data
                if isinstance(text, str) and "html" in mime:
                    found += [m.group(0) for m in NETWORK_SCRIPT.finditer(text)]
    return found


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


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_papermill_infers_every_parameter(path: Path, python3_kernel: str) -> None:
    """``papermill --help-notebook`` lists every name of the parameters cell (a second ``=`` in a
    comment, or an annotation papermill cannot read, drops a line), so ``-p NAME VALUE`` is known."""
    import papermill as pm

    declared = _parameters_cell(path)
    assert {"run", "smoke"} <= set(declared), declared
    inferred = pm.inspect_notebook(str(path))
    assert list(inferred) == list(declared), f"{path.name}: papermill infers {list(inferred)}"
    for name, value in declared.items():
        assert inferred[name]["default"] == repr(value).replace("'", '"'), (name, inferred[name])
        assert inferred[name]["help"], f"{path.name}: {name} has no help comment"
    out = subprocess.run(
        [sys.executable, "-m", "papermill", "--help-notebook", str(path)],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    for name in declared:
        assert re.search(rf"^  {name}: ", out.stdout, re.MULTILINE), (
            f"{path.name}: --help-notebook omits {name}"
        )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_papermill_knows_every_parameter_passed(
    path: Path, python3_kernel: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Every parameter passed (the README's ``-p run ../runs/quickstart`` among them) is a known one:
    papermill prints no ``Passed unknown parameter`` (parameterised only, not executed)."""
    import papermill as pm

    params = {name: value for name, value in _parameters_cell(path).items()}
    params["run"] = "../runs/quickstart"
    with caplog.at_level(logging.WARNING, logger="papermill"):
        pm.execute_notebook(
            str(path), str(tmp_path / path.name), parameters=params,
            kernel_name=python3_kernel, prepare_only=True, progress_bar=False,
        )  # fmt: skip
    unknown = [r.getMessage() for r in caplog.records if "unknown parameter" in r.getMessage()]
    assert not unknown, f"{path.name}: {unknown}"


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
    assert not network_scripts(nb), f"{path.name}: outputs load scripts from the network"
