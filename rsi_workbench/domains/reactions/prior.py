"""Transfer priors: the training table of a prior φ0 learned from *other* campaigns of a grid file.

A grid file with ``campaign_columns`` (e.g. Perera 2018: 15 reactant pairs over one ligand × base ×
solvent space) holds several campaigns. :class:`PriorSpec` (``prior: {from: campaigns, share: ...,
exclude: [...]}`` in a reactions config) declares which of them a target's prior may learn from:

- ``share: any`` — every other campaign of the file; ``share: <campaign column>`` — only campaigns
  with the target's value in that column (which column means what is the grid's own declaration);
- ``exclude`` — campaigns never used, each given as its values for ``campaign_columns``.

:func:`prior_data` maps every source row onto the target's pool (same factor levels, after the grid's
``none_level`` and ``aliases``) and returns one training target per pool condition — the mean yield
over the source campaigns that measured it. The target campaign itself is never a source:
:func:`check_no_leak` asserts that no CSV line of the target is in the prior's training rows and no
source is the target campaign, and :func:`prior_data` calls it on every table it returns.
``shuffle`` permutes the per-condition targets across conditions (seeded): the negative control, a
prior with the same values but the condition labels broken.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import ConfigDict, Field, model_validator

from rsi_workbench.config import StrictModel
from rsi_workbench.domains.reactions.grid import ConditionGrid, GridError, GridSpec, _factor_values

PRIOR_FIT = "mean source yield per pool condition"
PRIOR_DATA_VERSION = 1


class PriorLeakError(AssertionError):
    """A prior's training data holds a row of its target campaign (it must never see the target)."""


class PriorSpec(StrictModel):
    """Where a transfer prior φ0 learns from: other campaigns of the target's grid file."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, validate_default=True, populate_by_name=True, serialize_by_alias=True
    )

    from_: Literal["campaigns"] = Field(
        default="campaigns", alias="from", description="campaigns: other campaigns of the same grid file"
    )
    share: str = Field(
        default="any",
        description="any, or a campaign column whose value a source campaign must share with the target",
    )
    exclude: list[list[str]] = Field(
        default_factory=list, description="campaigns never used as sources (values of campaign_columns)"
    )
    shuffle: bool = Field(
        default=False, description="negative control: permute the prior's targets across conditions"
    )

    @model_validator(mode="after")
    def _check(self) -> PriorSpec:
        if not self.share.strip():
            raise ValueError("prior.share must be 'any' or a campaign column name")
        return self


@dataclass(frozen=True)
class PriorData:
    """A prior's training table over the target pool, with its provenance."""

    target: tuple[str, ...]
    sources: tuple[tuple[str, ...], ...]
    index: np.ndarray  # target-pool rows with source data
    y: np.ndarray  # the training target at each (mean over sources, maybe shuffled)
    source_rows: tuple[int, ...]  # CSV line numbers (header = 1) of every row used
    unmatched_rows: int  # source rows whose condition is not in the target pool
    shuffled: bool = False
    file: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def provenance(self) -> dict[str, Any]:
        """What a run records about the prior (source campaigns, fit rule, file, leak check)."""
        return {
            "file": self.file,
            "target_campaign": list(self.target),
            "source_campaigns": [list(s) for s in self.sources],
            "fit": PRIOR_FIT,
            "conditions": len(self.index),
            "source_rows": len(self.source_rows),
            "unmatched_rows": self.unmatched_rows,
            "shuffled": self.shuffled,
            "leak_check": "passed: no target row in the prior's training data",
            **self.extra,
        }


def check_prior_spec(spec: PriorSpec, grid: GridSpec, frame: pd.DataFrame, where: str) -> None:
    """``share`` names a campaign column and every ``exclude`` entry is a campaign of the file;
    errors are ``ValueError``s naming ``where`` (file) and the field."""
    if not grid.campaign_columns:
        raise ValueError(
            f"{where}: prior: grid {grid.name!r} declares no campaign_columns (a prior needs them)"
        )
    if spec.share != "any" and spec.share not in grid.campaign_columns:
        raise ValueError(
            f"{where}: prior.share: {spec.share!r} is not a campaign column of grid {grid.name!r} "
            f"(campaign_columns: {grid.campaign_columns}; or 'any')"
        )
    present = set(_campaigns(frame, grid.campaign_columns))
    for i, ex in enumerate(spec.exclude):
        if len(ex) != len(grid.campaign_columns):
            raise ValueError(
                f"{where}: prior.exclude.{i}: {ex} must give one value per campaign column "
                f"{grid.campaign_columns}"
            )
        if tuple(v.strip() for v in ex) not in present:
            raise ValueError(
                f"{where}: prior.exclude.{i}: {ex} is not a campaign of the file (present: "
                f"{sorted(present)[:20]})"
            )


def _campaigns(frame: pd.DataFrame, cols: list[str]) -> list[tuple[str, ...]]:
    return [tuple(str(v).strip() for v in r) for r in frame[cols].drop_duplicates().itertuples(index=False)]


def read_file_rows(path: str | Path) -> pd.DataFrame:
    """Every row of a grid CSV (text), with its CSV line number in ``_row``."""
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    df["_row"] = np.arange(len(df)) + 2
    return df


def select_sources(grid: ConditionGrid, spec: PriorSpec, frame: pd.DataFrame) -> list[tuple[str, ...]]:
    """The source campaigns of ``grid``'s prior: other campaigns of its file, sharing ``spec.share``'s
    value with the target (unless ``any``), minus ``exclude``."""
    cols = grid.spec.campaign_columns
    assert grid.spec.campaign is not None
    target = tuple(v.strip() for v in grid.spec.campaign)
    excluded = {tuple(v.strip() for v in ex) for ex in spec.exclude}
    out = []
    for c in _campaigns(frame, cols):
        if c == target or c in excluded:
            continue
        if spec.share != "any" and c[cols.index(spec.share)] != target[cols.index(spec.share)]:
            continue
        out.append(c)
    return out


def prior_data(grid: ConditionGrid, spec: PriorSpec, *, seed: int = 0) -> PriorData:
    """The prior's training table for ``grid`` (one campaign of its file): mean source yield per pool
    condition, from :func:`select_sources`; leak-checked (:func:`check_no_leak`) before it is returned."""
    gs = grid.spec
    frame = read_file_rows(grid.source)
    check_prior_spec(spec, gs, frame, grid.source)
    assert gs.campaign is not None
    sources = select_sources(grid, spec, frame)
    if not sources:
        raise GridError(
            f"{grid.source}: prior for grid {gs.name!r}: no source campaign left (share={spec.share!r}, "
            f"exclude={spec.exclude})"
        )
    key = frame[gs.campaign_columns].apply(lambda r: tuple(str(v).strip() for v in r), axis=1)
    rows = frame[key.isin(set(sources))].reset_index(drop=True)
    pool = {_cond_key(c): i for i, c in enumerate(grid.conditions.itertuples(index=False))}
    values = [_factor_values(Path(grid.source), f, rows) for f in gs.factors]
    sums = np.zeros(grid.n)
    counts = np.zeros(grid.n)
    unmatched = 0
    used: list[int] = []
    lo, hi = gs.yield_range
    for j, r in enumerate(rows["_row"]):
        i = pool.get(_cond_key(tuple(v[j] for v in values)))
        try:
            yv = float(rows[gs.yield_column].iloc[j])
        except ValueError:
            yv = float("nan")
        if i is None or not (np.isfinite(yv) and lo <= yv <= hi):
            unmatched += 1
            continue
        sums[i] += yv
        counts[i] += 1
        used.append(int(r))
    idx = np.flatnonzero(counts > 0)
    y = sums[idx] / counts[idx]
    if spec.shuffle:
        y = y[np.random.default_rng([int(seed), 7919]).permutation(len(y))]
    data = PriorData(
        target=tuple(v.strip() for v in gs.campaign),
        sources=tuple(sources),
        index=idx,
        y=y,
        source_rows=tuple(used),
        unmatched_rows=unmatched,
        shuffled=spec.shuffle,
        file=grid.source,
    )
    check_no_leak(grid, data, frame)
    return data


def _cond_key(values: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(round(float(v), 9) if isinstance(v, int | float) else str(v) for v in values)


def check_no_leak(grid: ConditionGrid, data: PriorData, frame: pd.DataFrame | None = None) -> None:
    """Raise :class:`PriorLeakError` if the prior's training rows include a row of the target
    campaign (its CSV lines, or any row of ``frame`` whose campaign values are the target's), or if a
    source campaign is the target."""
    target_lines = set(int(r) for r in grid.rows)
    if frame is not None and grid.spec.campaign_columns:
        key = frame[grid.spec.campaign_columns].apply(lambda r: tuple(str(v).strip() for v in r), axis=1)
        target_lines |= set(int(r) for r in frame.loc[key == data.target, "_row"])
    leaked = sorted(target_lines & set(data.source_rows))
    if leaked:
        raise PriorLeakError(
            f"{grid.source}: the prior of grid {grid.spec.name!r} would train on {len(leaked)} row(s) of its "
            f"target campaign {list(data.target)} (CSV lines {leaked[:10]}...)"
        )
    if data.target in data.sources:
        raise PriorLeakError(
            f"{grid.source}: grid {grid.spec.name!r}: its target campaign {list(data.target)} is a prior source"
        )


def prior_cache_key(data: PriorData, seed: int, fit_settings: dict[str, Any]) -> str:
    """The cache key of a pretrained prior: (target, source set, seed) plus what else changes the fit
    (shuffle, the file, the model's settings, the fit rule's version)."""
    blob = {
        "target": list(data.target),
        "sources": sorted(list(s) for s in data.sources),
        "seed": int(seed),
        "shuffled": data.shuffled,
        "file": Path(data.file).name,
        "fit": [PRIOR_FIT, PRIOR_DATA_VERSION],
        "settings": fit_settings,
    }
    return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()[:20]
