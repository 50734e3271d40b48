"""Synthetic tabular directions with planted feature groups: the ground truth is known by construction.

Each direction ``synthetic-planted-NN/outcome`` is generated deterministically from its seed (no
download): a weakly informative ``context`` baseline group and six measurement blocks whose roles
are planted — two *informative* blocks (one strong, one weak) that carry independent signal about
the outcome, one *redundant* block (a noisy linear copy of the strong informative block: it adds
nothing beyond it), and three *noise* blocks (independent of everything). Which block plays which
role, the block widths, the sample size and the outcome type (binary AUC or regression R²) vary
with the seed, so a Lead cannot learn a fixed block name. :func:`planted_truth` returns the roles.

They are registered beside the bundled catalog (``tabular.direction`` finds them) but are not in
``tabular.DIRECTIONS``, so no existing default changes; each has its own dataset name, so a
``discovery_rounds`` split can use them as fresh, disjoint directions.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Literal

import numpy as np

from rsi_workbench.domains.tabular.catalog import Direction

if TYPE_CHECKING:
    import pandas as pd

PREFIX = "synthetic-planted-"
STATEFUL_PREFIX = "synthetic-stateful-"  # the same data; the operators' effects depend on the state
N_SYNTHETIC = 40
BLOCKS = ("block_a", "block_b", "block_c", "block_d", "block_e", "block_f")
Role = Literal["informative", "redundant", "noise", "baseline"]


def _design(i: int) -> dict[str, object]:
    """The planted design of direction ``i``: roles per block, widths, n, task (a pure function of i)."""
    rng = np.random.default_rng(9_000 + i)
    order = [BLOCKS[k] for k in rng.permutation(len(BLOCKS))]
    roles: dict[str, Role] = {
        order[0]: "informative",
        order[1]: "informative",
        order[2]: "redundant",
        order[3]: "noise",
        order[4]: "noise",
        order[5]: "noise",
    }
    widths = {b: int(rng.integers(2, 5)) for b in BLOCKS}
    return {
        "roles": roles,
        "strong": order[0],
        "weak": order[1],
        "widths": widths,
        "n": int(rng.choice([240, 300, 360])),
        "task": "binary" if i % 2 == 0 else "regression",
        "seed": 10_000 + i,
    }


def _direction(i: int, prefix: str = PREFIX) -> Direction:
    d = _design(i)
    task = str(d["task"])
    widths: dict[str, int] = d["widths"]  # type: ignore[assignment]
    groups: dict[str, tuple[str, ...]] = {"context": ("context_0", "context_1")}
    groups |= {b: tuple(f"{b}_{k}" for k in range(widths[b])) for b in BLOCKS}
    text = {"context": "context covariates (weakly informative baseline)"}
    text |= {b: f"measurement {b.replace('_', ' ')} ({widths[b]} columns)" for b in BLOCKS}
    noise = next(b for b, r in d["roles"].items() if r == "noise")  # type: ignore[attr-defined]
    stateful = prefix == STATEFUL_PREFIX
    return Direction(
        dataset=f"{prefix}{i:02d}",
        outcome="outcome",
        task="binary" if task == "binary" else "regression",
        metric="auc" if task == "binary" else "r2",
        population=f"{d['n']} synthetic subjects with planted informative, redundant and noise "
        f"measurement blocks (seed {d['seed']})"
        + ("; state-dependent planted operators (domains/tabular/stateful.py)" if stateful else ""),
        outcome_text="the planted outcome" + (" (binary)" if task == "binary" else " (continuous)"),
        groups=groups,
        group_text=text,
        baselines=(("context",), ("context", noise)),
        unavailable={"follow_up": "no follow-up measurement was simulated"},
        threshold=0.01,
    )


SYNTHETIC_DIRECTIONS: dict[str, Direction] = {d.name: d for d in (_direction(i) for i in range(N_SYNTHETIC))}
# ``synthetic-stateful-NN/outcome``: planted-NN's design and data under its own dataset name, on which
# the built-in roles and the credit experiment's Leads apply the state-dependent planted operators of
# :mod:`~rsi_workbench.domains.tabular.stateful` (the best operation depends on the state)
STATEFUL_DIRECTIONS: dict[str, Direction] = {
    d.name: d for d in (_direction(i, STATEFUL_PREFIX) for i in range(N_SYNTHETIC))
}


def is_synthetic(name: str) -> bool:
    """Whether ``name`` (a direction or a dataset) is a planted synthetic direction (stateful or not)."""
    return name.startswith((PREFIX, STATEFUL_PREFIX))


def is_stateful(name: str) -> bool:
    """Whether ``name`` (a direction or a dataset) is a state-dependent planted direction."""
    return name.startswith(STATEFUL_PREFIX)


def _index(name: str) -> int:
    if name not in SYNTHETIC_DIRECTIONS and name not in STATEFUL_DIRECTIONS:
        raise KeyError(
            f"unknown synthetic direction {name!r}; known: {sorted(SYNTHETIC_DIRECTIONS)} and the "
            f"stateful {STATEFUL_PREFIX}00..{N_SYNTHETIC - 1:02d}/outcome"
        )
    prefix = STATEFUL_PREFIX if is_stateful(name) else PREFIX
    return int(name[len(prefix) : len(prefix) + 2])


def planted_truth(name: str) -> dict[str, Role]:
    """The planted role of every group of a synthetic direction (``context`` is the baseline)."""
    roles: dict[str, Role] = dict(_design(_index(name))["roles"])  # type: ignore[call-overload]
    return {"context": "baseline", **roles}


@lru_cache(maxsize=32)
def load_synthetic(name: str) -> tuple[pd.DataFrame, np.ndarray]:
    """Features and outcome of a synthetic direction, generated from its seed (same bytes every call)."""
    import pandas as pd

    d = _design(_index(name))
    rng = np.random.default_rng(int(d["seed"]))  # type: ignore[call-overload]
    n = int(d["n"])  # type: ignore[call-overload]
    widths: dict[str, int] = d["widths"]  # type: ignore[assignment]
    roles: dict[str, Role] = d["roles"]  # type: ignore[assignment]
    cols: dict[str, np.ndarray] = {}
    context = rng.standard_normal((n, 2))
    signal = 0.4 * context[:, 0]
    blocks: dict[str, np.ndarray] = {}
    for b, strength in ((str(d["strong"]), 1.6), (str(d["weak"]), 0.8)):
        x = rng.standard_normal((n, widths[b]))
        beta = rng.uniform(0.5, 1.0, widths[b]) * rng.choice([-1.0, 1.0], widths[b])
        signal = signal + strength * x @ beta / np.linalg.norm(beta)
        blocks[b] = x
    strong = blocks[str(d["strong"])]
    for b in BLOCKS:
        if roles[b] == "redundant":  # noisy linear mixtures of the strong block: nothing beyond it
            mix = rng.standard_normal((strong.shape[1], widths[b]))
            blocks[b] = strong @ mix + 0.3 * rng.standard_normal((n, widths[b]))
        elif roles[b] == "noise":
            blocks[b] = rng.standard_normal((n, widths[b]))
    for k in range(2):
        cols[f"context_{k}"] = context[:, k]
    for b in BLOCKS:
        for k in range(widths[b]):
            cols[f"{b}_{k}"] = blocks[b][:, k]
    X = pd.DataFrame(cols)
    if d["task"] == "binary":
        y = (rng.random(n) < 1.0 / (1.0 + np.exp(-signal))).astype(int)
    else:
        y = signal + rng.standard_normal(n)
    return X, y


__all__ = [
    "BLOCKS",
    "N_SYNTHETIC",
    "PREFIX",
    "STATEFUL_DIRECTIONS",
    "STATEFUL_PREFIX",
    "SYNTHETIC_DIRECTIONS",
    "is_stateful",
    "is_synthetic",
    "load_synthetic",
    "planted_truth",
]
