"""Dataset registry: mirror resolution with sha256, clear errors for missing or altered files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rsi_workbench import datasets
from rsi_workbench.datasets import DatasetError


def test_registry_names_source_licence_and_checksum() -> None:
    reg = datasets.registry()
    assert {
        "humanevalpack-python",
        "perera2018-suzuki",
        "edbo-suzuki",
        "shields2021-direct-arylation",
        "humaneval",
        "sklearn-breast-cancer",
    } <= set(reg)
    for s in reg.values():
        assert s.url and s.licence
        if s.source_kind != "sklearn":
            assert s.sha256 and len(s.sha256) == 64


@pytest.mark.parametrize(
    "name,rows",
    [
        ("humanevalpack-python", 164),
        ("edbo-suzuki", 3696),
        ("perera2018-suzuki", 5760),
        ("shields2021-direct-arylation", 1728),
        ("humaneval", 164),
        ("sklearn-diabetes", 442),
    ],
)
def test_load_from_mirror_and_packages(name: str, rows: int) -> None:
    obj = datasets.load(name)
    n = len(obj.frame) if hasattr(obj, "frame") else len(obj)
    assert n == rows


def test_missing_file_says_where_to_put_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RSI_WORKBENCH_DATA", str(tmp_path / "mirror"))
    monkeypatch.setenv("RSI_WORKBENCH_CACHE", str(tmp_path / "cache"))
    with pytest.raises(DatasetError) as e:
        datasets.resolve("edbo-suzuki", download=False)
    msg = str(e.value)
    assert "reactions/suzuki_miyaura_edbo_3696.csv" in msg and str(tmp_path / "mirror") in msg
    assert "sha256" in msg


def test_file_url_download_and_checksum(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Resolution falls through to a download (here a file:// URL) into the cache, then checks sha256."""
    src = datasets.resolve("shields2021-direct-arylation")
    monkeypatch.setenv("RSI_WORKBENCH_DATA", str(tmp_path / "empty"))
    monkeypatch.setenv("RSI_WORKBENCH_CACHE", str(tmp_path / "cache"))
    s = datasets.spec("shields2021-direct-arylation")
    monkeypatch.setattr(datasets, "spec", lambda name: type(s)(**{**s.__dict__, "url": src.as_uri()}))
    p = datasets.resolve("shields2021-direct-arylation")
    assert p.is_relative_to(tmp_path / "cache")
    # an altered cached copy fails its checksum loudly
    p.write_bytes(p.read_bytes() + b"\n")
    with pytest.raises(DatasetError, match="expected"):
        datasets.resolve("shields2021-direct-arylation")


def test_altered_mirror_copy_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = datasets.resolve("shields2021-direct-arylation")
    dst = tmp_path / "reactions" / src.name
    dst.parent.mkdir(parents=True)
    shutil.copy(src, dst)
    with open(dst, "a") as f:
        f.write("x")
    monkeypatch.setenv("RSI_WORKBENCH_DATA", str(tmp_path))
    ok, detail = datasets.verify("shields2021-direct-arylation")
    assert not ok and "sha256" in detail


def test_unknown_dataset() -> None:
    with pytest.raises(DatasetError, match="registered"):
        datasets.spec("imagenet")


def test_every_registered_dataset_has_a_card_in_the_top_level_datasets_folder() -> None:
    """``datasets/registry.json`` is the source of truth the package links to; each entry has a card
    naming its licence, checksum (file datasets) and how to mirror it."""
    repo = Path(__file__).resolve().parents[1]
    reg = json.loads((repo / "datasets" / "registry.json").read_text())
    assert json.loads((repo / "rsi_workbench" / "datasets.json").read_text()) == reg
    for name, entry in reg.items():
        card = (repo / "datasets" / "cards" / f"{name}.md").read_text()
        assert entry["licence"] in card and "How to mirror" in card, name
        if "sha256" in entry:
            assert entry["sha256"] in card, name
