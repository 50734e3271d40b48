"""``rsi-workbench verify``: re-score anyone's construction with this project's evaluators, exactly.

A claimed best is only as good as the check behind it. This re-scores a construction from any
system — a circle packing (``{"centers": [[x, y], ...], "radii": [...]}``, or ``{"circles": [[x, y,
r], ...]}`` as this project writes them) or a first-autocorrelation step function (a list of heights,
or ``{"heights": [...]}``) — and says whether a claimed value holds.

**Exact arithmetic.** Every number is taken at its exact value as a binary float
(:class:`fractions.Fraction` of the float the JSON text parses to, which is what any float evaluator
sees), and every comparison is made in rationals, so the verdict never depends on rounding:

- a circle is contained when ``r <= x <= 1 - r`` and ``r <= y <= 1 - r`` up to ``tol``;
- two circles do not overlap when ``|c_i - c_j| >= r_i + r_j - tol``, checked as
  ``dx² + dy² >= (r_i + r_j - tol)²`` (both sides rational; no square root is taken);
- the packing's value is the exact sum of the radii;
- the C1 bound of ``m`` step heights is exactly ``2m · max_k (h*h)_k / (Σh)²`` (the heights scaled
  to integers by their common power of two; the autoconvolution is one exact big-integer product).

What is printed besides the verdict: the smallest containment margin and pair gap (decimals to 25
significant digits, rounded outwards), the smallest tolerance at which the construction holds, and
for a packing that needs a tolerance, the sum certified at tol 0 after shrinking every radius by it.
NaN or infinite numbers, negative radii or heights, containment and overlap beyond ``tol`` are
rejected with their indices and amounts. A claim (``--claim X``, X parsed exactly from its decimal
text) holds when the construction is valid and its value reaches X within ``tol``: a sum of radii
``>= X - tol``, a C1 bound ``<= X + tol``.

Exit status: 0 the construction is valid (and the claim, if given, holds); 1 it is not (or the claim
fails); 2 bad input (unreadable, not JSON, wrong shape, a non-number). Input is parsed as JSON
numbers only (never evaluated), so this runs anywhere, as any user.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, ROUND_FLOOR, Context, Decimal
from fractions import Fraction
from typing import Any

TASKS = ("circle_packing", "autocorrelation_c1")
MAX_BYTES = 64 * 2**20
SHOWN = 10  # violations listed per kind


class BadInput(ValueError):
    """The input is not a construction of the task (exit status 2)."""


@dataclass
class Verdict:
    """The exact re-scoring of one construction."""

    task: str
    valid: bool
    value: Fraction | None
    direction: str  # "higher" (a packing's sum) or "lower" (a C1 bound)
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    min_tol: Decimal | None = None  # the smallest tolerance at which it holds (an upper bound)
    size: int = 0  # circles or heights

    def claim_holds(self, claim: Fraction, tol: Fraction) -> bool:
        if not self.valid or self.value is None:
            return False
        return self.value >= claim - tol if self.direction == "higher" else self.value <= claim + tol


def dec(x: Fraction | Decimal | float, *, up: bool | None = None, digits: int = 25) -> Decimal:
    """``x`` as a decimal of ``digits`` significant digits (rounded up, down, or to nearest)."""
    ctx = Context(
        prec=digits, rounding=ROUND_CEILING if up else ROUND_FLOOR if up is False else "ROUND_HALF_EVEN"
    )
    if isinstance(x, Fraction):
        return ctx.divide(Decimal(x.numerator), Decimal(x.denominator))
    return ctx.plus(Decimal(x))


def _short(x: Fraction | Decimal) -> str:
    """A violation's size for a message: 4 significant digits, rounded up (never understated)."""
    return format(dec(x, up=True, digits=4), "g")


def _sqrt(x: Fraction, *, up: bool) -> Decimal:
    """√x for a rational x >= 0, to 40 digits, rounded up or down."""
    ctx = Context(prec=40, rounding=ROUND_CEILING if up else ROUND_FLOOR)
    return ctx.sqrt(ctx.divide(Decimal(x.numerator), Decimal(x.denominator)))


# --- reading -------------------------------------------------------------------------------------
def _constant(name: str) -> float:
    return float(name)  # NaN, Infinity, -Infinity: kept, then rejected with the index


def read_json(path: str) -> Any:
    """The JSON in ``path`` (``-``: standard input); numbers only ever parsed, never evaluated."""
    try:
        if path == "-":
            text = sys.stdin.read(MAX_BYTES + 1)
        else:
            with open(path, encoding="utf-8") as f:
                text = f.read(MAX_BYTES + 1)
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput(f"{path}: cannot read: {e}") from None
    if len(text) > MAX_BYTES:
        raise BadInput(f"{path}: larger than {MAX_BYTES // 2**20} MiB")
    try:
        return json.loads(text, parse_constant=_constant)
    except (json.JSONDecodeError, RecursionError) as e:
        raise BadInput(f"{path}: not JSON: {e}") from None


def _number(v: Any, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise BadInput(f"{where}: {v!r} is not a number")
    if isinstance(v, int):
        try:
            return float(v)
        except OverflowError:
            return math.inf if v > 0 else -math.inf
    return v


def _numbers(v: Any, where: str, k: int | None = None) -> list[float]:
    if not isinstance(v, list) or (k is not None and len(v) != k):
        want = "a list" if k is None else f"a list of {k} numbers"
        raise BadInput(
            f"{where}: expected {want}, got {type(v).__name__}{'' if not isinstance(v, list) else f' of {len(v)}'}"
        )
    return [_number(x, f"{where}[{i}]") for i, x in enumerate(v)]


def packing_of(obj: Any) -> list[tuple[float, float, float]]:
    """(x, y, r) per circle from ``{"centers", "radii"}``, ``{"circles"}`` or a list of triples."""
    if isinstance(obj, dict) and "centers" in obj:
        if "radii" not in obj:
            raise BadInput("a packing with centers needs radii")
        centres = obj["centers"]
        radii = _numbers(obj["radii"], "radii")
        if not isinstance(centres, list) or len(centres) != len(radii):
            raise BadInput(f"centers: expected a list of {len(radii)} [x, y] pairs (one per radius)")
        xy = [_numbers(c, f"centers[{i}]", 2) for i, c in enumerate(centres)]
        return [(p[0], p[1], r) for p, r in zip(xy, radii)]
    rows = obj.get("circles") if isinstance(obj, dict) else obj
    if not isinstance(rows, list):
        raise BadInput(
            'a packing is {"centers": [[x, y], ...], "radii": [...]} or {"circles": [[x, y, r], ...]}'
        )
    out = []
    for i, c in enumerate(rows):
        x, y, r = _numbers(c, f"circles[{i}]", 3)
        out.append((x, y, r))
    return out


def heights_of(obj: Any) -> list[float]:
    """Step heights from a list or ``{"heights": [...]}``."""
    if isinstance(obj, dict):
        if "heights" not in obj:
            raise BadInput('a step function is a list of heights or {"heights": [...]}')
        obj = obj["heights"]
    return _numbers(obj, "heights")


def detect(obj: Any) -> str:
    """The task a construction is for, from its shape."""
    if isinstance(obj, dict) and ("centers" in obj or "circles" in obj):
        return "circle_packing"
    if isinstance(obj, dict) and "heights" in obj:
        return "autocorrelation_c1"
    if isinstance(obj, list) and obj and all(isinstance(v, list) for v in obj):
        return "circle_packing"
    if isinstance(obj, list):
        return "autocorrelation_c1"
    raise BadInput("cannot tell the task from the input; pass --task")


# --- circle packing ------------------------------------------------------------------------------
def verify_packing(circles: list[tuple[float, float, float]], tol: Fraction, n: int | None = None) -> Verdict:
    """Containment and non-overlap of ``circles`` at ``tol``, in exact rational arithmetic."""
    v = Verdict("circle_packing", True, None, "higher", size=len(circles))
    if n is not None and len(circles) != n:
        raise BadInput(f"{len(circles)} circles, expected n = {n}")
    if not circles:
        raise BadInput("no circles")
    bad = [(i, k) for i, c in enumerate(circles) for k, name in enumerate("xyr") if not math.isfinite(c[k])]
    if bad:
        v.valid = False
        v.reasons += [f"circle {i}: {'xyr'[k]} is {circles[i][k]} (not finite)" for i, k in bad[:SHOWN]]
        return v
    c = [tuple(Fraction(t) for t in row) for row in circles]
    v.value = sum((r for _, _, r in c), Fraction(0))
    neg = [i for i, (_, _, r) in enumerate(c) if r < 0]
    if neg:
        v.valid = False
        v.reasons += [f"circle {i}: negative radius {circles[i][2]!r}" for i in neg[:SHOWN]]
    need = Fraction(0)  # the smallest tolerance that makes it hold (containment part: exact)
    margins = []
    for x, y, r in c:
        m = min(x - r, 1 - x - r, y - r, 1 - y - r)
        margins.append(m)
        need = max(need, -m)
    worst_m = min(margins)
    out_of = [i for i, m in enumerate(margins) if m < -tol]
    if out_of:
        v.valid = False
        v.reasons += [
            f"circle {i} leaves the unit square by {_short(-margins[i])} (beyond tol {_short(tol)})"
            for i in out_of[:SHOWN]
        ]
    overlaps: list[tuple[int, int, Decimal]] = []
    gap_min: Decimal | None = None
    need_pair = Decimal(0)
    for i in range(len(c)):
        xi, yi, ri = c[i]
        for j in range(i + 1, len(c)):
            xj, yj, rj = c[j]
            d2 = (xi - xj) ** 2 + (yi - yj) ** 2
            s = ri + rj
            over_up = Decimal(0)
            if d2 < s * s:  # they overlap (exactly): by s - |c_i - c_j|, bounded above
                over_up = dec(s, up=True, digits=40) - _sqrt(d2, up=False)
                need_pair = max(need_pair, over_up)
            gap = dec(_sqrt(d2, up=False) - dec(s, up=True, digits=40), up=False)
            gap_min = gap if gap_min is None else min(gap_min, gap)
            if s - tol > 0 and d2 < (s - tol) ** 2:
                overlaps.append((i, j, over_up))
    if overlaps:
        v.valid = False
        v.reasons += [
            f"circles {i} and {j} overlap by {_short(o)} (beyond tol {_short(tol)})"
            for i, j, o in overlaps[:SHOWN]
        ]
    for what, k in (("circles outside", len(out_of)), ("overlapping pairs", len(overlaps))):
        if k > SHOWN:
            v.reasons.append(f"... {k - SHOWN} more {what}")
    v.min_tol = max(dec(need, up=True), dec(need_pair, up=True))
    v.notes += [
        f"smallest containment margin {dec(worst_m, up=False)}",
        f"smallest pair gap           {gap_min if gap_min is not None else '— (one circle)'}",
        f"holds at any tol >= {v.min_tol}" + ("  (exactly valid at tol 0)" if v.min_tol == 0 else ""),
    ]
    if v.min_tol > 0 and not neg:
        delta = Fraction(v.min_tol)  # every radius shrunk by it: valid at tol 0, exactly
        shrunk = [(x, y, r - delta) for x, y, r in c]
        if all(r >= 0 for _, _, r in shrunk) and _strictly_valid(shrunk):
            certified = v.value - len(c) * delta
            v.notes.append(
                f"every radius shrunk by {v.min_tol}: valid at tol 0 (checked exactly), sum {dec(certified, up=False)}"
            )
    return v


def _strictly_valid(c: list[tuple[Fraction, Fraction, Fraction]]) -> bool:
    if any(min(x - r, 1 - x - r, y - r, 1 - y - r) < 0 for x, y, r in c):
        return False
    return all(
        (c[i][0] - c[j][0]) ** 2 + (c[i][1] - c[j][1]) ** 2 >= (c[i][2] + c[j][2]) ** 2
        for i in range(len(c))
        for j in range(i + 1, len(c))
    )


# --- first autocorrelation inequality ------------------------------------------------------------
def _square_conv(a: list[int]) -> list[int]:
    """The exact autoconvolution of non-negative integers, as one big-integer square (Kronecker)."""
    if not any(a):
        return [0] * (2 * len(a) - 1)
    bits = 2 * max(a).bit_length() + len(a).bit_length() + 1
    nbytes = (bits + 7) // 8
    packed = int.from_bytes(b"".join(x.to_bytes(nbytes, "little") for x in a), "little")
    sq = (packed * packed).to_bytes(nbytes * (2 * len(a)), "little")
    return [int.from_bytes(sq[k * nbytes : (k + 1) * nbytes], "little") for k in range(2 * len(a) - 1)]


def verify_c1(heights: list[float], m: int | None = None) -> Verdict:
    """The exact C1 upper bound certified by step heights (lower is better)."""
    v = Verdict("autocorrelation_c1", True, None, "lower", size=len(heights))
    if m is not None and len(heights) != m:
        raise BadInput(f"{len(heights)} heights, expected m = {m}")
    if not heights:
        raise BadInput("no heights")
    bad = [i for i, h in enumerate(heights) if not math.isfinite(h)]
    neg = [i for i, h in enumerate(heights) if math.isfinite(h) and h < 0]
    v.reasons += [f"height {i} is {heights[i]} (not finite)" for i in bad[:SHOWN]]
    v.reasons += [f"height {i} is negative ({heights[i]!r})" for i in neg[:SHOWN]]
    if bad or neg:
        v.valid = False
        return v
    fr = [Fraction(h) for h in heights]
    den = max(f.denominator for f in fr)  # a power of two: every height an integer multiple of 1/den
    a = [int(f * den) for f in fr]
    total = sum(a)
    if total == 0:
        v.valid = False
        v.reasons.append("zero integral (every height is 0)")
        return v
    conv = _square_conv(a)
    peak = max(conv)
    v.value = Fraction(2 * len(a) * peak, total * total)
    v.min_tol = Decimal(0)
    v.notes.append(f"m = {len(a)} steps; the autoconvolution peaks at knot {conv.index(peak)}")
    return v


# --- the command ---------------------------------------------------------------------------------
def verify(obj: Any, task: str, tol: Fraction, *, size: int | None = None) -> Verdict:
    if task == "circle_packing":
        return verify_packing(packing_of(obj), tol, size)
    return verify_c1(heights_of(obj), size)


def _reference(task: str, size: int) -> str:
    from rsi_workbench.domains.math.reference import reference

    key = f"circle_packing_{size}" if task == "circle_packing" else "autocorrelation_c1"
    try:
        ref = reference(key)
    except KeyError:
        return ""
    return f"best known ({key}): {ref.value!r} ({ref.better} is better) — {ref.source}, {ref.date}"


def cmd_verify(args: argparse.Namespace) -> int:
    try:
        tol = Fraction(args.tol)
        claim = None if args.claim is None else Fraction(args.claim)
    except (ValueError, ZeroDivisionError) as e:
        print(f"error: --tol / --claim: {e}", file=sys.stderr)
        return 2
    if tol < 0:
        print("error: --tol must be >= 0", file=sys.stderr)
        return 2
    try:
        obj = read_json(args.file)
        task = args.task or detect(obj)
        v = verify(obj, task, tol, size=args.n)
    except BadInput as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    what = "sum of radii" if task == "circle_packing" else "C1 upper bound"
    print(f"{args.file}: {task}, checked in exact rational arithmetic at tol {_short(tol)}")
    print(f"verdict: {'VALID' if v.valid else 'INVALID'}")
    for r in v.reasons:
        print(f"  rejected: {r}")
    if v.value is not None:
        print(f"{what}: {dec(v.value)} (exact; as a float {float(v.value)!r})")
    for n in v.notes:
        print(f"  {n}")
    ref = _reference(task, v.size)
    if ref:
        print(ref)
    ok = v.valid
    if claim is not None:
        holds = v.claim_holds(claim, tol)
        rel = ">=" if v.direction == "higher" else "<="
        bound = claim - tol if v.direction == "higher" else claim + tol
        why = (
            "the construction is invalid"
            if not v.valid
            else f"{what} {dec(v.value) if v.value is not None else '—'} {'' if holds else 'not '}{rel} {dec(bound)}"
        )
        print(f"claim {args.claim}: {'HOLDS' if holds else 'DOES NOT HOLD'} ({why})")
        ok = ok and holds
    return 0 if ok else 1


def register(subparsers: Any) -> None:
    """Add ``verify`` to the ``rsi-workbench`` command line."""
    p = subparsers.add_parser(
        "verify",
        help="re-score a construction (circle packing, C1 step function) exactly; check a claimed value",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    p.add_argument("file", help="the construction as JSON ('-': standard input)")
    p.add_argument("--task", choices=TASKS, help="default: told from the input's shape")
    p.add_argument("--tol", default="0", help="tolerance of containment, overlap and the claim (default 0)")
    p.add_argument("--claim", help="a claimed value: a sum of radii (at least) or a C1 bound (at most)")
    p.add_argument("--n", type=int, help="the number of circles / heights the construction must have")
    p.set_defaults(func=cmd_verify)


__all__ = [
    "BadInput",
    "Verdict",
    "cmd_verify",
    "read_json",
    "register",
    "verify",
    "verify_c1",
    "verify_packing",
]
