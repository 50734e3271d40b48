"""The non-LLM baseline proposer for OpenEvolve tasks: seeded edits of the evolve block only.

Each child changes one to three tokens of the parent's evolve block, drawn with
``random.Random(seed)``: a numeric literal (a float scaled by ``exp(N(0, 0.5))`` or shifted when it
is 0, an int moved by ±1 or ±2, never below 0 when it was positive; an int inside a subscript such
as ``bounds[1]`` or ``x[:, 0]`` is an index, never moved) with weight 0.85, or an
arithmetic / comparison operator swapped for its counterpart (``+``/``-``, ``*``/``/``, ``<``/``>``,
``<=``/``>=``) with weight 0.15. A draw whose program does not parse is redrawn (at most 20
times). Every change is recorded (line and column within the block, old and new text), so a
node says exactly how it differs from its parent; the text outside the block is never touched.
"""

from __future__ import annotations

import ast
import io
import keyword
import math
import random
import tokenize
from typing import Any

SWAPS = {"+": "-", "-": "+", "*": "/", "/": "*", "<": ">", ">": "<", "<=": ">=", ">=": "<="}
NUMBER_WEIGHT = 0.85


def _tokens(block: str) -> list[tokenize.TokenInfo]:
    """The mutable tokens: numbers (but ints inside a subscript) and swappable operators."""
    out: list[tokenize.TokenInfo] = []
    brackets: list[bool] = []  # per open bracket: whether it (or one around it) is a subscript
    prev: tokenize.TokenInfo | None = None
    try:
        for t in tokenize.generate_tokens(io.StringIO(block).readline):
            if t.type == tokenize.OP and t.string in "([{":
                sub = t.string == "[" and prev is not None and _indexable(prev)
                brackets.append(sub or (bool(brackets) and brackets[-1]))
            elif t.type == tokenize.OP and t.string in ")]}":
                if brackets:
                    brackets.pop()
            if t.type == tokenize.NUMBER and (v := _numeric(t.string)) is not None:
                if not (isinstance(v, int) and brackets and brackets[-1]):
                    out.append(t)
            elif t.type == tokenize.OP and t.string in SWAPS:
                out.append(t)
            if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
                prev = t
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return []
    return out


def _indexable(tok: tokenize.TokenInfo) -> bool:
    """Whether a ``[`` after ``tok`` opens a subscript (``a[``, ``f()[``, ``a[0][``, ``"s"[``), not a list."""
    if tok.type == tokenize.NAME:
        return not keyword.iskeyword(tok.string) or tok.string in ("None", "True", "False")
    return tok.type == tokenize.STRING or (tok.type == tokenize.OP and tok.string in (")", "]", "}"))


def _numeric(text: str) -> int | float | None:
    s = text.replace("_", "")
    if s.lower().endswith("j") or s[:2].lower() in ("0x", "0o", "0b"):
        return None
    try:
        return int(s) if s.isdigit() else float(s)
    except ValueError:
        return None


def _new_number(old: str, rng: random.Random) -> str:
    v = _numeric(old)
    if isinstance(v, int):
        step = rng.choice((-2, -1, 1, 2))
        return str(max(0 if v > 0 else v + step, v + step))
    assert v is not None
    nv = v * math.exp(rng.gauss(0.0, 0.5)) if v != 0 else rng.uniform(-0.5, 0.5)
    text = format(nv, ".6g")
    return text if any(c in text for c in ".einf") else text + ".0"


def _apply(block: str, edits: list[tuple[tokenize.TokenInfo, str]]) -> str:
    lines = block.splitlines(keepends=True)
    for tok, new in sorted(
        edits, key=lambda e: e[0].start, reverse=True
    ):  # right to left: columns stay valid
        (row, col), (erow, ecol) = tok.start, tok.end
        assert row == erow
        line = lines[row - 1]
        lines[row - 1] = line[:col] + new + line[ecol:]
    return "".join(lines)


def mutate_block(
    block: str, seed: int, *, prefix: str = "", suffix: str = ""
) -> tuple[str, list[dict[str, Any]]]:
    """A mutated copy of ``block`` and the list of its changes (``[]``: nothing mutable, or no
    parseable draw — the child is then the parent's block unchanged). ``prefix``/``suffix`` (the
    program around the block) are used only to check that the whole program still parses."""
    rng = random.Random(seed)
    toks = _tokens(block)
    nums = [t for t in toks if t.type == tokenize.NUMBER]
    ops = [t for t in toks if t.type == tokenize.OP]
    if not toks:
        return block, []
    for _ in range(20):
        k = rng.choice((1, 1, 2, 3))
        chosen: dict[tuple[int, int], tuple[tokenize.TokenInfo, str]] = {}
        for _ in range(k):
            pool = nums if (nums and (not ops or rng.random() < NUMBER_WEIGHT)) else ops
            tok = rng.choice(pool)
            new = _new_number(tok.string, rng) if tok.type == tokenize.NUMBER else SWAPS[tok.string]
            chosen[tok.start] = (tok, new)
        edits = [e for e in chosen.values() if e[0].string != e[1]]
        if not edits:
            continue
        out = _apply(block, edits)
        try:
            ast.parse(prefix + out + suffix)
        except SyntaxError:
            continue
        changes = [
            {"line": t.start[0], "col": t.start[1], "old": t.string, "new": new}
            for t, new in sorted(edits, key=lambda e: e[0].start)
        ]
        return out, changes
    return block, []
