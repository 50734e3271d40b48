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

Decoding builds no hash table from the data: a ``$s`` / ``$z`` set becomes a :class:`SetValue` and a
``$m`` dict (with a key that is not a ``str``) a :class:`MapValue`. Both keep their items in the
order they arrived and compare through a sorted canonical form (numbers by value, so
``1 == 1.0 == True`` and ``{1, 2} == {2.0, 1}`` as in Python; NaN equals nothing), never through
``hash``: ints ``k * (2**61 - 1)`` all hash alike, and a set of them would take quadratic time to
build. Equal items are merged as Python would (the first one stays; in a dict, with the last value).
Dicts with ``str`` keys stay ``dict``: ``str`` hashing is randomised on the host. :func:`portable`
turns a value holding such containers into a form that crosses to a sandboxed process, which builds
the real ``set`` / ``dict`` there, on its own clock.
"""

from __future__ import annotations

import itertools
import marshal
import math
from collections.abc import Iterable, Iterator
from typing import Any

MAX_DEPTH = 200
TAGS = frozenset({"$d", "$m", "$t", "$l", "$s", "$z", "$b", "$c", "$f"})


class ValueFormatError(ValueError):
    """A tagged value is malformed (unknown tag, wrong payload, unhashable set item, too deep)."""


_NAN_IDS = itertools.count()  # a NaN's canonical key is unique: NaN equals nothing


class _Unhashable(Exception):
    pass


def _real(x: Any) -> bool:
    """A number that sorts with ints and floats (not NaN; a complex only with a zero imaginary part)."""
    t = type(x)
    if t is int or t is bool:
        return True
    if t is float:
        return x == x
    return t is complex and x.imag == 0 and x.real == x.real


def _key(x: Any) -> tuple[Any, ...]:
    """The canonical key of a hashable item: equal keys exactly when Python's ``==`` holds, all keys
    mutually ordered; ``_Unhashable`` for what Python could not put in a set."""
    t = type(x)
    if t is int or t is bool:
        return (1, x)
    if t is str:
        return (3, x)
    if t is float:
        return (1, x) if x == x else (9, next(_NAN_IDS))
    if x is None:
        return (0,)
    if t is tuple:
        return (6, tuple(_key(v) for v in x))
    if t is SetValue:
        if not x.frozen:
            raise _Unhashable("set")
        return (7, *x.canonical)
    if t is bytes:
        return (4, x)
    if t is complex:
        if x.real != x.real or x.imag != x.imag:
            return (9, next(_NAN_IDS))
        return (1, x.real) if x.imag == 0 else (2, x.real, x.imag)
    if t is frozenset:  # a host-built one, compared with a decoded set
        nums, others, _ = _canon(list(x))
        return (7, nums, others)
    raise _Unhashable(t.__name__ if t is not MapValue else "dict")


Canon = tuple[tuple[Any, ...], tuple[Any, ...], list[list[int]] | None]


def _canon(items: list[Any], order: bool = False) -> Canon:
    """``(numbers, other keys, groups)``: the items' real numbers sorted by value and the canonical
    keys of the rest sorted, equal ones once; ``groups`` lists, in that canonical order, the indices
    of each run of equal items (ascending). It is None when the items are distinct numbers and
    ``order`` was not asked for. Sorting, not hashing: linear-logarithmic for any data."""
    nums: list[Any] = []
    for v in items:
        t = type(v)
        if t is int or (t is float and v == v):
            nums.append(v)
        else:
            break
    else:  # only ints and floats: the fast path
        if not order and len(nums) < 2:
            return tuple(nums), (), None
        if not order:
            nums.sort()
            if all(a != b for a, b in zip(nums, itertools.islice(nums, 1, None))):
                return tuple(nums), (), None
    reals: list[tuple[Any, int]] = []
    others: list[tuple[tuple[Any, ...], int]] = []
    for i, v in enumerate(items):
        if _real(v):
            reals.append((v.real if type(v) is complex else v, i))
        else:
            others.append((_key(v), i))
    reals.sort()  # by value, then by position: the first of equal items comes first
    others.sort()
    groups: list[list[int]] = []
    uniq: tuple[list[Any], list[Any]] = ([], [])
    for seq, out in ((reals, uniq[0]), (others, uniq[1])):
        for j, (k, i) in enumerate(seq):
            if j and seq[j - 1][0] == k:
                groups[-1].append(i)
            else:
                groups.append([i])
                out.append(k)
    return tuple(uniq[0]), tuple(uniq[1]), groups


def _distinct_strings(items: list[Any]) -> bool:
    """All ``str`` (or all ``bytes``) and no two equal: told with a ``set``, which is safe for these
    two types alone (their hashing is randomised on the host)."""
    if not items:
        return False
    t = type(items[0])
    return (t is str or t is bytes) and all(type(v) is t for v in items) and len(set(items)) == len(items)


class SetValue:
    """A decoded ``set`` (or, with ``frozen``, ``frozenset``) that was never hashed: its items in
    arrival order (equal ones merged), compared as a set through sorted canonical keys. Equal to an
    equal ``set``, ``frozenset`` or :class:`SetValue` of either kind; unhashable."""

    __slots__ = ("items", "frozen", "_canon")
    _canon: tuple[tuple[Any, ...], tuple[Any, ...]] | None
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, items: Iterable[Any], frozen: bool = False):
        got = list(items)
        self.frozen = frozen
        if _distinct_strings(got):  # the canonical form waits until a comparison needs it
            self.items, self._canon = tuple(got), None
            return
        try:
            nums, others, groups = _canon(got)
        except _Unhashable as e:
            raise ValueFormatError(f"unhashable set item of type {e}") from None
        if groups is not None and len(groups) < len(got):  # equal items: the first of each stays
            got = [got[i] for i in sorted(g[0] for g in groups)]
        self.items = tuple(got)
        self._canon = (nums, others)

    @property
    def canonical(self) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        """(sorted numbers, sorted canonical keys of the rest)."""
        if self._canon is None:
            nums, others, _ = _canon(list(self.items))
            self._canon = (nums, others)
        return self._canon

    @property
    def type_name(self) -> str:
        return "frozenset" if self.frozen else "set"

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.items)

    def __contains__(self, x: Any) -> bool:
        return any(x == v for v in self.items)

    def __eq__(self, other: object) -> bool:
        if type(other) in (set, frozenset):
            other = SetValue(other)  # type: ignore[arg-type]
        if type(other) is not SetValue:
            return NotImplemented
        if len(self.items) != len(other.items):
            return False
        if self._canon is None and other._canon is None:  # distinct str / bytes: hashing is safe
            return set(self.items) == set(other.items)
        return self.canonical == other.canonical

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __repr__(self) -> str:
        if not self.items:
            return f"{self.type_name}()"
        body = "{" + ", ".join(repr(v) for v in self.items) + "}"
        return f"frozenset({body})" if self.frozen else body


class MapValue:
    """A decoded ``dict`` with a key that is not a ``str``, never hashed: its items in arrival order
    (a repeated key keeps its first place and takes the last value, as in a dict display), looked up
    and compared through the keys' sorted canonical form. Equal to an equal ``dict`` or
    :class:`MapValue`; unhashable."""

    __slots__ = ("keys_", "values_", "_nums", "_others", "_order")
    __hash__ = None  # type: ignore[assignment]
    type_name = "dict"

    def __init__(self, pairs: Iterable[tuple[Any, Any]]):
        ks: list[Any] = []
        vs: list[Any] = []
        for k, v in pairs:
            ks.append(k)
            vs.append(v)
        try:
            nums, others, groups = _canon(ks, order=True)
        except _Unhashable as e:
            raise ValueFormatError(f"unhashable dict key of type {e}") from None
        assert groups is not None
        if len(groups) < len(ks):  # a repeated key: its first place and its last value
            firsts = sorted(g[0] for g in groups)
            last = {g[0]: g[-1] for g in groups}
            ks, vs = [ks[i] for i in firsts], [vs[last[i]] for i in firsts]
            place = {i: n for n, i in enumerate(firsts)}  # int keys of our own making
            order = [place[g[0]] for g in groups]
        else:
            order = [g[0] for g in groups]
        self.keys_, self.values_ = tuple(ks), tuple(vs)
        self._nums, self._others = nums, others
        self._order = order  # the items' places in canonical key order

    def __len__(self) -> int:
        return len(self.keys_)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.keys_)

    def keys(self) -> tuple[Any, ...]:
        return self.keys_

    def values(self) -> tuple[Any, ...]:
        return self.values_

    def items(self) -> Iterator[tuple[Any, Any]]:
        return zip(self.keys_, self.values_)

    def __getitem__(self, key: Any) -> Any:
        for k, v in zip(self.keys_, self.values_):
            if k == key:
                return v
        raise KeyError(key)

    def __contains__(self, key: Any) -> bool:
        return any(k == key for k in self.keys_)

    def same_keys(self, other: MapValue) -> bool:
        return self._nums == other._nums and self._others == other._others

    def value_pairs(self, other: MapValue) -> Iterator[tuple[Any, Any]]:
        """``(self[k], other[k])`` for each key (the two have :meth:`same_keys`)."""
        a, b = self._order, other._order
        return ((self.values_[i], other.values_[j]) for i, j in zip(a, b))

    def __eq__(self, other: object) -> bool:
        if type(other) is dict:
            try:
                other = MapValue(other.items())
            except ValueFormatError:
                return False
        if type(other) is not MapValue:
            return NotImplemented
        if len(self) != len(other) or not self.same_keys(other):
            return False
        return all(x == y for x, y in self.value_pairs(other))

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in self.items()) + "}"


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
        if all(type(kv[0]) is str for kv in pairs):  # str keys: a dict (str hashing is randomised)
            return {k: v for k, v in pairs}
        return MapValue((k, v) for k, v in pairs)
    if tag in ("$t", "$l"):
        items = _items(p, depth, frame)
        return tuple(items) if tag == "$t" else items
    if tag in ("$s", "$z"):
        return SetValue(_items(p, depth, frame), frozen=tag == "$z")
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
    if t is SetValue:
        return {"$z" if x.frozen else "$s": [enc(v) for v in x.items]}
    if t is MapValue:
        return {"$m": [[enc(k), enc(v)] for k, v in x.items()]}
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
    name = "dict with non-str keys" if t in (dict, MapValue) else getattr(x, "type_name", t.__name__)
    raise ValueFormatError("value of type " + name)


def portable(x: Any) -> tuple[Any, bool]:
    """``(payload, tagged)`` for sending ``x`` to a sandboxed process (marshal): ``x`` itself, or,
    when it holds a :class:`SetValue` or :class:`MapValue`, its tagged form (:func:`encode`) with
    ``tagged`` True; the receiver then builds the real containers (on its own clock)."""
    try:
        marshal.dumps(x)
    except ValueError:
        return encode(x), True
    return x, False


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
