"""Reference constants of the math discovery tasks, each with its source and date: the one table
the tasks read (``CirclePacking.best_known``, ``FirstAutocorrelation.best_known``) and the docs
reproduce (docs/dreaming.md, "Reference constants").

A *best-known* value is the best published construction the project knows of; it moves as systems
report better ones, so every entry names who reported it and when. ``PAPER_FIGURES`` holds figures a
paper compares against (not best-known values): the Dream-RSI Table 1 autocorrelation column is the
*third* inequality (C3), not the first (C1) that this project's ``FirstAutocorrelation`` task bounds.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Reference:
    """One constant: the quantity, its value, the direction that is better, who reported it, when."""

    key: str
    quantity: str
    value: float
    better: str  # "higher" or "lower"
    source: str
    date: str  # YYYY-MM of the report
    note: str = ""


REFERENCES: tuple[Reference, ...] = (
    Reference(
        "circle_packing_26",
        "circle packing in the unit square, n = 26, sum of radii",
        2.635983,
        "higher",
        "ThetaEvolve (arXiv:2511.23473) and other recent evolutionary-coding systems report 2.635983; "
        "this project's committed packing benchmarks/data/headline/packings/circle_packing_n26_best.json "
        "re-evaluates to 2.6359830849",
        "2025-11",
        "supersedes AlphaEvolve's 2.6358627564136983 (AlphaEvolve white paper, 2025-05)",
    ),
    Reference(
        "circle_packing_32",
        "circle packing in the unit square, n = 32, sum of radii",
        2.937944526205518,
        "higher",
        "AlphaEvolve (Novikov et al., AlphaEvolve white paper, Google DeepMind)",
        "2025-05",
    ),
    Reference(
        "autocorrelation_c1",
        "first autocorrelation inequality C1, upper bound",
        1.503133,
        "lower",
        "ThetaEvolve: Test-time Learning on Open Problems (arXiv:2511.23473)",
        "2025-11",
        "ThetaEvolve cites AlphaEvolve's 1.503164; AlphaEvolve's white paper (2025-05) gave 1.5052939684401607",
    ),
    Reference(
        "autocorrelation_c1_alphaevolve",
        "first autocorrelation inequality C1, upper bound (AlphaEvolve, as cited by ThetaEvolve)",
        1.503164,
        "lower",
        "AlphaEvolve, as cited in ThetaEvolve (arXiv:2511.23473)",
        "2025-11",
    ),
    Reference(
        "autocorrelation_c2",
        "second autocorrelation inequality C2, lower bound",
        0.8962799441554083,
        "higher",
        "AlphaEvolve (AlphaEvolve white paper, Google DeepMind)",
        "2025-05",
    ),
    Reference(
        "autocorrelation_c3",
        "third autocorrelation inequality C3, upper bound",
        1.4556427953745406,
        "lower",
        "AlphaEvolve (AlphaEvolve white paper, Google DeepMind)",
        "2025-05",
        "Dream-RSI's Table 1 reports 1.453675 (SimpleTES) and 1.456375 (Dream-RSI): see PAPER_FIGURES",
    ),
    Reference(
        "sum_difference_c6",
        "sum–difference problem C6, lower bound (|U| = 2003)",
        1.1479888965092757,
        "higher",
        "AlphaEvolve (AlphaEvolve white paper, Google DeepMind)",
        "2025-05",
    ),
)

PAPER_FIGURES: tuple[Reference, ...] = (
    Reference(
        "dream_rsi_table1_c3_dream_rsi",
        "third autocorrelation inequality C3 (Dream-RSI, Table 1, 'Autocorrelation' column)",
        1.456375,
        "lower",
        "Dream-RSI (Tong Zheng et al.), Table 1",
        "2026",
        "the paper's own system; C3, not this project's C1 task",
    ),
    Reference(
        "dream_rsi_table1_c3_simpletes",
        "third autocorrelation inequality C3 (SimpleTES, as reported in Dream-RSI's Table 1)",
        1.453675,
        "lower",
        "Dream-RSI (Tong Zheng et al.), Table 1",
        "2026",
        "SimpleTES uses 51,200 generations against Dream-RSI's < 1,000",
    ),
)

_BY_KEY = {r.key: r for r in (*REFERENCES, *PAPER_FIGURES)}


def reference(key: str) -> Reference:
    """The entry named ``key`` (KeyError naming the known keys otherwise)."""
    try:
        return _BY_KEY[key]
    except KeyError:
        raise KeyError(f"no reference constant {key!r}; known: {sorted(_BY_KEY)}") from None


def best_known(key: str) -> float:
    """The value of the entry named ``key``."""
    return reference(key).value


def markdown_table() -> str:
    """The table the docs reproduce (tests check docs/dreaming.md holds it)."""
    rows = ["| constant | value | better | source | date |", "|---|---:|---|---|---|"]
    for r in (*REFERENCES, *PAPER_FIGURES):
        rows.append(f"| {r.quantity} | {r.value!r} | {r.better} | {r.source} | {r.date} |")
    return "\n".join(rows) + "\n"
