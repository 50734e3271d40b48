"""Replay fidelity on C3 at the oracle pilot's budget (issue 49 item 3; a diagnostic, not pre-registered).

    nice -n 10 python studies/dreaming_c3_fidelity/fidelity_c3.py run --out benchmarks/data/dreaming_c3_fidelity
    python studies/dreaming_c3_fidelity/fidelity_c3.py table benchmarks/data/dreaming_c3_fidelity

``run`` (resumable: each run directory is continued when it exists) records the trees of
``configs/dreaming/c3_fidelity.yaml`` (the ``dreaming_diverse`` arm, trees grown by breadth_first at
3x the deployed budget, every candidate replayed under a node budget of 16 with the online legal
set), runs every parameter mutation of the last round of choice live at the pilot's settings (64
attempts, the same seed), and writes one ``seed-<s>.json`` per seed plus ``summary.json``.

The live values of π0 and the fixed families are the oracle pilot's
(``benchmarks/data/dreaming_c3_pilot/summary.json``: best C3 within 64 attempts per arm and seed).
ρ is the existing measure (:func:`rsi_workbench.domains.math.fidelity.fidelity`, within-seed ranks,
an undefined V ranked below any defined one): per seed, Spearman's ρ between each candidate's replay
V at the last round of choice (on all 4 recorded trees) and its live best score (−C3) — over π0 and
the three families (``online: same_seed`` and the declared ``other_seeds_mean``), and over all
candidates with the mutations included (each mutation is given its own live arm, same seed).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "configs/dreaming/c3_fidelity.yaml"
PILOT = ROOT / "benchmarks/data/dreaming_c3_pilot/summary.json"
RUN_DIR = ROOT / "runs/dreaming_c3_fidelity"
LIVE_DIR = ROOT / "runs/dreaming_c3_fidelity_live"
ARM = "dreaming_diverse"
BUDGET = 64  # the pilot's live attempts per arm and seed


def _cfg() -> Any:
    from rsi_workbench.cli import load_experiment_config

    return load_experiment_config(CONFIG)


def _live_best(params: dict[str, Any], seed: int, tag: str) -> float | None:
    """Best valid score (−C3) of π with ``params`` live at the pilot's settings on ``seed``."""
    from rsi_workbench.experiments.dreaming.experiment import Config, load_frames, run_experiment

    cfg = Config(  # the pilot's settings (benchmarks/data/dreaming_c3_pilot/pilot.py), one portfolio arm
        task={"kind": "autocorrelation_c3", "m": 40, "maxiter": 40},
        arms=["portfolio"],
        seeds=[seed],
        W=4,
        executor="serial",
        calls=BUDGET,
        calls_per_round=16,
        candidates=1,
        policy=params,
    )
    d = LIVE_DIR / tag
    run_experiment(cfg, d, resume=d.exists())
    n = load_frames(d, "tree_node")
    v = n[n["valid"]]["score"]
    return None if v.empty else float(v.max())


def run(out: Path) -> None:
    from rsi_workbench.experiments.dreaming.experiment import load_frames, run_experiment

    cfg = _cfg()
    run_experiment(cfg, RUN_DIR, resume=RUN_DIR.exists())
    pilot = json.loads(PILOT.read_text())["best_C3"]
    scored = load_frames(RUN_DIR, "replay_scored")
    rows = load_frames(RUN_DIR, "replay_tree_scored")
    nodes = load_frames(RUN_DIR, "tree_node")
    out.mkdir(parents=True, exist_ok=True)
    for seed in cfg.seeds:
        s = scored[scored["seed"] == seed]
        r = rows[rows["seed"] == seed]
        last = int(s["tree"].max())
        cands = []
        for _, c in s[s["tree"] == last].sort_values("candidate").iterrows():
            label = str(c["label"])
            rr = r[(r["tree"] == last) & (r["candidate"] == c["candidate"])]
            oot = int(sum(len(x) for x in rr["out_of_tree"]))
            choices = int(rr["n"].sum()) + oot
            params = _params(c) if label == "mutation" else None
            if label == "mutation":
                live = _live_best(params, seed, f"s{seed}-c{int(c['candidate'])}")
            else:
                arm = "portfolio" if label == "pi0" else label
                live = -pilot[f"{arm}|{seed}"]
            cands.append(
                {
                    "candidate": int(c["candidate"]),
                    "label": label,
                    "params": params,
                    "V": None if c["V"] is None or c["V"] != c["V"] else float(c["V"]),
                    "deployed": bool(c["deployed"]),
                    "revealed": int(rr["n"].sum()),
                    "out_of_tree": oot,
                    "choices": choices,
                    "quality_per_tree": [None if q != q or q is None else float(q) for q in rr["quality"]],
                    "live_best_score": live,
                }
            )
        rounds = [
            {
                "tree": int(t),
                "deployed": str(g[g["deployed"]]["label"].iloc[0]),
                "out_of_tree_share": _share(rows[(rows["seed"] == seed) & (rows["tree"] == t)]),
            }
            for t, g in s.groupby("tree")
        ]
        tn = nodes[nodes["seed"] == seed]
        summary = {
            "seed": int(seed),
            "last_round": last,
            "recorded_trees": int(tn["tree"].max()) + 1,
            "recorded_attempts": len(tn),
            "recorded_best_score": float(tn[tn["valid"]]["score"].max()),
            "beta": [float(s["beta1"].iloc[0]), float(s["beta2"].iloc[0])],
            "candidates": cands,
            "rounds": rounds,
        }
        (out / f"seed-{seed}.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
        print(f"seed {seed}: written", file=sys.stderr)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.strip()
    res = table(out, quiet=True)
    res["meta"] = {
        "config": str(CONFIG.relative_to(ROOT)),
        "run_config": cfg.model_dump(mode="json"),
        "live": str(PILOT.relative_to(ROOT)),
        "commit": commit,
        "command": f"nice -n 10 python studies/dreaming_c3_fidelity/fidelity_c3.py run --out {out}",
    }
    (out / "summary.json").write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")
    table(out)


def _params(row: Any) -> dict[str, Any]:
    """A candidate's portfolio parameters (``load_frames`` flattens the payload's dict)."""
    out = {}
    for k, v in row.items():
        if str(k).startswith("params."):
            out[str(k)[len("params.") :]] = v.item() if hasattr(v, "item") else v
    return out


def _share(rr: Any) -> float:
    oot = sum(len(x) for x in rr["out_of_tree"])
    ch = int(rr["n"].sum()) + oot
    return oot / ch if ch else 0.0


def _as_fidelity_summary(s: dict[str, Any], with_mutations: bool) -> dict[str, Any]:
    """A per-seed summary in the shape :func:`fidelity` reads: each candidate with a live value is
    given an arm (a mutation its own, ``mutation-<i>``) whose best@64 is that live value."""
    arms: dict[str, Any] = {}
    cands = []
    for c in s["candidates"]:
        label = c["label"]
        if label == "mutation":
            if not with_mutations:
                cands.append({"label": "mutation", "V": c["V"], "deployed": c["deployed"]})
                continue
            label = f"mutation-{c['candidate']}"
        arm = "portfolio" if label == "pi0" else label
        arms[arm] = {"best_at": {str(BUDGET): c["live_best_score"]}}
        cands.append({"label": label, "V": c["V"], "deployed": c["deployed"]})
    return {
        "seed": s["seed"],
        "budget": BUDGET,
        "arms": arms,
        "choices": {ARM: [{"tree": s["last_round"], "candidates": cands}]},
    }


def table(data: Path, quiet: bool = False) -> dict[str, Any]:
    """ρ per seed and pooled, the median per-seed ρ, and the out-of-tree shares, from the seed files."""
    from rsi_workbench.domains.math.fidelity import FidelitySettings, fidelity

    seeds = [json.loads(p.read_text()) for p in data.glob("seed-*.json")]
    seeds.sort(key=lambda s: s["seed"])
    res: dict[str, Any] = {"seeds": [s["seed"] for s in seeds], "rho": {}}
    for name, online, mut in [
        ("families_same_seed", "same_seed", False),
        ("families_other_seeds_mean", "other_seeds_mean", False),
        ("all_candidates_same_seed", "same_seed", True),
    ]:
        st = FidelitySettings(arm=ARM, online=online, pooling="within_seed_ranks", budget=BUDGET)
        f = fidelity([_as_fidelity_summary(s, mut) for s in seeds], st)
        per = {int(k): v for k, v in f.per_seed.items()}
        defined = [v for v in per.values() if v is not None]
        res["rho"][name] = {
            "per_seed": per,
            "median_per_seed": statistics.median(defined) if defined else None,
            "pooled": f.rho,
            "n_points": f.n_points,
        }
    oot = sum(c["out_of_tree"] for s in seeds for c in s["candidates"])
    ch = sum(c["choices"] for s in seeds for c in s["candidates"])
    by_label: dict[str, list[int]] = {}
    for s in seeds:
        for c in s["candidates"]:
            b = by_label.setdefault(c["label"], [0, 0])
            b[0] += c["out_of_tree"]
            b[1] += c["choices"]
    res["out_of_tree_share"] = {
        "last_round_all_candidates": oot / ch if ch else None,
        "by_label": {k: v[0] / v[1] for k, v in sorted(by_label.items()) if v[1]},
        "all_rounds_mean": statistics.mean(r["out_of_tree_share"] for s in seeds for r in s["rounds"])
        if seeds
        else None,
    }
    res["deployed_last_round"] = {
        s["seed"]: next(c["label"] for c in s["candidates"] if c["deployed"]) for s in seeds
    }
    res["V_spread_last_round"] = {s["seed"]: _spread([c["V"] for c in s["candidates"]]) for s in seeds}
    # what the last round's choice is worth live on its own seed: π0's best C3 minus the chosen
    # candidate's (positive: the replay's choice found a lower C3 than π0), t 95% over seeds
    from rsi_workbench.metrics.bootstrap import t_interval

    gain = []
    for s in seeds:
        pi0 = next(c["live_best_score"] for c in s["candidates"] if c["label"] == "pi0")
        ch = next(c["live_best_score"] for c in s["candidates"] if c["deployed"])
        gain.append(ch - pi0)  # scores are −C3: chosen − π0 in score = π0 − chosen in C3
    m, lo, hi, n = t_interval(gain)
    res["choice_minus_pi0_C3_gained"] = {"per_seed": gain, "mean": m, "ci95": [lo, hi], "seeds": n}
    if not quiet:
        print(
            f"the last round's choice − π0, live on the same seed (C3 gained): {m:+.5f} [{lo:+.5f}, {hi:+.5f}]"
        )
        fmt = lambda x: "—" if x is None else f"{x:+.3f}"  # noqa: E731
        print(f"{len(seeds)} seeds")
        for name, r in res["rho"].items():
            print(
                f"ρ {name}: median per seed {fmt(r['median_per_seed'])}, pooled {fmt(r['pooled'])} "
                f"({r['n_points']} points); per seed "
                + ", ".join(f"s{k} {fmt(v)}" for k, v in r["per_seed"].items())
            )
        o = res["out_of_tree_share"]
        print(
            f"out-of-tree share (last round, all candidates): {o['last_round_all_candidates']:.3f}; "
            f"mean over all rounds {o['all_rounds_mean']:.3f}; by label "
            + ", ".join(f"{k} {v:.3f}" for k, v in o["by_label"].items())
        )
        print("deployed at the last round:", res["deployed_last_round"])
        for s in seeds:
            print(f"seed {s['seed']}:")
            for c in s["candidates"]:
                v = "—" if c["V"] is None else f"{c['V']:.5f}"
                lv = "—" if c["live_best_score"] is None else f"{-c['live_best_score']:.5f}"
                print(
                    f"   {c['label']:<20} V {v:>9}  live C3 {lv}  out-of-tree {c['out_of_tree']}/{c['choices']}"
                    f"{'  *' if c['deployed'] else ''}"
                )
    return res


def _spread(vs: list[float | None]) -> float | None:
    d = [v for v in vs if v is not None]
    return max(d) - min(d) if d else None


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="record, replay, run the mutations live, write the seed files")
    r.add_argument("--out", type=Path, required=True)
    t = sub.add_parser("table", help="ρ and out-of-tree shares from the committed seed files")
    t.add_argument("data", type=Path)
    a = ap.parse_args(argv)
    if a.cmd == "run":
        run(a.out)
    else:
        table(a.data)


if __name__ == "__main__":
    main()
