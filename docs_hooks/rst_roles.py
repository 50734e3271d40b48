"""MkDocs hook: Sphinx cross-reference roles in docstrings read as code on the API page.

The package's docstrings use reST roles (``:func:`name```, ``:class:`~pkg.Name```), which
mkdocstrings (Google style) leaves as text: the page showed ``:func:`` before each name. This hook
turns every such role in a page's HTML into the code span alone (a leading ``~`` keeps the last
dotted part, as Sphinx shows it). Registered under ``hooks:`` in mkdocs.yml.
"""

from __future__ import annotations

import re
from typing import Any

ROLES = "func|class|meth|mod|attr|data|obj|exc|const|py:[a-z]+"
_ROLE = re.compile(rf":(?:{ROLES}):<code>(~?)([^<]+)</code>")


def _code(m: re.Match[str]) -> str:
    name = m.group(2)
    if m.group(1):  # ~pkg.mod.Name -> Name
        name = name.rsplit(".", 1)[-1]
    return f"<code>{name}</code>"


def strip_roles(html: str) -> str:
    """``html`` with every ``:role:<code>x</code>`` written as ``<code>x</code>``."""
    return _ROLE.sub(_code, html)


def on_page_content(html: str, **_: Any) -> str:
    return strip_roles(html)
