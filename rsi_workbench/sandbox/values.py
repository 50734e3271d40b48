"""The tagged value encoding of the result frame, on the host side.

A frame carries JSON. Values JSON has no form for are tagged with a one-key object (exact built-in
types only; no subclass survives the candidate's encoder):

=========================  ==========================================
``{"$d": {str: v}}``       a dict whose keys are all ``str``
``{"$m": [[k, v], ...]}``  a dict with any other keys
``{"$t": [...]}``          a tuple
``{"$l": [...]}``          a list that must stay a list (expected values only, see :func:`align`)
``{"$s": [...]}``          a set
``{"$z": [...]}``          a frozenset
``{"$b": "hex"}``          bytes
``{"$c": [re, im]}``       a complex number
``{"$f": "nan"|"inf"|"-inf"}``  a non-finite float
=========================  ==========================================

A plain JSON list is a list and a plain JSON object (untagged) a dict with str keys. The candidate's
process tags every dict; test files may leave dicts untagged. :func:`decode` turns a tagged value into
the Python value, :func:`encode` does the reverse, and :func:`align` implements the io test's rule
for an expected value written in JSON: a plain list in the expected value also matches a tuple in
the result (a hand-written test cannot say "tuple"), a ``$l`` list or a ``$t`` tuple only its own type.
"""

from __future__ import annotations

import math
from typing import Any

MAX_DEPTH = 200
TAGS = frozenset({"$d", "$m", "$t", "$l", "$s", "$z", "$b", "$c", "$f"})


class ValueFormatError(ValueError):
    """A tagged value is malformed (unknown tag, wrong payload, unhashable set item, too deep)."""


def decode(x: Any, depth: int = 0, *, frame: bool = False) -> Any:
    """The Python value of a tagged JSON value (in a test file dicts may also come untagged, with
    str keys). ``frame``: the result frame's stricter form (every dict tagged, no ``$l``)."""
    if depth > MAX_DEPTH:
        raise ValueFormatError("nested too deeply")
    t = type(x)
    if x is None or t in (bool, int, str, float):
        return x
    if t is list:
        return [decode(v, depth + 1, frame=frame) for v in x]
    if t is not dict:
        raise ValueFormatError(f"value of type {t.__name__}")
    if len(x) != 1 or next(iter(x)) not in TAGS or (frame and "$l" in x):
        if frame:
            raise ValueFormatError("untagged dict")
        return {k: decode(v, depth + 1) for k, v in x.items()}
    ((tag, p),) = x.items()
    try:
        return _decode_tag(tag, p, depth, frame)
    except (TypeError, ValueError) as e:
        if isinstance(e, ValueFormatError):
            raise
        raise ValueFormatError(f"malformed {tag} value ({e})") from None


def _items(p: Any, depth: int, frame: bool) -> list[Any]:
    if type(p) is not list:
        raise ValueFormatError("tagged payload is not a list")
    return [decode(v, depth + 1, frame=frame) for v in p]


def _decode_tag(tag: str, p: Any, depth: int, frame: bool) -> Any:
    if tag == "$d":
        if type(p) is not dict:
            raise ValueFormatError("malformed $d value")
        return {k: decode(v, depth + 1, frame=frame) for k, v in p.items()}
    if tag == "$m":
        pairs = _items(p, depth, frame)
        if not all(type(kv) is list and len(kv) == 2 for kv in pairs):
            raise ValueFormatError("malformed $m value")
        return {k: v for k, v in pairs}
    if tag in ("$t", "$l"):
        items = _items(p, depth, frame)
        return tuple(items) if tag == "$t" else items
    if tag in ("$s", "$z"):
        items = _items(p, depth, frame)
        return set(items) if tag == "$s" else frozenset(items)
    if tag == "$b":
        if type(p) is not str:
            raise ValueFormatError("malformed $b value")
        return bytes.fromhex(p)
    if tag == "$c":
        parts = _items(p, depth, frame)
        if len(parts) != 2 or not all(type(v) in (int, float) for v in parts):
            raise ValueFormatError("malformed $c value")
        return complex(parts[0], parts[1])
    if p not in ("nan", "inf", "-inf"):
        raise ValueFormatError("malformed $f value")
    return float(p)


def encode(x: Any, depth: int = 0, *, strict_lists: bool = False) -> Any:
    """The tagged JSON form of a Python value made of exact built-in types (``ValueFormatError``
    otherwise), as a test file stores it: str-keyed dicts untagged unless that is ambiguous.
    ``strict_lists`` writes lists as ``{"$l": ...}`` (an expected value that only a list matches)."""
    if depth > MAX_DEPTH:
        raise ValueFormatError("nested too deeply")
    t = type(x)
    if x is None or t in (bool, int, str):
        return x
    if t is float:
        return x if math.isfinite(x) else {"$f": "nan" if x != x else ("inf" if x > 0 else "-inf")}

    def enc(v: Any) -> Any:
        return encode(v, depth + 1, strict_lists=strict_lists)

    if t is list:
        items = [enc(v) for v in x]
        return {"$l": items} if strict_lists else items
    if t is tuple:
        return {"$t": [enc(v) for v in x]}
    if t is set or t is frozenset:
        return {"$s" if t is set else "$z": [enc(v) for v in x]}
    if t is bytes:
        return {"$b": x.hex()}
    if t is complex:
        return {"$c": [enc(x.real), enc(x.imag)]}
    if t is dict:
        if not all(type(k) is str for k in x):
            return {"$m": [[enc(k), enc(v)] for k, v in x.items()]}
        d = {k: enc(v) for k, v in x.items()}
        return {"$d": d} if len(d) == 1 and next(iter(d)) in TAGS else d  # untagged unless ambiguous
    raise ValueFormatError(f"value of type {t.__name__} has no tagged form")


def loosen(x: Any, depth: int = 0) -> Any:
    """A decoded result in the JSON vocabulary of :func:`~rsi_workbench.sandbox.call`'s default
    (tuples as lists); a set, frozenset, bytes, complex or non-str dict key raises ``ValueFormatError``."""
    t = type(x)
    if x is None or t in (bool, int, str, float):
        return x
    if t is list or t is tuple:
        return [loosen(v, depth + 1) for v in x]
    if t is dict and all(type(k) is str for k in x):
        return {k: loosen(v, depth + 1) for k, v in x.items()}
    raise ValueFormatError("value of type " + ("dict with non-str keys" if t is dict else t.__name__))


def align(got: Any, expected: Any) -> tuple[Any, Any]:
    """``(got', expected')`` for an io test's comparison: ``expected`` (its JSON form) decoded, and
    every tuple of ``got`` that sits where ``expected`` has a plain JSON list read as a list. Tagged
    parts of ``expected`` (``$t``, ``$l``, ...) keep their exact types, so Python ``==`` on the pair is
    today's rule for hand-written tests and the original ``==`` for converted asserts."""
    t = type(expected)
    if t is list:
        if type(got) in (list, tuple):
            pairs = [align(g, e) for g, e in zip(got, expected)]
            g2 = [p[0] for p in pairs] + list(got[len(expected) :])
            return g2, [p[1] for p in pairs] + [decode(e) for e in expected[len(got) :]]
        return got, decode(expected)
    if t is dict and not (len(expected) == 1 and next(iter(expected)) in TAGS):
        if type(got) is dict and got.keys() == expected.keys():
            pairs2 = {k: align(got[k], expected[k]) for k in expected}
            return {k: p[0] for k, p in pairs2.items()}, {k: p[1] for k, p in pairs2.items()}
        return got, decode(expected)
    if t is dict and set(expected) in ({"$l"}, {"$t"}, {"$d"}):
        tag, p = next(iter(expected.items()))
        want = {"$l": list, "$t": tuple, "$d": dict}[tag]
        if type(got) is not want or type(p) is not (dict if tag == "$d" else list):
            return got, decode(expected)
        if tag == "$d":
            if got.keys() != p.keys():
                return got, decode(expected)
            pd = {k: align(got[k], p[k]) for k in p}
            return {k: v[0] for k, v in pd.items()}, {k: v[1] for k, v in pd.items()}
        if len(got) != len(p):
            return got, decode(expected)
        pl = [align(g, e) for g, e in zip(got, p)]
        return want(v[0] for v in pl), want(v[1] for v in pl)
    return got, decode(expected)
