"""Notebook 07's policy-bottleneck section: its default config is the pre-registered design scaled
down (only seeds, arms, test instances and bootstrap resamples differ), and the verdict it quotes is
the results page's, word for word."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from rsi_workbench.cli import load_experiment_config

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "notebooks" / "07_gui_curriculum.ipynb"
DESIGN = REPO / "configs" / "gui" / "policy_bottleneck.yaml"
PAGE = REPO / "docs" / "results" / "gui-policy-bottleneck.md"
SCALED = {"methods", "seeds", "test_instances", "bootstrap"}  # what the smoke copy may change


def _cells(kind: str) -> list[str]:
    return ["".join(c["source"]) for c in json.loads(NOTEBOOK.read_text())["cells"] if c["cell_type"] == kind]


def _default(name: str) -> str:
    (params,) = [s for s in _cells("code") if s.startswith("# Parameters")]
    for node in ast.parse(params).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            return str(ast.literal_eval(node.value))  # type: ignore[arg-type]
    raise AssertionError(f"no parameter {name}")


def _words(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def test_bottleneck_smoke_config_is_the_preregistered_design_scaled_down() -> None:
    path = (NOTEBOOK.parent / _default("bottleneck_config")).resolve()
    assert path == REPO / "configs" / "gui" / "policy_bottleneck_smoke.yaml"
    assert "NOT A RESULT" in path.read_text()
    smoke, design = load_experiment_config(path).model_dump(), load_experiment_config(DESIGN).model_dump()
    changed = {k for k in design if smoke[k] != design[k]}
    assert changed <= SCALED, f"the smoke copy changes the design in {sorted(changed - SCALED)}"
    assert set(smoke["seeds"]) <= set(design["seeds"]) and smoke["methods"] == ["rsi", "world_based"]
    assert (smoke["k"], smoke["start_world"], smoke["start_policy"]) == (1, "exact", "untrained")
    assert smoke["gates"]["policy"]["tie_break"] == "fewer_actions"


def test_quoted_verdict_is_the_results_page_verdict() -> None:
    (section,) = [s for s in _cells("markdown") if s.startswith("## The policy as the bottleneck")]
    quoted = [ln[2:] for ln in section.splitlines() if ln.startswith("> ")]
    assert len(quoted) == 1, quoted
    page = PAGE.read_text()
    verdict = page.split("### Verdict, in the rule's words", 1)[1].split("\n\n")[1]
    assert _words(quoted[0]) == _words(verdict)
    assert "docs/results/gui-policy-bottleneck.md" in section
