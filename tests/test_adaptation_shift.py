"""benchmarks/adaptation_shift.py: its table is recomputed from the committed summaries, and RESULTS.md
shows exactly that table (issue 35 item 4)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _module():
    spec = importlib.util.spec_from_file_location(
        "adaptation_shift", ROOT / "benchmarks" / "adaptation_shift.py"
    )
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["adaptation_shift"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_table_from_committed_summaries_is_in_results(capsys) -> None:
    mod = _module()
    assert mod.main([]) == 0
    table = capsys.readouterr().out.strip()
    assert table.count("\n") >= 3  # header, rule, at least two summaries
    assert table in (ROOT / "benchmarks" / "RESULTS.md").read_text()


def test_code_ranker_table_from_the_committed_summary_is_in_results(capsys) -> None:
    """benchmarks/code_ranker_table.py (issue 33): the table and verdict RESULTS.md shows."""
    spec = importlib.util.spec_from_file_location(
        "code_ranker_table", ROOT / "benchmarks" / "code_ranker_table.py"
    )
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main([]) == 0
    out = capsys.readouterr().out.strip()
    assert "verdict (lm, pre-registered rule" in out
    assert out in (ROOT / "benchmarks" / "RESULTS.md").read_text()
