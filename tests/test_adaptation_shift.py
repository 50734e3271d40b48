"""studies/adaptation_shift/adaptation_shift.py: its table is recomputed from the committed
summaries, and its results page shows exactly that table."""

from __future__ import annotations

import importlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _module():
    return importlib.import_module("studies.adaptation_shift.adaptation_shift")


def test_table_from_committed_summaries_is_in_results(capsys) -> None:
    mod = _module()
    assert mod.main([]) == 0
    table = capsys.readouterr().out.strip()
    assert table.count("\n") >= 3  # header, rule, at least two summaries
    assert table in (ROOT / "docs" / "results" / "code-repair.md").read_text()


def test_code_ranker_table_from_the_committed_summary_is_in_results(capsys) -> None:
    """studies/code_ranker/code_ranker_table.py: the table and verdict its results page shows."""
    mod = importlib.import_module("studies.code_ranker.code_ranker_table")
    assert mod.main([]) == 0
    out = capsys.readouterr().out.strip()
    assert "verdict (lm, pre-registered rule" in out
    assert out in (ROOT / "docs" / "results" / "code-ranker.md").read_text()
