"""Circle packing in the unit square: maximise the sum of radii of n disjoint circles.

The evaluator is exact with an explicit tolerance: every circle must lie in ``[0, 1]^2``
(``r_i <= x_i <= 1 - r_i`` up to ``tol``) and no two circles may overlap
(``|c_i - c_j| >= r_i + r_j - tol``); a valid packing scores exactly ``sum(r)``.
Best-known values: ``rsi_workbench.domains.math.reference`` (source and date of each).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from rsi_workbench.domains.math.reference import best_known as _ref
from rsi_workbench.domains.math.task import AttemptResult, Evaluation

BEST_KNOWN = {26: _ref("circle_packing_26"), 32: _ref("circle_packing_32")}
TOL = 1e-9


def evaluate_packing(circles: Any, n: int, *, tol: float = TOL) -> Evaluation:
    """Check containment and non-overlap of ``circles`` (an ``(n, 3)`` array of x, y, r); score = sum of r."""
    try:
        c = np.asarray(circles, dtype=float)
    except (TypeError, ValueError) as e:
        return Evaluation(score=None, value=None, valid=False, reason=f"not numeric: {e}")
    if c.shape != (n, 3):
        return Evaluation(score=None, value=None, valid=False, reason=f"shape {c.shape}, expected ({n}, 3)")
    if not np.all(np.isfinite(c)):
        return Evaluation(score=None, value=None, valid=False, reason="non-finite coordinates or radii")
    x, y, r = c[:, 0], c[:, 1], c[:, 2]
    with np.errstate(over="ignore"):
        total = float(r.sum())
    if not np.isfinite(total):
        return Evaluation(score=None, value=None, valid=False, reason=f"the sum of the radii is {total}")
    if np.any(r < 0):
        return Evaluation(
            score=total, value=total, valid=False, reason=f"negative radius {float(r.min()):.3g}"
        )
    contain = np.concatenate([x - r, 1 - x - r, y - r, 1 - y - r])
    if contain.min() < -tol:
        i = int(np.argmin(contain)) % n
        return Evaluation(
            score=total,
            value=total,
            valid=False,
            reason=f"circle {i} escapes the square by {-contain.min():.3g}",
        )
    d = np.sqrt((x[:, None] - x[None, :]) ** 2 + (y[:, None] - y[None, :]) ** 2)
    gap = d - (r[:, None] + r[None, :])
    iu = np.triu_indices(n, 1)
    worst = gap[iu].min() if n > 1 else 0.0
    if worst < -tol:
        k = int(np.argmin(gap[iu]))
        return Evaluation(
            score=total,
            value=total,
            valid=False,
            reason=f"circles {int(iu[0][k])} and {int(iu[1][k])} overlap by {-worst:.3g}",
        )
    return Evaluation(score=total, value=total, valid=True, reason="")


# --- SciPy local optimisation (SLSQP with analytic Jacobians) ------------------------------------
def _constraints(n: int) -> list[dict[str, Any]]:
    iu, ju = np.triu_indices(n, 1)
    m = len(iu)

    def pair(z: np.ndarray) -> np.ndarray:
        x, y, r = z[:n], z[n : 2 * n], z[2 * n :]
        return (x[iu] - x[ju]) ** 2 + (y[iu] - y[ju]) ** 2 - (r[iu] + r[ju]) ** 2

    def pair_jac(z: np.ndarray) -> np.ndarray:
        x, y, r = z[:n], z[n : 2 * n], z[2 * n :]
        J = np.zeros((m, 3 * n))
        dx, dy, sr = x[iu] - x[ju], y[iu] - y[ju], r[iu] + r[ju]
        rows = np.arange(m)
        J[rows, iu] = 2 * dx
        J[rows, ju] = -2 * dx
        J[rows, n + iu] = 2 * dy
        J[rows, n + ju] = -2 * dy
        J[rows, 2 * n + iu] = -2 * sr
        J[rows, 2 * n + ju] = -2 * sr
        return J

    eye = np.eye(n)
    zero = np.zeros((n, n))
    box_jac = np.block(
        [[eye, zero, -eye], [-eye, zero, -eye], [zero, eye, -eye], [zero, -eye, -eye], [zero, zero, eye]]
    )

    def box(z: np.ndarray) -> np.ndarray:
        x, y, r = z[:n], z[n : 2 * n], z[2 * n :]
        return np.concatenate([x - r, 1 - x - r, y - r, 1 - y - r, r])

    return [
        {"type": "ineq", "fun": pair, "jac": pair_jac},
        {"type": "ineq", "fun": box, "jac": lambda z: box_jac},
    ]


class OptimizerTimeout(RuntimeError):
    """The local optimiser ran past the attempt's time limit."""


def optimize_packing(
    circles: np.ndarray, n: int, *, maxiter: int = 200, time_limit: float = 5.0
) -> tuple[np.ndarray, dict[str, Any]]:
    """Run SLSQP from ``circles`` maximising ``sum(r)``; returns the final circles and optimiser info."""
    from scipy.optimize import minimize

    z0 = np.concatenate([circles[:, 0], circles[:, 1], circles[:, 2]])
    c = -np.concatenate([np.zeros(2 * n), np.ones(n)])
    t0 = time.perf_counter()

    def cb(_z: np.ndarray) -> None:
        if time.perf_counter() - t0 > time_limit:
            raise OptimizerTimeout(f"SLSQP exceeded the {time_limit:g}s attempt limit")

    res = minimize(
        lambda z: float(c @ z),
        z0,
        jac=lambda z: c,
        method="SLSQP",
        constraints=_constraints(n),
        options={"maxiter": maxiter, "ftol": 1e-12},
        callback=cb,
    )
    z = res.x
    out = np.stack([z[:n], z[n : 2 * n], z[2 * n :]], axis=1)
    return out, {"status": int(res.status), "message": str(res.message), "nit": int(res.nit)}


#: SLSQP exit modes that are real optimiser failures (not "iteration limit" or a line-search stall)
SLSQP_FAILURES = {2, 3, 4, 5, 6, 7}


@dataclass(frozen=True)
class CirclePacking:
    """The discovery task: n circles in the unit square, maximise the sum of radii (higher is better)."""

    n: int = 26
    maxiter: int = 150
    time_limit: float = 5.0
    tol: float = TOL
    direction: str = "max"

    @property
    def name(self) -> str:
        return f"circle_packing_n{self.n}"

    @property
    def best_known(self) -> float | None:
        return BEST_KNOWN.get(self.n)

    def evaluate(self, solution: Any) -> Evaluation:
        return evaluate_packing(solution, self.n, tol=self.tol)

    def initial_state(self, rng: np.random.Generator) -> np.ndarray:
        """A random start: uniform centres, small equal radii (usually overlapping until optimised)."""
        xy = rng.uniform(0.1, 0.9, size=(self.n, 2))
        return np.concatenate([xy, np.full((self.n, 1), 0.05)], axis=1)

    def attempt(self, parent_state: Any, seed: int) -> AttemptResult:
        """One generate-and-evaluate attempt: perturb/restart from the parent's state, then SLSQP."""
        rng = np.random.default_rng(seed)
        t0 = time.perf_counter()
        if parent_state is None:
            move, start = "restart", self.initial_state(rng)
        else:
            parent = np.asarray(parent_state, dtype=float).copy()
            move = str(rng.choice(["polish", "jiggle", "relocate", "swap_grow"], p=[0.15, 0.4, 0.3, 0.15]))
            start = _perturb(parent, move, rng)
        try:
            final, info = optimize_packing(start, self.n, maxiter=self.maxiter, time_limit=self.time_limit)
        except OptimizerTimeout as e:
            return AttemptResult(
                state=start.tolist(),
                evaluation=None,
                error=str(e),
                fail_class="timeout",
                move=move,
                seconds=time.perf_counter() - t0,
            )
        except (ValueError, ArithmeticError, np.linalg.LinAlgError) as e:
            return AttemptResult(
                state=start.tolist(),
                evaluation=None,
                error=f"{type(e).__name__}: {e}",
                fail_class="exception",
                move=move,
                seconds=time.perf_counter() - t0,
            )
        ev = self.evaluate(final)
        error = ""
        fail_class = None if ev.valid else "invalid"
        if info["status"] in SLSQP_FAILURES:
            error, fail_class = f"SLSQP exit {info['status']}: {info['message']}", "optimizer_failure"
        return AttemptResult(
            state=final.tolist(),
            evaluation=ev,
            error=error,
            fail_class=fail_class,
            move=move,
            seconds=time.perf_counter() - t0,
            info=info,
        )


def _perturb(c: np.ndarray, move: str, rng: np.random.Generator) -> np.ndarray:
    n = len(c)
    if move == "polish":
        c[:, :2] += rng.normal(0, 1e-4, size=(n, 2))
    elif move == "jiggle":
        sigma = float(rng.choice([0.01, 0.03, 0.06]))
        c[:, :2] += rng.normal(0, sigma, size=(n, 2))
        c[:, 2] *= 0.9
    elif move == "relocate":
        k = int(rng.integers(1, 4))
        idx = np.argsort(c[:, 2])[:k]
        c[idx, :2] = rng.uniform(0.05, 0.95, size=(k, 2))
        c[idx, 2] = 0.01
    elif move == "swap_grow":
        i, j = rng.choice(n, size=2, replace=False)
        c[[i, j], 2] = c[[j, i], 2]
        c[:, 2] *= 0.95
    c[:, :2] = np.clip(c[:, :2], 0.0, 1.0)
    c[:, 2] = np.clip(c[:, 2], 0.0, 0.5)
    return c
