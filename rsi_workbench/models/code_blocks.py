"""Code in a language model's answer: the first fenced block defining an entry point, or the text
from its first line that starts code, trimmed to what parses (an answer cut at ``max_tokens``).

Shared by every domain whose agents write programs (code repair's ``LLMCoder``, the math tasks'
program-writing agent)::

    from rsi_workbench.models.code_blocks import extract_code

    extract_code("Here:\n```python\ndef f(x):\n    return x + 1\n```", "f")  # 'def f(x):\n    return x + 1\n'
"""

from __future__ import annotations

import ast
import re

__all__ = ["extract_code", "parses", "trim_to_parse"]

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)(?:```|\Z)", re.S)
_CODE_START = re.compile(r"^(?:def |async def |import |from |@|class )", re.M)


def parses(src: str) -> ast.Module | None:
    """The module ``src`` parses to, or None (a syntax error, a null byte, too deep to parse)."""
    try:
        return ast.parse(src)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def trim_to_parse(src: str) -> str | None:
    """``src``, or its longest prefix of whole lines that parses (an answer cut at ``max_tokens``)."""
    lines = src.rstrip().split("\n")
    for end in range(len(lines), 0, -1):
        text = "\n".join(lines[:end])
        if parses(text) is not None and text.strip():
            return text.rstrip() + "\n"
    return None


def extract_code(text: str, entry_point: str) -> str | None:
    """The code of an answer: the first fenced block defining ``entry_point`` (else any fenced
    block), else the text from its first line that starts code (``def``, ``import``...). A block
    cut short is trimmed to its longest parseable prefix. None when nothing parses."""
    blocks = [m.group(2) for m in _FENCE.finditer(text)]
    defining = [b for b in blocks if re.search(rf"\bdef\s+{re.escape(entry_point)}\s*\(", b)]
    tries = defining + [b for b in blocks if b not in defining]
    start = _CODE_START.search(text)
    if start is not None and not blocks:
        tries.append(text[start.start() :])
    for src in tries:
        code = trim_to_parse(src)
        if code is not None:
            return code
    return None
