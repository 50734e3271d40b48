"""The `rsi-workbench` command line: run/resume/report a real smoke, list/show/query runs, datasets."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rsi_workbench.cli import build_parser, main


def _subcommands(parser) -> list[list[str]]:  # type: ignore[no-untyped-def]
    import argparse

    out: list[list[str]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out.append([name])
                out.extend([name, *rest] for rest in _subcommands(sub))
    return out


def test_help_on_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    cmds = _subcommands(build_parser())
    assert ["run"] in cmds and ["runs", "list"] in cmds and ["datasets", "verify"] in cmds
    for cmd in [[], *cmds]:
        with pytest.raises(SystemExit) as e:
            main([*cmd, "--help"])
        assert e.value.code == 0
        assert "usage:" in capsys.readouterr().out


def test_smoke_run_resume_report_query(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "smoke.yaml"
    cfg.write_text("experiment: records_smoke\ndatasets: [edbo-suzuki, sklearn-wine]\n")
    out = tmp_path / "runs" / "s1"
    assert main(["run", str(cfg), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "2/2 datasets ok" in text and (out / "report.txt").exists()
    assert main(["resume", str(out)]) == 0  # nothing left to do: same table
    assert "2/2 datasets ok" in capsys.readouterr().out
    assert main(["runs", "list", "--root", str(tmp_path / "runs")]) == 0
    assert "records_smoke" in capsys.readouterr().out
    assert main(["runs", "show", str(out)]) == 0
    assert "dataset_checked" in capsys.readouterr().out
    assert (
        main(
            [
                "query",
                "SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY kind",
                "--root",
                str(tmp_path / "runs"),
            ]
        )
        == 0
    )
    q = capsys.readouterr().out
    assert "dataset_checked" in q and "smoke_finished" in q


def test_bad_config_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("experiment: records_smoke\ndatasetz: []\n")
    assert main(["run", str(cfg), "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert str(cfg) in err and "datasetz" in err
    cfg.write_text("experiment: nonsense\n")
    assert main(["run", str(cfg)]) == 2
    assert "allowed" in capsys.readouterr().err


def test_datasets_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["datasets", "list"]) == 0
    assert "humanevalpack-python" in capsys.readouterr().out
    assert main(["datasets", "verify", "humanevalpack-python", "sklearn-wine"]) == 0
    assert capsys.readouterr().out.count("ok") >= 2


def test_module_entry_point() -> None:
    r = subprocess.run([sys.executable, "-m", "rsi_workbench", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "rsi-workbench" in r.stdout
