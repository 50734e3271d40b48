"""Measured reaction-condition grids: a validated loader for any CSV grid and the shared encoding.

A grid is a table of fully measured conditions (factor levels + a yield). :class:`GridSpec`
declares which columns are factors, which is the yield and (optionally) which columns pick one
campaign (e.g. one reactant pair). :func:`load_grid` validates the file and names the offending
row; :func:`encode_conditions` is the one encoding every method uses (one-hot categorical factors,
numeric factors min-max scaled to [0, 1] over the campaign's pool).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import Field, model_validator

from rsi_workbench.config import InputPath, StrictModel


class GridError(ValueError):
    """A condition grid file is malformed; the message names the file, the column and the row."""


class FactorSpec(StrictModel):
    """One condition factor: a CSV column that is categorical (one-hot) or numeric (scaled)."""

    column: str
    kind: Literal["categorical", "numeric"] = "categorical"
    none_level: str | None = Field(
        default=None,
        description="level that empty cells (or `None`/`none`) stand for, e.g. 'none' = no ligand; "
        "unset = empty cells are an error",
    )
    aliases: dict[str, str] = Field(
        default_factory=dict, description="raw level -> canonical level (name variants of one level)"
    )


class GridSpec(StrictModel):
    """Where a grid lives and how to read it: factors, yield column, range, campaign."""

    name: str = Field(description="short name used in reports and records")
    path: InputPath | None = Field(default=None, description="CSV file (relative: to the config file)")
    dataset: str | None = Field(default=None, description="registered dataset name instead of a path")
    factors: list[FactorSpec] = Field(min_length=1)
    yield_column: str
    yield_range: tuple[float, float] = (0.0, 100.0)
    campaign_columns: list[str] = Field(
        default_factory=list, description="columns whose values identify one campaign (reactant pair)"
    )
    campaign: list[str] | None = Field(
        default=None, description="the campaign's values for campaign_columns, in the same order"
    )

    @model_validator(mode="after")
    def _check(self) -> GridSpec:
        if (self.path is None) == (self.dataset is None):
            raise ValueError("give exactly one of `path` or `dataset`")
        if self.campaign_columns and (
            self.campaign is None or len(self.campaign) != len(self.campaign_columns)
        ):
            raise ValueError("`campaign` must give one value per entry of `campaign_columns`")
        if self.campaign is not None and not self.campaign_columns:
            raise ValueError("`campaign` needs `campaign_columns`")
        lo, hi = self.yield_range
        if not lo < hi:
            raise ValueError(f"yield_range must be (low, high) with low < high, got {self.yield_range}")
        return self


_NONE_TOKENS = {"", "none", "nan", "null", "na", "n/a"}

# Perera 2018 (Science): one campaign per reactant pair (15 x 384 conditions). The headline campaign
# is 1c (6-OTf-quinoline) + 2b (boronic ester) — the substrates of the paper's flow LC-MS screen.
# Empty ligand/base cells mean "no ligand"/"no base" (an explicit level). `THF_V2` and
# `MeOH/H2O_V2 9:1` (campaign 1e+2d only) are a second stock-plate version of THF and of aqueous
# methanol: aliased to `THF` and `MeOH/H2O 9:1` (aqueous methanol stays distinct from MeOH).
PERERA_2018 = GridSpec(
    name="perera2018-suzuki",
    dataset="perera2018-suzuki",
    factors=[
        FactorSpec(column="Ligand_Short_Hand", none_level="none"),
        FactorSpec(column="Reagent_1_Short_Hand", none_level="none"),
        FactorSpec(
            column="Solvent_1_Short_Hand", aliases={"THF_V2": "THF", "MeOH/H2O_V2 9:1": "MeOH/H2O 9:1"}
        ),
    ],
    yield_column="Product_Yield_PCT_Area_UV",
    campaign_columns=["Reactant_1_Short_Hand", "Reactant_2_Name"],
    campaign=["1c, 6-OTf-Q", "2b, Boronic Ester"],
)

# EDBO Suzuki (Shields 2021): the Perera grid without the no-ligand/no-base levels, 12 campaigns x
# 308. Headline: 6-chloroquinoline + boronic acid — the first campaign of EDBO's index, the hardest
# electrophile (pool maximum 93.67, a single condition), a different landscape from Perera's headline.
EDBO_SUZUKI = GridSpec(
    name="edbo-suzuki",
    dataset="edbo-suzuki",
    factors=[
        FactorSpec(column="Ligand_SMILES"),
        FactorSpec(column="Base_SMILES"),
        FactorSpec(column="Solvent_SMILES"),
    ],
    yield_column="yield",
    campaign_columns=["Electrophile_SMILES", "Nucleophile_SMILES"],
    campaign=["ClC1=CC=C(N=CC=C2)C2=C1", "CC1=CC=C(N(C2CCCCO2)N=C3)C3=C1B(O)O"],
)

# Shields 2021 direct arylation: one campaign of 1,728 conditions; concentration and temperature numeric.
SHIELDS_2021 = GridSpec(
    name="shields2021-direct-arylation",
    dataset="shields2021-direct-arylation",
    factors=[
        FactorSpec(column="Base_SMILES"),
        FactorSpec(column="Ligand_SMILES"),
        FactorSpec(column="Solvent_SMILES"),
        FactorSpec(column="Concentration", kind="numeric"),
        FactorSpec(column="Temp_C", kind="numeric"),
    ],
    yield_column="yield",
)

BUILTIN_GRIDS: dict[str, GridSpec] = {g.name: g for g in (PERERA_2018, EDBO_SUZUKI, SHIELDS_2021)}


def grid_spec(g: str | GridSpec) -> GridSpec:
    """A grid entry of a config (a built-in name or a spec) as its spec."""
    return BUILTIN_GRIDS[g] if isinstance(g, str) else g


class IncompleteGridWarning(UserWarning):
    """A grid lacks some conditions of its factor product (it still loads; methods propose only the
    measured conditions). The message is the grid's one-line :attr:`ConditionGrid.note`."""


@dataclass(frozen=True)
class ConditionGrid:
    """One campaign's pool: condition levels per factor, measured yields, and the CSV rows they came from."""

    spec: GridSpec
    source: str
    conditions: pd.DataFrame  # one column per factor (canonical levels / floats), index 0..n-1
    yields: np.ndarray  # float64, measured yield of each condition (the replay oracle)
    rows: np.ndarray  # 1-based line numbers in the CSV (header = line 1)
    levels: dict[str, list[str]] = field(default_factory=dict)  # categorical factor -> sorted levels

    @property
    def n(self) -> int:
        return len(self.yields)

    @property
    def pool_max(self) -> float:
        return float(self.yields.max())

    @property
    def product(self) -> int:
        """The size of the full factor product (distinct values of each factor, multiplied)."""
        return math.prod(int(self.conditions[f.column].nunique()) for f in self.spec.factors)

    @property
    def missing(self) -> int:
        """How many conditions of the factor product the grid does not hold."""
        return self.product - self.n

    @property
    def note(self) -> str:
        """One line naming how many factor-product conditions are missing ("" for a complete grid)."""
        if not self.missing:
            return ""
        sizes = " × ".join(str(self.conditions[f.column].nunique()) for f in self.spec.factors)
        return (
            f"{self.source}: grid {self.spec.name!r} holds {self.n} of the {self.product} conditions of its "
            f"factor product ({sizes}); {self.missing} are missing and never proposed"
        )


def _grid_path(spec: GridSpec) -> Path:
    if spec.dataset is not None:
        from rsi_workbench.datasets import resolve

        return resolve(spec.dataset)
    assert spec.path is not None
    return Path(spec.path)


def load_grid(spec: GridSpec | str, path: str | Path | None = None) -> ConditionGrid:
    """Read and validate one campaign of a condition grid; errors name the file, column and row.

    ``spec`` is a :class:`GridSpec` or a built-in name (:data:`BUILTIN_GRIDS`); ``path`` overrides
    where the CSV is read from (tests use it for malformed copies). A grid missing some conditions of
    its factor product loads, with its one-line :attr:`ConditionGrid.note` as an
    :class:`IncompleteGridWarning`.
    """
    if isinstance(spec, str):
        if spec not in BUILTIN_GRIDS:
            raise GridError(f"unknown built-in grid {spec!r}; allowed: {sorted(BUILTIN_GRIDS)}")
        spec = BUILTIN_GRIDS[spec]
    p = Path(path) if path is not None else _grid_path(spec)
    df = _campaign_rows(p, spec)
    conditions: dict[str, list[object]] = {}
    levels: dict[str, list[str]] = {}
    for f in spec.factors:
        conditions[f.column] = _factor_values(p, f, df)
        if f.kind != "numeric":
            levels[f.column] = sorted(set(map(str, conditions[f.column])))
    cond = pd.DataFrame(conditions)
    _check_unique(p, cond, df)
    grid = ConditionGrid(
        spec=spec,
        source=str(p),
        conditions=cond,
        yields=_yields(p, spec, df),
        rows=df["_row"].to_numpy(),
        levels=levels,
    )
    if grid.missing:
        import warnings

        warnings.warn(grid.note, IncompleteGridWarning, stacklevel=2)
    return grid


def _campaign_rows(p: Path, spec: GridSpec) -> pd.DataFrame:
    """The CSV's rows of the spec's campaign (all text), with their line numbers in ``_row``."""
    if not p.exists():
        raise GridError(f"{p}: grid file not found (grid {spec.name!r})")
    try:
        df = pd.read_csv(p, dtype=str, keep_default_na=False)
    except Exception as e:  # pandas' parser errors carry the line
        raise GridError(f"{p}: cannot parse CSV: {e}") from e
    factor_cols = [f.column for f in spec.factors]
    if len(set(factor_cols)) != len(factor_cols):
        raise GridError(f"{p}: a factor column is declared twice: {factor_cols}")
    needed = [*factor_cols, spec.yield_column, *spec.campaign_columns]
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise GridError(f"{p}: missing column(s) {missing}; the file has {list(df.columns)}")
    df = df.copy()
    df["_row"] = np.arange(len(df)) + 2  # CSV line number (header is line 1)
    if spec.campaign_columns:
        assert spec.campaign is not None
        mask = np.ones(len(df), dtype=bool)
        for col, val in zip(spec.campaign_columns, spec.campaign):
            mask &= df[col].str.strip() == val.strip()
        if not mask.any():
            found = df[spec.campaign_columns].drop_duplicates().head(20).values.tolist()
            raise GridError(
                f"{p}: no rows for campaign {spec.campaign} in columns {spec.campaign_columns}; "
                f"campaigns present include {found}"
            )
        df = df[mask].reset_index(drop=True)
    if len(df) == 0:
        raise GridError(f"{p}: the grid has no rows")
    return df


def _factor_values(p: Path, f: FactorSpec, df: pd.DataFrame) -> list[object]:
    """One factor's value per row: finite floats (numeric) or canonical levels (categorical)."""
    raw = df[f.column].str.strip()
    out: list[object] = []
    for r, v in zip(df["_row"], raw):
        if f.kind == "numeric":
            try:
                x = float(v)
            except ValueError:
                x = math.nan
            if not math.isfinite(x):
                raise GridError(f"{p}: row {r}: factor {f.column!r} must be a finite number, got {v!r}")
            out.append(x)
            continue
        if v.lower() in _NONE_TOKENS:
            if f.none_level is None:
                raise GridError(
                    f"{p}: row {r}: factor {f.column!r} is empty (declare `none_level` if empty "
                    "means an explicit 'none' level)"
                )
            v = f.none_level
        out.append(f.aliases.get(v, v))
    return out


def _yields(p: Path, spec: GridSpec, df: pd.DataFrame) -> np.ndarray:
    """The measured yields, each a finite number inside ``yield_range``."""
    ys = np.empty(len(df), dtype=np.float64)
    lo, hi = spec.yield_range
    for i, (r, v) in enumerate(zip(df["_row"], df[spec.yield_column])):
        try:
            y = float(v)
        except ValueError:
            y = math.nan
        if not math.isfinite(y):
            raise GridError(f"{p}: row {r}: yield column {spec.yield_column!r} is not a number: {v!r}")
        if not lo <= y <= hi:
            raise GridError(
                f"{p}: row {r}: yield {y} in {spec.yield_column!r} is outside yield_range [{lo}, {hi}]"
            )
        ys[i] = y
    return ys


def _check_unique(p: Path, cond: pd.DataFrame, df: pd.DataFrame) -> None:
    dup = cond.duplicated(keep=False)
    if dup.any():
        first = cond[dup].iloc[0]
        same = df["_row"][(cond == first).all(axis=1)].tolist()
        raise GridError(
            f"{p}: duplicate condition {dict(first)} at rows {same} (each condition must appear once "
            "per campaign; add the distinguishing column to `factors` or `campaign_columns`)"
        )


def encode_conditions(grid: ConditionGrid) -> tuple[np.ndarray, list[str]]:
    """The shared encoding: one-hot per categorical factor, numeric factors scaled to [0, 1]."""
    cols: list[np.ndarray] = []
    names: list[str] = []
    for f in grid.spec.factors:
        v = grid.conditions[f.column]
        if f.kind == "numeric":
            x = v.to_numpy(dtype=np.float64)
            span = x.max() - x.min()
            cols.append(((x - x.min()) / span if span > 0 else np.zeros_like(x))[:, None])
            names.append(f.column)
        else:
            lv = grid.levels[f.column]
            cols.append((v.astype(str).to_numpy()[:, None] == np.array(lv)[None, :]).astype(np.float64))
            names.extend(f"{f.column}={level}" for level in lv)
    return np.concatenate(cols, axis=1), names
