"""The house's standing rules (docs/architecture.md, Rooms): experiments stay thin — at most 6,000
lines in ``rsi_workbench/experiments/`` (components go to their domain, studies to ``studies/``) —
and the package holds no study: the only ``python -m`` entry points under ``rsi_workbench/`` are the
CLI, the sandbox's children, a domain's command and the forwarding modules that keep frozen configs'
commands working (a dozen lines each, running a script in ``studies/``)."""

from __future__ import annotations

from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "rsi_workbench"
EXPERIMENTS_MAX_LINES = 6000
ENTRY_POINTS = {
    "cli.py",
    "sandbox/_child.py",
    "sandbox/_judge_child.py",
    "domains/code_repair/world_adapter.py",
}


def test_experiments_stay_thin() -> None:
    lines = sum(len(p.read_text().splitlines()) for p in (PKG / "experiments").rglob("*.py"))
    assert lines <= EXPERIMENTS_MAX_LINES, (
        f"rsi_workbench/experiments/ has {lines} lines (at most {EXPERIMENTS_MAX_LINES}): move components "
        "to their domain (rsi_workbench/domains/<d>/) and studies to studies/<name>/"
    )


def test_no_study_lives_in_the_package() -> None:
    for p in sorted(PKG.rglob("*.py")):
        text = p.read_text()
        if '__name__ == "__main__"' not in text:
            continue
        rel = p.relative_to(PKG).as_posix()
        if rel in ENTRY_POINTS:
            continue
        assert "studies" in text and len(text.splitlines()) <= 20, (
            f"rsi_workbench/{rel} is a python -m script: a study belongs in studies/<name>/ (a forwarding "
            "module of a dozen lines may stay where a frozen config names it)"
        )
