"""Pack 9 disjoint circles in the unit square, maximising the sum of their radii.

The evaluator calls ``construct_packing()``, which returns ``(centres, radii)``: arrays of shape
(9, 2) and (9,).
"""

import numpy as np

N = 9


# EVOLVE-BLOCK-START
def construct_packing():
    """Centres on a slightly jittered 3 x 3 grid, then each radius as large as the square and the
    circles placed before it allow."""
    margin = 0.18
    spread = 0.32
    wobble = 0.02
    centres = []
    for i in range(N):
        row, col = divmod(i, 3)
        x = margin + col * spread + wobble * ((row % 2) - 0.5)
        y = margin + row * spread
        centres.append([x, y])
    centres = np.clip(np.array(centres), 0.01, 0.99)
    radii = np.zeros(N)
    for i in range(N):
        x, y = centres[i]
        r = min(x, y, 1 - x, 1 - y)
        for j in range(i):
            d = np.linalg.norm(centres[i] - centres[j])
            r = min(r, d - radii[j])
        radii[i] = max(r * 0.999, 0.0)
    return centres, radii


# EVOLVE-BLOCK-END
