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


def test_bare_runs_lists_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``rsi-workbench runs`` with no sub-command lists the runs, as ``runs list`` does."""
    from rsi_workbench.records import Run

    root = tmp_path / "runs"
    with Run.create(root / "exp" / "r1", {"name": "r1"}, kind="demo") as run:
        run.append("note", {"x": 1})
    assert main(["runs", "list", "--root", str(root)]) == 0
    listed = capsys.readouterr().out
    assert "exp/r1" in listed and "demo" in listed
    assert main(["runs", "--root", str(root)]) == 0
    assert capsys.readouterr().out == listed
    monkeypatch.setenv("RSI_WORKBENCH_RUNS", str(root))
    assert main(["runs"]) == 0
    assert capsys.readouterr().out == listed
    assert main(["runs", "--root", str(tmp_path / "none")]) == 0
    assert "no runs under" in capsys.readouterr().out


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


def test_report_prints_without_writing_unless_saved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "smoke.yaml"
    cfg.write_text("experiment: records_smoke\ndatasets: [sklearn-wine]\n")
    out = tmp_path / "runs" / "s1"
    assert main(["run", str(cfg), "--out", str(out)]) == 0  # a run writes report.txt
    saved = (out / "report.txt").read_text()
    (out / "report.txt").unlink()
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    assert capsys.readouterr().out == saved and not (out / "report.txt").exists()  # viewing never writes
    assert main(["report", str(out), "--save"]) == 0
    assert (out / "report.txt").read_text() == saved


def test_bad_task_file_exits_2_with_the_loaders_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"task_id": "t1", "entry_point": "f"}\n')
    cfg = tmp_path / "cr.yaml"
    cfg.write_text(f"experiment: code_repair\ntasks: {{path: {tasks}}}\n")
    assert main(["run", str(cfg), "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "tasks.jsonl" in err and "Traceback" not in err
    assert not (tmp_path / "x").exists()


def test_bad_grid_csv_exits_2_with_the_loaders_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grid = tmp_path / "screen.csv"
    grid.write_text("catalyst,T_K,y\nPd,298,12\nNi,hot,30\n")
    cfg = tmp_path / "rx.yaml"
    cfg.write_text(
        f"experiment: reactions\ngrids:\n  - name: s\n    path: {grid}\n    factors:\n"
        "      - {column: catalyst}\n      - {column: T_K, kind: numeric}\n    yield_column: y\n"
    )
    assert main(["run", str(cfg), "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "screen.csv: row 3: factor 'T_K' must be a finite number, got 'hot'" in err
    assert "Traceback" not in err


def test_extend_needs_out_and_an_extensible_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "smoke.yaml"
    cfg.write_text("experiment: records_smoke\ndatasets: [sklearn-wine]\n")
    assert main(["run", str(cfg), "--extend"]) == 2
    assert "--extend needs --out" in capsys.readouterr().err
    assert main(["run", str(cfg), "--out", str(tmp_path / "s"), "--extend"]) == 2
    assert "cannot be extended" in capsys.readouterr().err
    cr = tmp_path / "cr.yaml"
    cr.write_text("experiment: code_repair\ntasks: {limit: 3}\nworld: {folds: 3}\n")  # 3 problems, 3 folds
    assert main(["run", str(cr), "--out", str(tmp_path / "none"), "--extend"]) == 2
    assert "needs an existing experiment directory" in capsys.readouterr().err


def test_a_listing_piped_into_a_reader_that_quits_ends_quietly(tmp_path: Path) -> None:
    """`rsi-workbench runs | head -1`: the closed pipe ends the listing without a traceback (more
    lines than a pipe's buffer holds, so the listing does write into the closed pipe)."""
    from rsi_workbench.records import Run

    for i in range(800):
        Run.create(tmp_path / f"r{i}", {}, kind="t").close()
    p = subprocess.run(
        f"{sys.executable} -m rsi_workbench runs --root {tmp_path} | head -1",
        shell=True,
        capture_output=True,
        text=True,
        check=False,
    )
    assert "Traceback" not in p.stderr and "BrokenPipe" not in p.stderr
