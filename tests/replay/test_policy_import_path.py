"""`replay score --policy package.module:Name` scores a researcher's own exploration policy (issue 30)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rsi_workbench.cli import main

ROOT = Path(__file__).resolve().parents[2]
TREE = ROOT / "examples" / "discovery_tree" / "tree.json"

POLICY = """
from rsi_workbench.replay.policies import BreadthFirst


class MyBreadthFirst:
    # breadth-first under its own name: a researcher's policy that delegates

    name = "my_breadth_first"

    def __init__(self):
        self._inner = BreadthFirst()

    def plan_grid(self, history):
        return self._inner.plan_grid(history)

    def select_batch(self, view, W):
        return self._inner.select_batch(view, W)


INSTANCE = MyBreadthFirst()


class NeedsArgs(MyBreadthFirst):
    def __init__(self, width):
        super().__init__()


class NotAPolicy:
    name = "nope"
"""


def test_policy_by_import_path_scores_like_the_builtin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_policies.py").write_text(POLICY)
    monkeypatch.chdir(tmp_path)
    args = ["replay", "score", str(TREE), "--beta1", "2e-4", "--beta2", "5e-4"]
    assert main([*args, "--policy", "breadth_first"]) == 0
    builtin = capsys.readouterr().out.splitlines()
    assert main([*args, "--policy", "my_policies:MyBreadthFirst", "my_policies:INSTANCE"]) == 0
    out = capsys.readouterr().out.splitlines()
    row = next(line for line in builtin if line.startswith("breadth_first"))
    mine = [line for line in out if line.startswith("my_breadth_first")]
    assert len(mine) == 2 and all(m.split()[1:] == row.split()[1:] for m in mine)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("my_policies:Missing", "Missing"),
        ("no_such_module:Policy", "no_such_module"),
        ("my_policies:NeedsArgs", "cannot be constructed without arguments"),
        ("my_policies:NotAPolicy", "is not an exploration policy"),
    ],
)
def test_bad_policy_paths_are_clear_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], path: str, message: str
) -> None:
    (tmp_path / "my_policies.py").write_text(POLICY)
    argv = ["replay", "score", str(TREE), "--beta1", "0", "--beta2", "0", "--policy", path]
    assert main([*argv, "--python-path", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: policy") and message in err
