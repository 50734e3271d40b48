"""Every shell example the docs mark runnable runs, and exits 0.

A runnable example is a ```` ```bash ```` fence right after a line ``<!-- runnable -->`` in
``README.md`` or a page under ``docs/`` (docs/contributing.md). Each block runs with ``bash -e -o
pipefail`` in a fresh temporary folder holding a copy of ``configs/`` and ``pyproject.toml``, so
``configs/...`` and ``runs/...`` mean what they mean at the repository root and nothing is written
into the checkout.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MARKER = "<!-- runnable -->"
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
BLOCK_TIMEOUT_S = 60


@dataclass(frozen=True)
class Example:
    """One runnable block: where it is (file, line of its opening fence) and its shell code."""

    path: Path
    line: int
    code: str

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def doc_files() -> list[Path]:
    """README.md and every Markdown page under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def extract_runnable(path: Path) -> list[Example]:
    """The blocks marked runnable in one Markdown file (markers inside other fences are text).

    A marker not followed (blank lines aside) by a ``bash`` or ``sh`` fence is an error naming the
    file and line, so a marker cannot silently stop marking anything.
    """
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Example] = []
    open_fence: str | None = None
    pending: int | None = None  # line number of a marker waiting for its block
    body: list[str] | None = None
    start = 0
    for no, line in enumerate(lines, start=1):
        m = FENCE.match(line)
        if open_fence is not None:
            if (
                m
                and m["fence"][0] == open_fence[0]
                and len(m["fence"]) >= len(open_fence)
                and not m["info"].strip()
            ):
                if body is not None:
                    found.append(Example(path, start, "\n".join(body) + "\n"))
                open_fence, body = None, None
            elif body is not None:
                body.append(line)
            continue
        if pending is not None and line.strip():
            lang = m["info"].strip().split()[0] if m and m["info"].strip() else ""
            if not m or lang not in ("bash", "sh"):
                raise ValueError(
                    f"{path}:{pending}: {MARKER} must be followed by a ```bash block (got {line!r})"
                )
            open_fence, body, start, pending = m["fence"], [], no, None
            continue
        if line.strip() == MARKER:
            pending = no
        elif m:
            open_fence = m["fence"]
    if pending is not None:
        raise ValueError(f"{path}:{pending}: {MARKER} at the end of the file marks no block")
    if open_fence is not None:
        raise ValueError(f"{path}:{start}: a code fence is never closed")
    return found


def all_examples() -> list[Example]:
    return [ex for f in doc_files() for ex in extract_runnable(f)]


def _workdir(tmp: Path) -> Path:
    """A folder that looks like the repository root for the examples: configs/ and pyproject.toml."""
    shutil.copytree(ROOT / "configs", tmp / "configs")
    shutil.copy2(ROOT / "pyproject.toml", tmp / "pyproject.toml")
    return tmp


def _env(work: Path) -> dict[str, str]:
    from rsi_workbench.datasets import mirror_dir

    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["RSI_WORKBENCH_RUNS"] = str(work / "runs")
    env["RSI_WORKBENCH_ROOT"] = str(work)
    mirror = mirror_dir()
    if mirror is not None:
        env["RSI_WORKBENCH_DATA"] = str(mirror)
    return env


def test_the_docs_mark_examples_runnable() -> None:
    """The marker is in use (a rename of the marker would otherwise skip everything silently)."""
    names = [ex.name for ex in all_examples()]
    assert len(names) >= 5, names
    assert any(n.startswith("README.md:") for n in names), names


def test_a_marker_inside_another_fence_is_text(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "````markdown\n<!-- runnable -->\n```bash\nexit 1\n```\n````\n\n"
        "<!-- runnable -->\n\n```bash\necho ok\n```\n\n```bash\nexit 1\n```\n"
    )
    assert [(ex.line, ex.code) for ex in extract_runnable(page)] == [(10, "echo ok\n")]
    page.write_text("<!-- runnable -->\n```python\nprint(1)\n```\n")
    with pytest.raises(ValueError, match="page.md:1"):
        extract_runnable(page)


@pytest.mark.parametrize("example", all_examples(), ids=lambda ex: ex.name)
def test_runnable_example(example: Example, tmp_path: Path) -> None:
    work = _workdir(tmp_path)
    script = work / "example.sh"
    script.write_text(example.code)
    try:
        proc = subprocess.run(
            ["bash", "-e", "-o", "pipefail", str(script)],
            cwd=work,
            env=_env(work),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=BLOCK_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{example.name}: still running after {BLOCK_TIMEOUT_S} s:\n{example.code}")
    assert proc.returncode == 0, (
        f"{example.name} exited {proc.returncode}\n--- code\n{example.code}--- stdout\n{proc.stdout[-3000:]}"
        f"\n--- stderr\n{proc.stderr[-3000:]}"
    )


def docstring_examples(doc: str) -> list[str]:
    """The literal blocks (``::`` then an indented block) of a docstring, dedented."""
    import textwrap

    lines = doc.splitlines()
    found: list[str] = []
    i = 0
    while i < len(lines):
        if lines[i].rstrip().endswith("::"):
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            indent = len(lines[j]) - len(lines[j].lstrip()) if j < len(lines) else 0
            body: list[str] = []
            while j < len(lines) and (
                not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) >= indent > 0
            ):
                body.append(lines[j])
                j += 1
            if indent:
                found.append(textwrap.dedent("\n".join(body)).strip() + "\n")
            i = j
        else:
            i += 1
    return found


def help_rw_examples() -> list[tuple[str, str]]:
    """``help(rw)``'s examples: the package docstring's and ``rw.run_protocol``'s (it points there)."""
    import rsi_workbench as rw

    docs = {"rsi_workbench": rw.__doc__ or "", "rsi_workbench.run_protocol": rw.run_protocol.__doc__ or ""}
    return [
        (f"{name}[{i}]", code) for name, doc in docs.items() for i, code in enumerate(docstring_examples(doc))
    ]


def test_help_rw_has_examples() -> None:
    names = [name for name, _ in help_rw_examples()]
    assert "rsi_workbench[0]" in names and "rsi_workbench.run_protocol[0]" in names, names


@pytest.mark.parametrize(("name", "code"), help_rw_examples(), ids=[n for n, _ in help_rw_examples()])
def test_help_rw_example_runs(name: str, code: str, tmp_path: Path) -> None:
    """Each runs as written, from a folder laid out like the repository root (configs/, examples/)."""
    work = _workdir(tmp_path)
    shutil.copytree(ROOT / "examples" / "discovery_tree", work / "examples" / "discovery_tree")
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=work, env=_env(work), stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=BLOCK_TIMEOUT_S,
    )  # fmt: skip
    assert proc.returncode == 0, (
        f"{name} exited {proc.returncode}\n--- code\n{code}--- stderr\n{proc.stderr[-3000:]}"
    )
