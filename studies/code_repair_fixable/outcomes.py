"""Compact per-(task, seed, method) outcomes of a code-repair experiment and their paired table
(the fixable-subset comparison), so the result is kept without the run directory:

    python -m studies.code_repair_fixable.outcomes EXP_DIR --save FILE   # write the outcomes
    python -m studies.code_repair_fixable.outcomes --table FILE [--control FILE2]

The outcomes file holds, per method and task, the final kept program's hidden all-pass (0/1) and
its online test calls, one value per seed (finished runs only), and the experiment's config. The
table gives each method's hidden all-pass and calls/task, and each paired difference a − b over
(task, seed) pairs with a 95% bootstrap interval resampling whole tasks
(:func:`rsi_workbench.metrics.bootstrap.cluster_interval`, 2000 resamples, seed 0) — the interval
the experiment's report prints. ``--control FILE2`` adds another experiment's ``lm_fixed`` (the
features readout of ``configs/code_repair/fixable_features.yaml``) as ``features_fixed``, paired
with this one's arms by (task, seed) when both ran identical Random-K outcomes.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

FORMAT = "rsi-workbench/code-repair-outcomes/v1"


def collect(exp_dir: str | Path) -> dict[str, Any]:
    """The outcomes of every finished (method, seed) run of an experiment directory."""
    from rsi_workbench.experiments.code_repair.config import stored_config
    from rsi_workbench.experiments.code_repair.report import RANKING_TERMS, _runs
    from rsi_workbench.protocol.report import summarize_run

    exp_dir = Path(exp_dir)
    cfg = stored_config(exp_dir)
    seeds: dict[str, list[int]] = {}
    hidden: dict[str, dict[str, list[int]]] = {}
    calls: dict[str, dict[str, list[float]]] = {}
    for name, path in _runs(exp_dir).items():
        method, seed_s = name.rsplit("-seed", 1)
        s = summarize_run(path, ranking_terms=RANKING_TERMS)
        if not s.finished:
            continue
        seeds.setdefault(method, []).append(int(seed_s))
    for method, ss in seeds.items():
        ss.sort()
        for sd in ss:
            s = summarize_run(exp_dir / "runs" / f"{method}-seed{sd}", ranking_terms=RANKING_TERMS)
            for t, r in sorted(s.final.items()):
                hidden.setdefault(method, {}).setdefault(t, []).append(int(bool(r["hidden_all_pass"])))
                calls.setdefault(method, {}).setdefault(t, []).append(float(s.online_calls.get(t, 0.0)))
    return {
        "format": FORMAT,
        "experiment": str(exp_dir),
        "config": cfg.model_dump(mode="json"),
        "methods": [m for m in cfg.methods if m in seeds],
        "seeds": seeds,
        "hidden_all_pass": hidden,
        "online_calls": calls,
    }


def paired(data: Mapping[str, Any], a: str, b: str) -> tuple[float, float, float, int] | None:
    """(mean, lo, hi, tasks) of a − b in hidden all-pass over (task, seed) pairs both arms ran."""
    from rsi_workbench.metrics.bootstrap import cluster_interval

    ha, hb = data["hidden_all_pass"].get(a), data["hidden_all_pass"].get(b)
    if not ha or not hb:
        return None
    sa, sb = data["seeds"][a], data["seeds"][b]
    common = [s for s in sa if s in sb]
    diffs = {t: [ha[t][sa.index(s)] - hb[t][sb.index(s)] for s in common] for t in sorted(set(ha) & set(hb))}
    diffs = {t: v for t, v in diffs.items() if v}
    if not diffs:
        return None
    m, lo, hi = cluster_interval(diffs, seed=0)
    return m, lo, hi, len(diffs)


def table(data: Mapping[str, Any], comparisons: Sequence[tuple[str, str]]) -> str:
    """Per method its hidden all-pass and calls/task, then the paired differences (Markdown)."""
    rows = ["| method | seeds | tasks | hidden all-pass | online calls/task |", "|---|---|---:|---:|---:|"]
    for m in data["methods"]:
        h, c = data["hidden_all_pass"][m], data["online_calls"][m]
        vals = [v for vs in h.values() for v in vs]
        cv = [v for vs in c.values() for v in vs]
        rows.append(
            f"| {m} | {','.join(map(str, data['seeds'][m]))} | {len(h)} | "
            f"{100 * sum(vals) / len(vals):.1f}% | {sum(cv) / len(cv):.2f} |"
        )
    rows += [
        "",
        "| paired difference | tasks | Δ hidden all-pass [95% CI, task-clustered] |",
        "|---|---:|---:|",
    ]
    for a, b in comparisons:
        r = paired(data, a, b)
        cell = "not run" if r is None else f"{100 * r[0]:+.1f} pp [{100 * r[1]:+.1f}, {100 * r[2]:+.1f}]"
        rows.append(f"| {a} − {b} | {r[3] if r else '—'} | {cell} |")
    return "\n".join(rows)


DEFAULT_COMPARISONS = (
    ("lm_adaptive", "random_k"),
    ("lm_fixed", "random_k"),
    ("lm_adaptive", "static_verifier"),
    ("lm_adaptive", "world_fixed"),
    ("lm_fixed", "static_verifier"),
    ("lm_fixed", "world_fixed"),
    ("lm_adaptive", "lm_fixed"),
    ("world_fixed", "random_k"),
    ("static_verifier", "random_k"),
)


def verdict(data: Mapping[str, Any], a: str = "lm_adaptive", b: str = "random_k") -> str:
    """The pre-registered rule of ``configs/code_repair/fixable.yaml`` on a − b."""
    r = paired(data, a, b)
    if r is None:
        return f"not run ({a} or {b} missing)"
    m, lo, hi, _ = r
    if m > 0 and lo > 0:
        return (
            f"success: {a} − {b} = {100 * m:+.1f} pp [{100 * lo:+.1f}, {100 * hi:+.1f}], the "
            "task-clustered interval excludes 0"
        )
    return f"falsified: {a} − {b} = {100 * m:+.1f} pp [{100 * lo:+.1f}, {100 * hi:+.1f}] includes 0 or is reversed"


def with_control(
    data: Mapping[str, Any], control: Mapping[str, Any], arm: str = "lm_fixed"
) -> dict[str, Any]:
    """``data`` plus the ``arm`` of another experiment's outcomes (e.g. the features readout of
    ``fixable_features.yaml``) as ``features_fixed``; refused unless both ran the same random_k
    outcomes (the same tasks, seeds and proposer, so pairing across the two is pairing within one)."""
    if control["hidden_all_pass"].get("random_k") != data["hidden_all_pass"].get("random_k"):
        raise ValueError(
            "the control's random_k outcomes differ from this experiment's: not the same setting"
        )
    return {
        "methods": [*data["methods"], "features_fixed"],
        "seeds": {**data["seeds"], "features_fixed": control["seeds"][arm]},
        "hidden_all_pass": {**data["hidden_all_pass"], "features_fixed": control["hidden_all_pass"][arm]},
        "online_calls": {**data["online_calls"], "features_fixed": control["online_calls"][arm]},
    }


CONTROL_COMPARISONS = (("lm_fixed", "features_fixed"), ("features_fixed", "random_k"))


def main(argv: list[str] | None = None) -> int:
    """The command line (module doc)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("exp_dir", nargs="?", help="an experiment directory (with --save)")
    ap.add_argument("--save", help="write the outcomes JSON here")
    ap.add_argument("--table", help="print the table of an outcomes JSON")
    ap.add_argument("--control", help="an outcomes JSON whose lm_fixed joins the table as features_fixed")
    args = ap.parse_args(argv)
    if args.exp_dir:
        data = collect(args.exp_dir)
        if args.save:
            Path(args.save).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    elif args.table:
        data = json.loads(Path(args.table).read_text())
    else:
        ap.error("give an experiment directory or --table FILE")
    comparisons: tuple[tuple[str, str], ...] = DEFAULT_COMPARISONS
    if args.control:
        data = with_control(data, json.loads(Path(args.control).read_text()))
        comparisons = (*DEFAULT_COMPARISONS, *CONTROL_COMPARISONS)
    print(table(data, comparisons))
    print(f"\nverdict (pre-registered, lm_adaptive − random_k): {verdict(data)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
