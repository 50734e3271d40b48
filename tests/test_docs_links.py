"""Every relative link in README.md and docs/ points at a file that exists.

``mkdocs build --strict`` (make lint) checks the links between pages of docs/; the README is not
part of the site, so its links (into docs/, to files of the repository) are checked here, and the
docs' links once more without MkDocs installed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")


def doc_files() -> list[Path]:
    """README.md and every Markdown page under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def relative_links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every link outside code whose target is not a URL or a bare anchor."""
    out: list[tuple[int, str]] = []
    fence: str | None = None
    for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        m = FENCE.match(line)
        if fence is not None:
            if (
                m
                and m[1][0] == fence[0]
                and len(m[1]) >= len(fence)
                and not line.strip()[len(m[1]) :].strip()
            ):
                fence = None
            continue
        if m:
            fence = m[1]
            continue
        for target in LINK.findall(INLINE_CODE.sub("", line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
                continue
            out.append((no, target))
    return out


def test_the_readme_links_into_the_docs() -> None:
    targets = [t for _, t in relative_links(ROOT / "README.md")]
    assert any(t.startswith("docs/") for t in targets), targets


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path: Path) -> None:
    broken = []
    for no, target in relative_links(path):
        file_part = target.split("#", 1)[0]
        if not (path.parent / file_part).exists():
            broken.append(f"{path.relative_to(ROOT)}:{no}: {target}")
    assert not broken, "links to files that do not exist:\n" + "\n".join(broken)


def test_a_link_in_code_is_not_a_link(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text(
        "[a](a.md) `[b](b.md)` [c](https://x.org) [d](#top)\n```\n[e](e.md)\n```\n![f](img/f.png)\n"
    )
    assert relative_links(page) == [(1, "a.md"), (5, "img/f.png")]
