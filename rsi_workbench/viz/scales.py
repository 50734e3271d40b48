"""Axis and colour-scale helpers that keep figures honest: float noise drawn flat, integer quantities
with integer ticks, colourbar ticks with about three significant digits.

A spread of values below :data:`NOISE_TOL` relative to their scale (``max |v|``) is float noise
(e.g. two replay scores equal up to 1e-13): a figure draws it flat and says so with
:func:`noise_note`, instead of letting an autoscaled axis or colourbar magnify it into large steps
with 16-digit tick labels.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, NamedTuple

NOISE_TOL = 1e-9  # relative to the value scale: a smaller spread is float noise, drawn flat
_MAX_INT_TICKS = 10


class Spread(NamedTuple):
    """The finite values' range: lowest, highest, ``hi - lo`` and the scale ``max |v|``."""

    lo: float
    hi: float
    spread: float
    scale: float
    n: int


def finite_values(values: Any) -> list[float]:
    """Every finite number in ``values`` (nested lists/arrays flattened; None, NaN, inf and bools dropped)."""
    out: list[float] = []

    def walk(v: Any) -> None:
        if v is None or isinstance(v, bool | str):
            return
        if isinstance(v, int | float) or hasattr(v, "__float__") and not hasattr(v, "__len__"):
            f = float(v)
            if math.isfinite(f):
                out.append(f)
            return
        if isinstance(v, Iterable):
            for x in v:
                walk(x)

    walk(values)
    return out


def spread_of(values: Any) -> Spread | None:
    """The range of the finite values, or None when there are none."""
    vals = finite_values(values)
    if not vals:
        return None
    lo, hi = min(vals), max(vals)
    return Spread(lo, hi, hi - lo, max(abs(lo), abs(hi)), len(vals))


def below_noise(values: Any, tol: float = NOISE_TOL) -> bool:
    """Whether two or more finite values differ by no more than ``tol`` × their scale (float noise)."""
    s = spread_of(values)
    return s is not None and s.n >= 2 and s.spread <= tol * s.scale


def noise_note(values: Any, tol: float = NOISE_TOL) -> str:
    """The annotation of a flat-drawn quantity: ``no difference (spread 2.7e-13 < tol 1e-09 × 2.61)``."""
    s = spread_of(values)
    if s is None:
        return "no values"
    return f"no difference (spread {s.spread:.1e} < tol {tol:g} × {s.scale:.3g})"


def value_decimals(values: Any, sig: int = 3, tol: float = NOISE_TOL) -> int:
    """Decimals that show ``sig`` significant digits of what varies: of the spread when the values
    differ by less than their scale, of the scale itself otherwise (or when the spread is noise)."""
    s = spread_of(values)
    if s is None or s.scale == 0:
        return 0
    ref = s.spread if s.spread > tol * s.scale and s.spread < s.scale else s.scale
    return max(0, min(12, sig - 1 - math.floor(math.log10(ref))))


def value_tickformat(values: Any, sig: int = 3) -> str:
    """A d3 tick format (``.4~f``) with ``sig`` significant digits of what varies among ``values``."""
    return f".{value_decimals(values, sig)}~f"


def colorbar(title: str, values: Any, **extra: Any) -> dict[str, Any]:
    """A colourbar spec whose ticks are readable (about three significant digits of the range)."""
    return {"title": title, "tickformat": value_tickformat(values), **extra}


def flat_range(values: Any) -> list[float]:
    """An axis range centred on a flat quantity (so noise around it is not magnified)."""
    s = spread_of(values)
    mid = 0.0 if s is None else (s.lo + s.hi) / 2
    half = max(abs(mid) * 0.05, 1.0 if mid == 0 else 0.0)
    return [mid - half, mid + half]


def int_axis(values: Any, **extra: Any) -> dict[str, Any]:
    """Axis spec for a count, cycle, round or generation: integer ticks only (``dtick`` a whole
    1, 2, 5 × 10^k step, ``tickformat="d"``), at most about ten of them over the values' range."""
    s = spread_of(values)
    span = 0.0 if s is None else s.spread
    step = 1
    while span / step > _MAX_INT_TICKS:
        step = _next_step(step)
    return {"tickmode": "linear", "tick0": 0, "dtick": step, "tickformat": "d", **extra}


def _next_step(step: int) -> int:
    """The 1, 2, 5, 10, 20, 50, ... sequence."""
    lead = int(str(step)[0])
    return step * 2 if lead in (1, 5) else step * 5 // 2


__all__ = [
    "NOISE_TOL",
    "Spread",
    "below_noise",
    "colorbar",
    "finite_values",
    "flat_range",
    "int_axis",
    "noise_note",
    "spread_of",
    "value_decimals",
    "value_tickformat",
]
