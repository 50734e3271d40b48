"""The MkDocs hook that shows reST roles of docstrings as code on the API page."""

from __future__ import annotations

import importlib.util
from pathlib import Path

HOOK = Path(__file__).resolve().parent.parent / "docs_hooks" / "rst_roles.py"


def _hook():
    spec = importlib.util.spec_from_file_location("rst_roles", HOOK)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_roles_become_code_spans_and_a_tilde_keeps_the_last_name():
    h = _hook()
    html = (
        "see :func:<code>rsi_workbench.viz.plot_cycles</code> and "
        ":class:<code>~rsi_workbench.protocol.loop.Loop</code>; :py:meth:<code>Run.append</code>"
    )
    assert h.on_page_content(html, page=None, config=None, files=None) == (
        "see <code>rsi_workbench.viz.plot_cycles</code> and <code>Loop</code>; <code>Run.append</code>"
    )
    assert h.strip_roles("a ratio 3:2 <code>x</code>") == "a ratio 3:2 <code>x</code>"  # not a role
