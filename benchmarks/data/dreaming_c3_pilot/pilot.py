"""Oracle pilot on C3: fixed families and pi0 (portfolio) live, 3 seeds; writes a compact summary."""

import json
import sys
from pathlib import Path

import numpy as np
from scipy.stats import t

from rsi_workbench.experiments.dreaming.experiment import Config, load_frames, run_experiment

cfg = Config(
    task={"kind": "autocorrelation_c3", "m": 40, "maxiter": 40},
    arms=["portfolio", "independent_roots", "greedy_deepest_best", "breadth_first"],
    seeds=[0, 1, 2, 3, 4],
    W=4,
    executor="serial",
    calls=64,
    calls_per_round=16,
    candidates=1,
)
out = run_experiment(cfg, Path("runs/dreaming_c3_pilot"))  # resumable: reruns continue the same directory
nodes = load_frames(out, "tree_node")
best = {}
for (arm, seed), g in nodes.groupby(["arm", "seed"]):
    v = g[g["valid"]]["score"]
    best[f"{arm}|{seed}"] = None if v.empty else float(-v.max())  # C3 value, lower is better
arms = [a for a in cfg.arms if a != "portfolio"]
rows = {}
for a in arms:
    d = np.array([best[f"portfolio|{s}"] - best[f"{a}|{s}"] for s in cfg.seeds])  # >0: family beats pi0
    se = d.std(ddof=1) / np.sqrt(len(d))

    h = t.ppf(0.975, len(d) - 1) * se
    rows[a] = {
        "pi0_minus_family_C3": d.tolist(),
        "mean": float(d.mean()),
        "ci95": [float(d.mean() - h), float(d.mean() + h)],
    }
# oracle: per seed the best family (chosen after the fact)
orc = np.array([best[f"portfolio|{s}"] - min(best[f"{a}|{s}"] for a in arms) for s in cfg.seeds])
h = t.ppf(0.975, len(orc) - 1) * orc.std(ddof=1) / np.sqrt(len(orc))
summary = {
    "config": cfg.model_dump(mode="json"),
    "best_C3": best,
    "family_vs_pi0": rows,
    "oracle_vs_pi0": {
        "per_seed": orc.tolist(),
        "mean": float(orc.mean()),
        "ci95": [float(orc.mean() - h), float(orc.mean() + h)],
    },
}
Path(sys.argv[1]).write_text(json.dumps(summary, indent=1) + "\n")
print(json.dumps({k: v for k, v in summary.items() if k != "config"}, indent=1))
