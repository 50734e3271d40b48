"""RESULTS.md and the docs hold no scratch paths, no machine paths and no issue numbers, and RESULTS.md
stays short enough to read (frozen pre-registered configs are not checked: they are never edited)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# sandbox-internal paths the docs describe (inside the sandbox's private tmpfs), not machine paths
ALLOWED = {
    ("docs/extending-dreaming.md", "/tmp/candidate-XXXX"),
    ("docs/extending-dreaming.md", "/root/secret"),
    ("docs/configs.md", "/home/me/my_tasks.jsonl"),  # an example path in a quoted error message
}
BAD = re.compile(r"/tmp/\S*|/work/\S*|/root/\S*|/home/\S*|\b[Ii]ssues? #?\d+")


def _files() -> list[Path]:
    return [REPO / "benchmarks" / "RESULTS.md", *sorted((REPO / "docs").rglob("*.md"))]


def test_no_scratch_or_machine_paths_and_no_issue_numbers() -> None:
    found = []
    for f in _files():
        rel = str(f.relative_to(REPO))
        for n, line in enumerate(f.read_text().splitlines(), 1):
            for m in BAD.finditer(line):
                if not any(rel == a and m.group().startswith(s) for a, s in ALLOWED):
                    found.append(f"{rel}:{n}: {m.group()}")
    assert not found, "\n".join(found[:40])


def test_results_md_is_at_most_1000_lines() -> None:
    assert len((REPO / "benchmarks" / "RESULTS.md").read_text().splitlines()) <= 1000
