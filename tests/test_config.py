"""Config validation errors name the file, the field path and what is allowed."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest
from pydantic import Field

from rsi_workbench.config import ConfigError, StrictModel, dump_config, load_config


class Gate(StrictModel):
    brier_max: float = Field(0.25, ge=0, le=1)
    min_predictions: int = Field(20, ge=1)


class Exp(StrictModel):
    experiment: Literal["demo"] = "demo"
    method: Literal["random_k", "world_model"] = "world_model"
    seeds: list[int] = [0]
    gate: Gate = Gate()


def _write(tmp_path: Path, text: str, name: str = "c.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_misspelled_key_names_its_path(tmp_path: Path) -> None:
    p = _write(tmp_path, "gate:\n  brier_mx: 0.2\n")
    with pytest.raises(ConfigError) as e:
        load_config(p, Exp)
    msg = str(e.value)
    assert str(p) in msg and "gate.brier_mx" in msg and "unknown key" in msg


def test_out_of_range_and_wrong_type_and_literal(tmp_path: Path) -> None:
    p = _write(tmp_path, "gate:\n  brier_max: 3\n  min_predictions: many\nmethod: best\n")
    with pytest.raises(ConfigError) as e:
        load_config(p, Exp)
    msg = str(e.value)
    assert "gate.brier_max" in msg and "less than or equal to 1" in msg
    assert "gate.min_predictions" in msg
    assert "method" in msg and "random_k" in msg  # the allowed values are named


def test_json_and_yaml_round_trip(tmp_path: Path) -> None:
    cfg = Exp(method="random_k", seeds=[1, 2])
    for name in ("c.json", "c.yaml"):
        dump_config(cfg, tmp_path / name)
        assert load_config(tmp_path / name, Exp) == cfg


def test_frozen_and_parse_errors(tmp_path: Path) -> None:
    cfg = Exp()
    with pytest.raises(Exception):  # noqa: B017 - pydantic's frozen-instance error
        cfg.method = "random_k"  # type: ignore[misc]
    with pytest.raises(ConfigError, match="cannot parse"):
        load_config(_write(tmp_path, "gate: [1,\n"), Exp)
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.yaml", Exp)
    with pytest.raises(ConfigError, match="mapping"):
        load_config(_write(tmp_path, "- 1\n- 2\n"), Exp)
