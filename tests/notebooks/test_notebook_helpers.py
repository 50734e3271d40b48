"""The helpers every notebook uses: the repository root from any cwd, the dataset mirror beside a
checkout, the runs a notebook makes under ``<repo>/runs/notebooks/`` (opened again, not remade)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rsi_workbench import datasets, paths

REPO = Path(__file__).resolve().parents[2]


def test_repo_root_found_upward_from_the_notebooks_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(paths.ROOT_ENV, raising=False)
    monkeypatch.chdir(REPO / "notebooks")
    assert paths.repo_root() == REPO
    assert paths.resolve("configs/dreaming/smoke.yaml") == REPO / "configs" / "dreaming" / "smoke.yaml"
    assert paths.resolve("/abs/x") == Path("/abs/x")
    assert paths.runs_dir() == REPO / "runs"


def test_repo_root_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "rsi-workbench"\n')
    monkeypatch.setenv(paths.ROOT_ENV, str(tmp_path))
    monkeypatch.chdir(REPO / "notebooks")
    assert paths.repo_root() == tmp_path
    monkeypatch.setenv(paths.ROOT_ENV, str(tmp_path / "nope"))
    with pytest.raises(FileNotFoundError, match=paths.ROOT_ENV):
        paths.repo_root()


def test_other_projects_are_not_the_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "something-else"\n')
    (tmp_path / "sub").mkdir()
    monkeypatch.delenv(paths.ROOT_ENV, raising=False)
    assert not paths.is_repo_root(tmp_path)
    assert paths.repo_root(tmp_path / "sub") == REPO  # falls back to the checkout this package is in


def test_dataset_mirror_defaults_to_shared_beside_the_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "clone"
    (repo / "rsi_workbench").mkdir(parents=True)
    monkeypatch.setattr(datasets, "CHECKOUT", repo)
    monkeypatch.delenv(datasets.DATA_ENV, raising=False)
    assert datasets.mirror_dir() is None  # nothing beside it
    (tmp_path / "shared" / "datasets").mkdir(parents=True)
    assert datasets.mirror_dir() == tmp_path / "shared" / "datasets"
    monkeypatch.setenv(datasets.DATA_ENV, str(tmp_path / "elsewhere"))
    assert datasets.mirror_dir() == tmp_path / "elsewhere"  # the variable wins


def test_experiment_run_lands_under_runs_and_is_reopened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rsi_workbench.notebook import experiment_run

    (tmp_path / "pyproject.toml").write_text('[project]\nname = "rsi-workbench"\n')
    monkeypatch.setenv(paths.ROOT_ENV, str(tmp_path))
    cfg = {"experiment": "records_smoke", "datasets": ["sklearn-iris"]}
    run = experiment_run(cfg)
    assert run.parent == tmp_path / "runs" / "notebooks" and (run / "report.txt").exists()
    lines = (run / "events.jsonl").read_bytes()
    assert experiment_run(cfg) == run  # the same config opens the same run; nothing appended
    assert (run / "events.jsonl").read_bytes() == lines
    other = experiment_run(cfg, {"seed": 1})
    assert other != run and json.loads((other / "config.json").read_text())["seed"] == 1


def test_notebook_parameters_are_relative_to_the_notebooks_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A path typed in a notebook means what it means where JupyterLab runs the kernel (notebooks/),
    whatever the working directory (papermill runs the kernel where it was started)."""
    from rsi_workbench.notebook import param_path

    (tmp_path / "pyproject.toml").write_text('[project]\nname = "rsi-workbench"\n')
    monkeypatch.setenv(paths.ROOT_ENV, str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert param_path("../runs/x") == tmp_path / "runs" / "x"
    assert param_path("../configs/a.yaml") == tmp_path / "configs" / "a.yaml"
    assert param_path("local.txt") == tmp_path / "notebooks" / "local.txt"
    assert param_path(tmp_path / "abs") == tmp_path / "abs"


def test_notebook_plotly_figures_load_no_script_from_the_network() -> None:
    """The renderer ``setup()`` picks embeds the figure without plotly's MathJax ``<script src=cdn>``."""
    import re

    import plotly.graph_objects as go
    import plotly.io as pio

    from rsi_workbench.viz._style import NOTEBOOK_PLOTLY_RENDERER, _register_offline_notebook_renderer

    _register_offline_notebook_renderer()
    fig = go.Figure(go.Scatter(x=[1, 2], y=[3, 4])).to_dict()
    network = re.compile(r"<script[^>]*\ssrc\s*=\s*[\"']?(?:https?:)?//", re.IGNORECASE)
    assert network.search(
        pio.renderers["notebook"].to_mimebundle(fig)["text/html"]
    )  # plotly's own: MathJax CDN
    html = pio.renderers[NOTEBOOK_PLOTLY_RENDERER.split("+")[1]].to_mimebundle(fig)["text/html"]
    assert 'class="plotly-graph-div"' in html and not network.search(html)
