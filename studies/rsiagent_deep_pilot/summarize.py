"""The RSIAgent deep-practice pilot's compact summary and figures (``configs/rsiagent/deep_pilot.yaml``).

``python studies/rsiagent_deep_pilot/summarize.py RUN_DIR [RUN_DIR ...] --out FILE.json`` reads the
finished arms (through the matched report's :func:`summary`, which keeps only the seeds every arm
finished) and prints, on MiniWoB++'s fresh instances, for Binary (raw reward 1) and partial reward (the
raw reward mapped to [0, 1]):

- per arm: the mean over every (page, seed, instance), and per page;
- full − none (the positive control), full − brs_only, full − drs_only, full − the better single-stage
  arm by its mean (``best_single``), and full − max(BRS, DRS) taken per (page, seed) (``max_single``):
  each a page-clustered bootstrap 95% interval over per-(page, seed) differences;
- the room: an oracle arm at 1 on every fresh instance minus max(BRS, DRS) per (page, seed), the largest
  full − max(BRS, DRS) any arm could reach, with its interval;
- each arm's spend per seed: learning episodes, verifier calls, browser episodes, wall time.

``--config`` names the config in the summary; ``--exclude PAGE ...`` adds the same figures without those
pages (``figures_without``). ``--out`` writes the compact per-(page, seed, arm) JSON. Pure: it reads events, never writes to a run.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: studies.*

from rsi_workbench.experiments.rsiagent.report import _paths, arms  # noqa: E402
from rsi_workbench.metrics.bootstrap import cluster_interval  # noqa: E402
from studies.rsiagent_matched_report.matched_report import summary  # noqa: E402

ARMS = ("none", "brs_only", "drs_only", "full")
METRICS = {"binary": "fresh", "partial": "fresh_partial"}


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


def cells(s: dict[str, Any], metric: str) -> dict[str, dict[str, dict[str, float]]]:
    """arm -> page -> seed -> the mean of ``metric`` over that (page, seed)'s fresh instances."""
    key = METRICS[metric]
    out: dict[str, dict[str, dict[str, float]]] = {}
    for arm, per_seed in s["arms"].items():
        for seed, pages in per_seed.items():
            for page, v in pages.items():
                if v.get(key):
                    out.setdefault(arm, {}).setdefault(page, {})[seed] = _mean(v[key])
    return out


def _diff(c: dict[str, Any], a: str, b: Any) -> tuple[float, float, float, int]:
    """a − b per (page, seed); b is an arm name or a function (page, seed) -> value."""
    clusters: dict[str, list[float]] = {}
    for page, per in c.get(a, {}).items():
        for seed, x in sorted(per.items()):
            y = b(page, seed) if callable(b) else c.get(b, {}).get(page, {}).get(seed)
            if y is not None:
                clusters.setdefault(page, []).append(x - y)
    m, lo, hi = cluster_interval(clusters)
    return m, lo, hi, len(clusters)


def figures(s: dict[str, Any], metric: str) -> dict[str, Any]:
    """Per-arm means and the paired differences of one metric (module docstring)."""
    c = cells(s, metric)
    key = METRICS[metric]
    means = {
        a: _mean([x for pages in s["arms"][a].values() for v in pages.values() for x in v.get(key, [])])
        for a in ARMS
        if a in s["arms"]
    }
    per_page = {a: {p: _mean(list(per.values())) for p, per in sorted(c[a].items())} for a in c}

    def max_single(page: str, seed: str) -> float | None:
        xs = [c[a][page][seed] for a in ("brs_only", "drs_only") if seed in c.get(a, {}).get(page, {})]
        return max(xs) if len(xs) == 2 else None

    singles = {a: means[a] for a in ("brs_only", "drs_only") if a in means}
    best = max(singles, key=lambda a: singles[a]) if singles else None
    diffs: dict[str, Any] = {}
    if "full" in c:
        for b in ("none", "brs_only", "drs_only"):
            if b in c:
                diffs[f"full-{b}"] = _diff(c, "full", b)
        if best:
            diffs["full-best_single"] = _diff(c, "full", best)
        if len(singles) == 2:
            diffs["full-max_single"] = _diff(c, "full", max_single)
    if len(singles) == 2:  # the room: an oracle at 1 everywhere minus max(BRS, DRS)
        c["oracle"] = {p: dict.fromkeys(per, 1.0) for p, per in c.get("brs_only", {}).items()}
        diffs["oracle-max_single"] = _diff(c, "oracle", max_single)
    return {"means": means, "per_page": per_page, "best_single": best, "diffs": diffs}


def spend(dirs: Sequence[Path]) -> dict[str, dict[str, Any]]:
    """arm -> seed -> learning episodes, verifier calls, browser episodes per purpose, wall s."""
    out: dict[str, dict[str, Any]] = {}
    for a in arms(_paths(dirs)):
        sp = a.get("spend") or {}
        out.setdefault(a["ablation"], {})[str(a["seed"])] = {
            "learning_episodes": a.get("learning_episodes_spent"),
            "verifier_calls": sp.get("verifier_calls"),
            "browser_episodes": sp.get("browser_episodes"),
            "wall_s": round(float(a.get("wall_s", 0.0)), 1),
        }
    return out


def without(s: dict[str, Any], pages: Sequence[str]) -> dict[str, Any]:
    """The matched summary with ``pages`` left out of every arm and seed (a separate analysis)."""
    arms_ = {
        a: {sd: {p: v for p, v in per.items() if p not in pages} for sd, per in seeds.items()}
        for a, seeds in s["arms"].items()
    }
    return {**s, "arms": arms_}


def compact(
    s: dict[str, Any],
    dirs: Sequence[Path],
    config: str = "configs/rsiagent/deep_pilot.yaml",
    exclude: Sequence[str] = (),
) -> dict[str, Any]:
    """The committed summary: per (page, seed, arm) the fresh Binary and partial lists and the practised
    Binary; spend per (arm, seed); the figures of both metrics."""
    rows = [
        {
            "arm": arm,
            "seed": int(seed),
            "page": page,
            "practised_binary": v["practised"],
            "fresh_binary": v["fresh"],
            "fresh_partial": [round(x, 4) for x in v["fresh_partial"]],
            "same_utterance_as_target": v.get("same_utterance_as_target", 0),
        }
        for arm in ARMS
        for seed, pages in sorted(s["arms"].get(arm, {}).items(), key=lambda kv: int(kv[0]))
        for page, v in sorted(pages.items())
    ]
    body = {
        "config": config,
        "seeds": sorted({r["seed"] for r in rows}),
        "incomplete_seeds": s.get("incomplete_seeds", []),
        "cap_learning_episodes": s.get("cap"),
        "rows": rows,
        "spend": spend(dirs),
        "figures": {m: figures(s, m) for m in METRICS},
    }
    if exclude:
        body["excluded_pages"] = list(exclude)
        body["figures_without"] = {m: figures(without(s, exclude), m) for m in METRICS}
    return body


def _pp(t: Sequence[float]) -> str:
    return f"{100 * t[0]:+.1f} pp [{100 * t[1]:+.1f}, {100 * t[2]:+.1f}] ({t[3]} pages)"


def text(body: dict[str, Any]) -> str:
    """The figures as Markdown (what the README quotes)."""
    fb, fp = body["figures"]["binary"], body["figures"]["partial"]
    lines = [
        f"seeds {body['seeds']}"
        + (f"; unfinished seeds left out: {body['incomplete_seeds']}" if body["incomplete_seeds"] else ""),
        "",
        "| arm | fresh Binary | fresh partial | learning episodes per seed | verifier calls per seed | wall s per seed |",
        "|---|---|---|---|---|---|",
    ]
    for a in ARMS:
        if a not in fb["means"]:
            continue
        sp = body["spend"].get(a, {})
        seeds = [str(s) for s in body["seeds"]]
        lines.append(
            f"| {a} | {100 * fb['means'][a]:.1f} | {100 * fp['means'][a]:.1f} | "
            + ", ".join(str(sp.get(sd, {}).get("learning_episodes")) for sd in seeds)
            + " | "
            + ", ".join(str(sp.get(sd, {}).get("verifier_calls")) for sd in seeds)
            + " | "
            + ", ".join(str(sp.get(sd, {}).get("wall_s")) for sd in seeds)
            + " |"
        )
    arms_ = [a for a in ARMS if a in fb["per_page"]]
    lines += [
        "",
        "| page | " + " | ".join(f"{a} Binary / partial" for a in arms_) + " |",
        "|---|" + "---|" * len(arms_),
    ]
    for p in sorted(fb["per_page"].get("none", {}) or next(iter(fb["per_page"].values()), {})):
        lines.append(
            f"| {p} | "
            + " | ".join(
                f"{100 * fb['per_page'][a].get(p, float('nan')):.1f} / {100 * fp['per_page'][a].get(p, float('nan')):.1f}"
                for a in arms_
            )
            + " |"
        )
    lines.append("")
    for k in fb["diffs"]:
        lines.append(f"- {k}: Binary {_pp(fb['diffs'][k])}; partial {_pp(fp['diffs'][k])}")
    lines.append(f"- best single-stage arm by mean (Binary): {fb['best_single']}")
    if "figures_without" in body:
        wb, wp = body["figures_without"]["binary"], body["figures_without"]["partial"]
        lines += ["", f"Without {', '.join(body['excluded_pages'])}:"]
        lines += [f"- {k}: Binary {_pp(wb['diffs'][k])}; partial {_pp(wp['diffs'][k])}" for k in wb["diffs"]]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (module docstring)."""
    ap = argparse.ArgumentParser(prog="python studies/rsiagent_deep_pilot/summarize.py")
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, help="write the compact summary here")
    ap.add_argument("--config", default="configs/rsiagent/deep_pilot.yaml", help="the config the runs used")
    ap.add_argument("--exclude", nargs="*", default=[], help="pages also analysed separately: left out")
    args = ap.parse_args(argv)
    body = compact(summary(_paths(args.dirs)), args.dirs, args.config, args.exclude)
    print(text(body))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(body, separators=(",", ":"), sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
