"""First autocorrelation inequality: an upper bound on C1 from a non-negative step function.

For ``f >= 0`` supported on ``[-1/4, 1/4]``, ``max_t (f*f)(t) >= C1 (∫f)^2``; any ``f`` gives the
upper bound ``C1 <= max(f*f) / (∫f)^2``. With ``m`` equal steps of heights ``h`` (width
``1/(2m)``), ``f*f`` is piecewise linear with knots at multiples of the width, so the maximum is at a
knot and the bound is exactly ``2m * max(conv(h, h)) / sum(h)^2``. Best known: 1.503133
(ThetaEvolve, 2025-11; lower is better; ``score = -C1``), from ``rsi_workbench.domains.math.reference``.

The third inequality (C3, :class:`ThirdAutocorrelation`, Dream-RSI's Table 1 column) is below.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from rsi_workbench.domains.math.reference import best_known as _ref
from rsi_workbench.domains.math.task import AttemptResult, Evaluation

BEST_KNOWN_C1 = _ref("autocorrelation_c1")


def c1_of_steps(heights: Any) -> float:
    """The exact C1 upper bound certified by step heights ``h`` on ``[-1/4, 1/4]``."""
    h = np.asarray(heights, dtype=float)
    m = len(h)
    return float(2 * m * np.convolve(h, h).max() / h.sum() ** 2)


def evaluate_steps(heights: Any, m: int) -> Evaluation:
    """Validity: ``m`` finite, non-negative heights with a positive integral and a finite bound; value = C1 bound."""
    try:
        h = np.asarray(heights, dtype=float)
    except (TypeError, ValueError) as e:
        return Evaluation(score=None, value=None, valid=False, reason=f"not numeric: {e}")
    if h.shape != (m,):
        return Evaluation(score=None, value=None, valid=False, reason=f"shape {h.shape}, expected ({m},)")
    if not np.all(np.isfinite(h)):
        return Evaluation(score=None, value=None, valid=False, reason="non-finite heights")
    if h.min() < 0:
        return Evaluation(score=None, value=None, valid=False, reason=f"negative height {h.min():.3g}")
    if h.sum() <= 0:
        return Evaluation(score=None, value=None, valid=False, reason="zero integral")
    with np.errstate(over="ignore", invalid="ignore"):
        c1 = c1_of_steps(h)
    if not np.isfinite(c1):  # heights so large that the autoconvolution or the integral overflow
        return Evaluation(
            score=None, value=None, valid=False, reason=f"the C1 bound is {c1} (heights too large)"
        )
    return Evaluation(score=-c1, value=c1, valid=True)


def _surrogate(h: np.ndarray, tau: float) -> tuple[float, np.ndarray]:
    """Soft-max (temperature ``tau``) of the normalised autoconvolution, and its gradient."""
    m = len(h)
    s = h.sum()
    g = np.convolve(h, h)
    c = 2 * m * g / s**2
    z = c / tau
    zmax = z.max()
    w = np.exp(z - zmax)
    tot = w.sum()
    f = tau * (np.log(tot) + zmax)
    w /= tot
    grad = 2 * m * (2 * np.correlate(w, h, mode="valid") / s**2 - 2 * float(w @ g) / s**3)
    return float(f), grad


@dataclass(frozen=True)
class FirstAutocorrelation:
    """The discovery task: m step heights minimising the C1 bound (score = -C1, higher is better)."""

    m: int = 100
    maxiter: int = 300
    direction: str = "min"

    @property
    def name(self) -> str:
        return f"autocorrelation_c1_m{self.m}"

    @property
    def best_known(self) -> float | None:
        return BEST_KNOWN_C1

    def evaluate(self, solution: Any) -> Evaluation:
        return evaluate_steps(solution, self.m)

    def attempt(self, parent_state: Any, seed: int) -> AttemptResult:
        """Restart (random heights) or perturb the parent's heights, then L-BFGS-B on the soft-max bound."""
        from scipy.optimize import minimize

        rng = np.random.default_rng(seed)
        t0 = time.perf_counter()
        if parent_state is None:
            move, h0 = "restart", rng.uniform(0.0, 1.0, self.m)
        else:
            h0 = np.asarray(parent_state, dtype=float).copy()
            move = str(rng.choice(["polish", "jiggle", "zero_block"]))
            if move == "jiggle":
                h0 = h0 * np.exp(rng.normal(0, 0.2, self.m))
            elif move == "zero_block":
                i = int(rng.integers(0, self.m))
                h0[i : i + max(1, self.m // 20)] = 0.0
        h = np.clip(h0, 0.0, None)
        info: dict[str, Any] = {}
        for tau in (0.02, 0.005, 0.001):
            res = minimize(
                _surrogate,
                h,
                args=(tau,),
                jac=True,
                method="L-BFGS-B",
                bounds=[(0.0, None)] * self.m,
                options={"maxiter": self.maxiter},
            )
            h = res.x
            info = {"status": int(res.status), "message": str(res.message), "nit": int(res.nit)}
            if res.status == 2:  # ABNORMAL termination in the line search: a real optimiser failure
                break
        ev = self.evaluate(h)
        error, fail_class = "", (None if ev.valid else "invalid")
        if info.get("status") == 2:
            error, fail_class = f"L-BFGS-B: {info['message']}", "optimizer_failure"
        return AttemptResult(
            state=h.tolist(),
            evaluation=ev,
            error=error,
            fail_class=fail_class,
            move=move,
            seconds=time.perf_counter() - t0,
            info=info,
        )


# -- the third autocorrelation inequality (C3) ----------------------------------------------------
BEST_KNOWN_C3 = _ref("autocorrelation_c3")


def c3_of_steps(heights: Any) -> float:
    """The exact C3 upper bound certified by step heights ``h`` (of either sign) on ``[-1/4, 1/4]``:
    ``2m · max_k |conv(h, h)_k| / (Σh)²`` (see :class:`ThirdAutocorrelation`)."""
    h = np.asarray(heights, dtype=float)
    m = len(h)
    return float(2 * m * np.abs(np.convolve(h, h)).max() / h.sum() ** 2)


def evaluate_c3_steps(heights: Any, m: int) -> Evaluation:
    """Validity: ``m`` finite heights (any sign) with a non-zero integral and a finite bound; value = C3 bound."""
    try:
        h = np.asarray(heights, dtype=float)
    except (TypeError, ValueError) as e:
        return Evaluation(score=None, value=None, valid=False, reason=f"not numeric: {e}")
    if h.shape != (m,):
        return Evaluation(score=None, value=None, valid=False, reason=f"shape {h.shape}, expected ({m},)")
    if not np.all(np.isfinite(h)):
        return Evaluation(score=None, value=None, valid=False, reason="non-finite heights")
    scale = float(np.abs(h).sum())
    if scale == 0 or abs(float(h.sum())) <= 1e-12 * scale:
        return Evaluation(score=None, value=None, valid=False, reason="zero integral")
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        c3 = c3_of_steps(h)
    if not np.isfinite(c3):
        return Evaluation(score=None, value=None, valid=False, reason=f"the C3 bound is {c3}")
    return Evaluation(score=-c3, value=c3, valid=True)


def _surrogate_c3(h: np.ndarray, tau: float) -> tuple[float, np.ndarray]:
    """Soft-max (temperature ``tau``) of ``±`` the normalised autoconvolution (a smooth ``max |·|``),
    and its gradient."""
    m = len(h)
    s = h.sum()
    g = np.convolve(h, h)
    c = 2 * m * g / s**2
    z = np.concatenate([c, -c]) / tau
    zmax = z.max()
    w = np.exp(z - zmax)
    tot = w.sum()
    f = tau * (np.log(tot) + zmax)
    w /= tot
    wc = w[: len(c)] - w[len(c) :]  # d f / d c
    grad = 2 * m * (2 * np.correlate(wc, h, mode="valid") / s**2 - 2 * float(wc @ g) / s**3)
    return float(f), grad


@dataclass(frozen=True)
class ThirdAutocorrelation:
    """The third autocorrelation inequality: m step heights (of either sign) minimising the C3 bound.

    Definition (AlphaEvolve white paper, "AlphaEvolve: A coding agent for scientific and algorithmic
    discovery", Google DeepMind 2025, Appendix B.3): C3 is the largest constant such that
    ``max_{-1/2 <= t <= 1/2} |(f*f)(t)| >= C3 (∫_{-1/4}^{1/4} f)^2`` for every function ``f`` supported
    on ``[-1/4, 1/4]``. Unlike C1, ``f`` may take negative values, hence the absolute value; any
    ``f`` with ``∫f != 0`` gives the upper bound ``C3 <= max|f*f| / (∫f)^2``.

    With ``m`` equal steps of heights ``h`` (width ``1/(2m)``), ``f*f`` is piecewise linear with
    knots at multiples of the width, where it equals ``conv(h, h)_k / (2m)``; ``|f*f|`` of a
    piecewise-linear function peaks at a knot, so the bound is exactly
    ``2m · max_k |conv(h, h)_k| / (Σh)^2``. (AlphaEvolve's published checker computes
    ``|2m · max_k conv(h, h)_k| / (Σh)^2``, which equals this whenever the autoconvolution's largest
    magnitude is a maximum rather than a minimum, as in its reported construction; this evaluator takes
    the magnitude, which is the quantity the inequality bounds.) AlphaEvolve's bound: 1.4556427953745406
    with 400 steps; Dream-RSI's Table 1 reports 1.456375 (Dream-RSI) and 1.453675 (SimpleTES); both from
    ``rsi_workbench.domains.math.reference``. Lower is better; ``score = -C3``.
    """

    m: int = 60
    maxiter: int = 300
    direction: str = "min"

    @property
    def name(self) -> str:
        return f"autocorrelation_c3_m{self.m}"

    @property
    def best_known(self) -> float | None:
        return BEST_KNOWN_C3

    def evaluate(self, solution: Any) -> Evaluation:
        return evaluate_c3_steps(solution, self.m)

    def attempt(self, parent_state: Any, seed: int) -> AttemptResult:
        """Restart (random heights) or perturb the parent's heights, then L-BFGS-B on the soft-max bound."""
        from scipy.optimize import minimize

        rng = np.random.default_rng(seed)
        t0 = time.perf_counter()
        if parent_state is None:
            move, h0 = "restart", rng.uniform(0.0, 1.0, self.m)
        else:
            h0 = np.asarray(parent_state, dtype=float).copy()
            move = str(rng.choice(["polish", "jiggle", "sign_block"]))
            if move == "jiggle":
                h0 = h0 + rng.normal(0, 0.1 * (float(np.abs(h0).mean()) or 1.0), self.m)
            elif move == "sign_block":
                i = int(rng.integers(0, self.m))
                h0[i : i + max(1, self.m // 20)] *= -0.5
        h = h0 / (abs(float(h0.sum())) or 1.0) * self.m  # scale-free: normalise Σh to ±m
        info: dict[str, Any] = {}
        for tau in (0.02, 0.005, 0.001):
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                res = minimize(
                    _surrogate_c3,
                    h,
                    args=(tau,),
                    jac=True,
                    method="L-BFGS-B",
                    options={"maxiter": self.maxiter},
                )
            if not np.all(np.isfinite(res.x)):
                info = {"status": 2, "message": "non-finite heights", "nit": int(res.nit)}
                break
            h = res.x
            info = {"status": int(res.status), "message": str(res.message), "nit": int(res.nit)}
            if res.status == 2:
                break
        ev = self.evaluate(h)
        error, fail_class = "", (None if ev.valid else "invalid")
        if info.get("status") == 2:
            error, fail_class = f"L-BFGS-B: {info['message']}", "optimizer_failure"
        return AttemptResult(
            state=h.tolist(),
            evaluation=ev,
            error=error,
            fail_class=fail_class,
            move=move,
            seconds=time.perf_counter() - t0,
            info=info,
        )
