"""Minimise a black-box function of two variables within a fixed budget of evaluations.

The evaluator calls ``run_search(objective, bounds, budget, seed)`` and scores the point it returns.
"""

import numpy as np


# EVOLVE-BLOCK-START
def run_search(objective, bounds, budget, seed):
    """Random restarts followed by a shrinking local perturbation around the best point."""
    rng = np.random.default_rng(seed)
    lo, hi = np.array(bounds[0], dtype=float), np.array(bounds[1], dtype=float)
    best_x = rng.uniform(lo, hi)
    best_f = objective(best_x)
    explore = int(budget * 0.3)
    for _ in range(explore - 1):
        x = rng.uniform(lo, hi)
        f = objective(x)
        if f < best_f:
            best_x, best_f = x, f
    step = 0.5
    for _ in range(budget - explore):
        x = np.clip(best_x + rng.normal(0.0, step, size=best_x.shape), lo, hi)
        f = objective(x)
        if f < best_f:
            best_x, best_f = x, f
        else:
            step = max(step * 0.995, 0.001)
    return best_x


# EVOLVE-BLOCK-END


if __name__ == "__main__":
    from evaluator import objective

    print(run_search(objective, ([-5.0, -5.0], [5.0, 5.0]), 2000, 0))
