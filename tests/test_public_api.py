"""The public API: each room's ``__all__`` resolves, the top level names the entry points lazily, and
no notebook or dashboard reaches into a private name of the package."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LAZY_PACKAGES = ("rsi_workbench", "rsi_workbench.protocol", "rsi_workbench.discovery", "rsi_workbench.viz")
ROOMS = (*LAZY_PACKAGES, "rsi_workbench.replay", "rsi_workbench.memory", "rsi_workbench.records")


@pytest.mark.parametrize("package", ROOMS)
def test_every_exported_name_resolves(package: str) -> None:
    mod = importlib.import_module(package)
    assert mod.__all__, f"{package} declares no __all__"
    assert len(set(mod.__all__)) == len(mod.__all__), f"{package}.__all__ repeats a name"
    missing = [n for n in mod.__all__ if not hasattr(mod, n)]
    assert not missing, f"{package}.__all__ names what it does not have: {missing}"
    assert set(mod.__all__) <= set(dir(mod))


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_type_checking_imports_match_the_lazy_exports(package: str) -> None:
    """A lazy package states its exports twice (for type checkers and the API docs, and for
    ``__getattr__``): both lists and ``__all__`` are the same names."""
    mod = importlib.import_module(package)
    tree = ast.parse(Path(str(mod.__file__)).read_text())
    typed = {
        (n.module, a.name)
        for block in tree.body
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
        for n in block.body
        if isinstance(n, ast.ImportFrom)
        for a in n.names
    }
    assert {name for _, name in typed} == set(mod.__all__) - {"__version__"}
    assert {(where, name) for name, where in mod._EXPORTS.items()} == typed


def test_protocol_names_the_domain_base_class() -> None:
    import rsi_workbench as rw
    from rsi_workbench.protocol.spec import BaseEnvironment

    assert rw.BaseEnvironment is BaseEnvironment
    assert "BaseEnvironment" in importlib.import_module("rsi_workbench.protocol").__all__


def test_an_unknown_name_is_an_attribute_error() -> None:
    import rsi_workbench

    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        rsi_workbench.Nope  # noqa: B018
    assert importlib.import_module("rsi_workbench.viz.cycles").__name__ == "rsi_workbench.viz.cycles"


def test_importing_the_package_imports_no_heavy_library() -> None:
    program = (
        "import sys, rsi_workbench, rsi_workbench.protocol, rsi_workbench.discovery, rsi_workbench.viz; "
        "print(sorted(m for m in ('torch', 'pandas', 'plotly', 'numpy', 'panel') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert out.stdout.strip() == "[]"


# -- no private names from notebooks and dashboards ----------------------------------------------


def _sources() -> Iterator[tuple[str, str]]:
    for nb in sorted((REPO / "notebooks").glob("*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        for i, c in enumerate(cells):
            if c["cell_type"] == "code":
                lines = "".join(c["source"]).splitlines()
                # IPython magics and shell escapes are not Python
                yield (
                    f"{nb.name} cell {i}",
                    "\n".join(x for x in lines if not x.lstrip().startswith(("%", "!"))),
                )
    for f in sorted((REPO / "widgets").glob("*.py")):
        yield f"widgets/{f.name}", f.read_text(encoding="utf-8")


def _is_module(name: str) -> bool:
    """Whether ``name`` is a module or package of this checkout (read from the files: importing
    would load each dashboard's Panel stack)."""
    base = REPO.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def private_uses(where: str, source: str) -> list[str]:
    """``from rsi_workbench... import _x``, a private module outside the file's own package
    (``rsi_workbench.viz._style``), and ``mod._x`` on a name bound to an ``rsi_workbench`` module."""
    own = "rsi_workbench.widgets" if where.startswith("widgets/") else None  # its own _app helpers
    found: list[str] = []
    modules: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rsi_workbench"):
            parts = node.module.split(".")
            inside_own = own is not None and node.module.startswith(own + ".")
            if any(p.startswith("_") for p in parts) and not inside_own:
                found.append(f"{where}:{node.lineno}: from {node.module} import ...")
            for a in node.names:
                if a.name.startswith("_"):
                    found.append(f"{where}:{node.lineno}: from {node.module} import {a.name}")
                elif _is_module(f"{node.module}.{a.name}"):
                    modules.add(a.asname or a.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("rsi_workbench"):
                    modules.add(a.asname or a.name.split(".")[0])
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and (ast.unparse(node.value).split(".")[0] in modules)
        ):
            found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_notebook_or_dashboard_imports_a_private_name() -> None:
    found = [hit for where, src in _sources() for hit in private_uses(where, src)]
    assert not found, "private names used outside the package:\n" + "\n".join(found)


def test_the_private_name_check_catches_each_form() -> None:
    src = (
        "from rsi_workbench.viz.cycles import _cycle_detail\n"
        "from rsi_workbench.viz._style import kind_colours\n"
        "import rsi_workbench.viz.cycles as cy\n"
        "from rsi_workbench.viz import cycles\n"
        "cy._secret(1); cycles._other; self_thing._fine\n"
    )
    hits = private_uses("notebook cell 0", src)
    assert len(hits) == 4, hits
    assert not private_uses("widgets/x.py", "from rsi_workbench.widgets._app import served_app\n")


def test_the_api_page_names_every_top_level_entry_point() -> None:
    import rsi_workbench

    page = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    table = page.split("## The top level", 1)[1].split("\n## ", 1)[0]
    missing = [n for n in rsi_workbench.__all__ if n != "__version__" and f"`{n}`" not in table]
    assert not missing, f"docs/api.md's top-level table lacks {missing}"
    rooms = [n for n in ROOMS if n != "rsi_workbench"]
    assert all(f"::: {room}" in page for room in rooms), "docs/api.md documents every room"
