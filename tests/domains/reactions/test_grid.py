"""Grid loader: built-in specs, the shared encoding, and malformed grids failing with the row named."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rsi_workbench.domains.reactions import (
    BUILTIN_GRIDS,
    FactorSpec,
    GridError,
    GridSpec,
    encode_conditions,
    load_grid,
)


@pytest.mark.parametrize(
    ("name", "n", "pool_max"),
    [
        ("perera2018-suzuki", 384, 98.6075170849878),
        ("edbo-suzuki", 308, 93.67),
        ("shields2021-direct-arylation", 1728, 100.0),
    ],
)
def test_builtin_grids_load_one_campaign(name: str, n: int, pool_max: float) -> None:
    g = load_grid(name)
    assert g.n == n and len(g.conditions) == n
    assert g.pool_max == pytest.approx(pool_max)
    x, names = encode_conditions(g)
    assert x.shape == (n, len(names))
    assert x.min() >= 0.0 and x.max() <= 1.0


def test_perera_empty_ligand_and_base_are_an_explicit_none_level() -> None:
    g = load_grid("perera2018-suzuki")
    assert "none" in g.levels["Ligand_Short_Hand"] and "none" in g.levels["Reagent_1_Short_Hand"]
    assert len(g.levels["Ligand_Short_Hand"]) == 12 and len(g.levels["Reagent_1_Short_Hand"]) == 8
    assert "P(Ph)3" in g.levels["Ligand_Short_Hand"]  # trailing space of the raw sheet stripped


def test_perera_solvent_variants_are_aliased() -> None:
    spec = BUILTIN_GRIDS["perera2018-suzuki"].model_copy(update={"campaign": ["1e, 6-BOH2-Q", "2d, Bromide"]})
    g = load_grid(spec)
    assert g.levels["Solvent_1_Short_Hand"] == ["DMF", "MeCN", "MeOH/H2O 9:1", "THF"]


def test_encoding_is_one_hot_plus_scaled_numeric() -> None:
    g = load_grid("shields2021-direct-arylation")
    x, names = encode_conditions(g)
    cat = [i for i, n in enumerate(names) if "=" in n]
    assert np.allclose(x[:, cat].sum(1), 3.0)  # base, ligand, solvent: one level each
    temp = x[:, names.index("Temp_C")]
    assert set(np.round(temp, 6)) == {0.0, 0.5, 1.0}


def _write(tmp_path: Path, rows: list[dict[str, object]]) -> Path:
    p = tmp_path / "grid.csv"
    pd.DataFrame(rows).to_csv(p, index=False)
    return p


SPEC = GridSpec(
    name="toy",
    path="unused.csv",
    factors=[FactorSpec(column="cat"), FactorSpec(column="temp", kind="numeric")],
    yield_column="y",
)


def _rows() -> list[dict[str, object]]:
    return [
        {"cat": c, "temp": t, "y": 10.0 * i}
        for i, (c, t) in enumerate([("a", 20), ("a", 40), ("b", 20), ("b", 40)])
    ]


def test_valid_toy_grid(tmp_path: Path) -> None:
    g = load_grid(SPEC, _write(tmp_path, _rows()))
    assert g.n == 4 and list(g.rows) == [2, 3, 4, 5]


def test_missing_factor_column_is_named(tmp_path: Path) -> None:
    rows = [{k: v for k, v in r.items() if k != "temp"} for r in _rows()]
    with pytest.raises(GridError, match=r"grid\.csv: missing column\(s\) \['temp'\]"):
        load_grid(SPEC, _write(tmp_path, rows))


def test_duplicate_condition_names_both_rows(tmp_path: Path) -> None:
    rows = _rows()
    rows[3] = {"cat": "a", "temp": 20, "y": 5.0}
    with pytest.raises(GridError, match=r"duplicate condition .* at rows \[2, 5\]"):
        load_grid(SPEC, _write(tmp_path, rows))


def test_non_numeric_yield_names_the_row(tmp_path: Path) -> None:
    rows = _rows()
    rows[2]["y"] = "n.d."
    with pytest.raises(GridError, match=r"grid\.csv: row 4: yield column 'y' is not a number: 'n.d.'"):
        load_grid(SPEC, _write(tmp_path, rows))


def test_out_of_range_yield_names_the_row(tmp_path: Path) -> None:
    rows = _rows()
    rows[1]["y"] = 130.0
    with pytest.raises(GridError, match=r"row 3: yield 130.0 .* outside yield_range \[0.0, 100.0\]"):
        load_grid(SPEC, _write(tmp_path, rows))


def test_empty_factor_without_none_level_names_the_row(tmp_path: Path) -> None:
    rows = _rows()
    rows[0]["cat"] = ""
    with pytest.raises(GridError, match=r"row 2: factor 'cat' is empty"):
        load_grid(SPEC, _write(tmp_path, rows))


def test_non_numeric_numeric_factor_names_the_row(tmp_path: Path) -> None:
    rows = _rows()
    rows[3]["temp"] = "hot"
    with pytest.raises(GridError, match=r"row 5: factor 'temp' must be a finite number, got 'hot'"):
        load_grid(SPEC, _write(tmp_path, rows))


def test_unknown_campaign_lists_what_is_there() -> None:
    spec = BUILTIN_GRIDS["edbo-suzuki"].model_copy(update={"campaign": ["X", "Y"]})
    with pytest.raises(GridError, match="no rows for campaign"):
        load_grid(spec)


def test_spec_needs_exactly_one_source() -> None:
    with pytest.raises(ValueError, match="exactly one of `path` or `dataset`"):
        GridSpec(name="x", factors=[FactorSpec(column="a")], yield_column="y")


def test_complete_grid_has_no_note(tmp_path: Path) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = load_grid(SPEC, _write(tmp_path, _rows()))
    assert g.product == 4 and g.missing == 0 and g.note == ""


def test_incomplete_factor_product_loads_with_a_one_line_note(tmp_path: Path) -> None:
    from rsi_workbench.domains.reactions.grid import IncompleteGridWarning

    rows = [*_rows(), {"cat": "c", "temp": 20, "y": 1.0}]  # (c, 40) never measured
    with pytest.warns(IncompleteGridWarning) as rec:
        g = load_grid(SPEC, _write(tmp_path, rows))
    assert g.n == 5 and g.product == 6 and g.missing == 1
    assert str(rec[0].message) == g.note and "\n" not in g.note
    assert "holds 5 of the 6 conditions of its factor product (3 × 2); 1 are missing" in g.note
