"""The reference constants: one table in code, used by the tasks and reproduced in the docs."""

from pathlib import Path

from rsi_workbench.domains.math import reference
from rsi_workbench.domains.math.autocorrelation import BEST_KNOWN_C1
from rsi_workbench.domains.math.circle_packing import BEST_KNOWN

REPO = Path(__file__).resolve().parents[3]


def test_tasks_read_the_table_and_every_entry_has_a_source_and_date() -> None:
    assert BEST_KNOWN[26] == reference.best_known("circle_packing_26") == 2.635983
    assert BEST_KNOWN_C1 == reference.best_known("autocorrelation_c1") == 1.503133
    for r in (*reference.REFERENCES, *reference.PAPER_FIGURES):
        assert r.source and r.date[:4].isdigit() and r.better in ("higher", "lower"), r.key


def test_the_docs_reproduce_the_table() -> None:
    assert reference.markdown_table() in (REPO / "docs" / "dreaming.md").read_text()
