"""Report of a matched-budget RSIAgent experiment with fresh-instance evaluation and the verifier audit.

``python studies/rsiagent_matched_report/matched_report.py DIR [DIR ...] [--json OUT] [--headline OUT]``
pools the finished arms of one or more experiment directories (the same config apart from seeds) and
prints, per arm, the Binary on the practised targets and on the fresh instances, the learning
episodes each arm spent against the declared cap (the engine's attempts, which include attempts where
the actor had no untried candidate and played nothing; the browser episodes played, audited, beside), the per-page fresh Binary, the verifier audit
(verdict vs the page's raw reward, per learning episode) and the pre-registered reading of
``configs/rsiagent/miniwob_pages10.yaml``:

- metric: Binary (raw reward 1) on the fresh instances; unit: the page (page-clustered bootstrap 95%
  interval, :func:`rsi_workbench.metrics.bootstrap.cluster_interval`, over per-(page, seed) paired
  differences of the fresh-instance Binary);
- convincing: full − none ≥ 20 pp over ≥ 100 fresh-instance evaluations of the full arm, with the
  interval excluding 0, AND full above the best single-stage arm (DRS only / BRS only) at the same cap;
- falsified: the gain vanishes on fresh instances (full − none < 5 pp and the interval's upper end
  < 20 pp);
- otherwise inconclusive.

``--json`` writes the compact per-page / per-arm summary (what ``benchmarks/data/rsiagent/`` keeps),
``--headline`` a headline row (``docs/results.md``'s format, unit pages) of full vs none on fresh
instances. Pure: it reads events, never writes to a run.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rsi_workbench.experiments.rsiagent.report import LABEL, ORDER, Paths, _page, _paths, arms
from rsi_workbench.metrics.bootstrap import cluster_interval

SINGLE = ("drs_only", "brs_only")


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


def _binary(x: float) -> float:
    return 1.0 if float(x) == 1.0 else 0.0


def summary(path: Paths) -> dict[str, Any]:
    """Per arm, seed and page: the practised target's Binary and the fresh instances' Binary outcomes."""
    out: dict[str, Any] = {
        "arms": defaultdict(dict),
        "spent": defaultdict(dict),
        "calls": defaultdict(dict),
        "audit": {},
        "wall_s": {},
    }
    for a in arms(path):
        ab, seed = a["ablation"], str(a["seed"])
        pages: dict[str, Any] = {}
        for tid, ins in a["targets"].items():
            pages[_page(ins)] = {
                "practised": _binary(a["scores"].get(tid, 0.0)),
                "fresh": [_binary(x) for x in (a.get("fresh") or {}).get(tid, [])],
                # MiniWoB++'s partial reward: the raw reward mapped [-1, 1] → [0, 1], not binarised
                "fresh_partial": [float(x) for x in (a.get("fresh") or {}).get(tid, [])],
            }
        for e in _fresh_events(a):
            pages[e["page"]].setdefault("same_utterance_as_target", 0)
            pages[e["page"]]["same_utterance_as_target"] += bool(e.get("same_utterance_as_target"))
        out["arms"][ab][seed] = pages
        out["spent"][ab][seed] = a.get("learning_episodes_spent", a.get("episodes"))
        out["calls"][ab][seed] = (a.get("spend") or {}).get("verifier_calls")
        out["cap"] = a.get("learning_episodes_cap")
        out["wall_s"].setdefault(ab, {})[seed] = round(float(a.get("wall_s", 0.0)), 1)
        if a.get("audit"):
            out["audit"].setdefault(ab, {})[seed] = a["audit"]
    out["arms"], out["spent"], out["calls"] = dict(out["arms"]), dict(out["spent"]), dict(out["calls"])
    return _complete_seeds(out)


def _complete_seeds(out: dict[str, Any]) -> dict[str, Any]:
    """Keep the seeds every arm finished (a chunk's summary); the others are listed as incomplete."""
    seeds = [set(v) for v in out["arms"].values()]
    full = set.intersection(*seeds) if seeds else set()
    out["incomplete_seeds"] = sorted((set.union(*seeds) - full) if seeds else set(), key=int)
    for key in ("arms", "spent", "calls", "audit", "wall_s"):
        out[key] = {a: {sd: v for sd, v in per.items() if sd in full} for a, per in out[key].items()}
    return out


def _fresh_events(a: dict[str, Any]) -> list[dict[str, Any]]:
    """The arm's fresh-evaluation records (its run directory, when it is there)."""
    from rsi_workbench.domains.gui.rsiagent.matched import FRESH
    from rsi_workbench.records import Run

    d = Path(a.get("root", "")) / a.get("run_dir", "")
    if not a.get("fresh") or not (d / "events.jsonl").is_file():
        return []
    return [dict(e.payload) for e in Run.open(d).events(FRESH)]


def _per_page_seed(s: dict[str, Any], arm: str, what: str) -> dict[str, dict[str, float]]:
    """page -> seed -> the arm's Binary (the practised target's, or the mean over fresh instances)."""
    res: dict[str, dict[str, float]] = defaultdict(dict)
    for seed, pages in s["arms"].get(arm, {}).items():
        for page, v in pages.items():
            x = v[what]
            if isinstance(x, list):
                if not x:
                    continue
                x = _mean(x)
            res[page][seed] = float(x)
    return dict(res)


def paired(s: dict[str, Any], a: str, b: str, what: str = "fresh") -> tuple[float, float, float, int]:
    """(mean, lo, hi, n pages) of a − b: page-clustered bootstrap over per-(page, seed) differences."""
    pa, pb = _per_page_seed(s, a, what), _per_page_seed(s, b, what)
    clusters = {
        page: [pa[page][sd] - pb[page][sd] for sd in sorted(pa[page]) if sd in pb.get(page, {})]
        for page in pa
    }
    clusters = {k: v for k, v in clusters.items() if v}
    m, lo, hi = cluster_interval(clusters)
    return m, lo, hi, len(clusters)


def _arm_binary(s: dict[str, Any], arm: str, what: str) -> tuple[float, int]:
    vals: list[float] = []
    for pages in s["arms"].get(arm, {}).values():
        for v in pages.values():
            x = v.get(what, [])  # a summary made before fresh_partial existed has none
            vals.extend(x if isinstance(x, list) else [x])
    return _mean(vals), len(vals)


def pooled_audit(
    s: dict[str, Any], arms_: Sequence[str] = ("drs_only", "brs_only", "full")
) -> dict[str, Any]:
    """The audit pooled over the learning arms and seeds: confusion counts and agreement."""
    conf: dict[str, int] = defaultdict(int)
    agree = decided = episodes = 0
    for arm in arms_:
        for a in s["audit"].get(arm, {}).values():
            al = a["all"]
            episodes += al["episodes"]
            agree += al["agree"]
            decided += al["decided"]
            for k, v in al["confusion"].items():
                conf[k] += v
    return {
        "episodes": episodes,
        "decided": decided,
        "agree": agree,
        "agreement": agree / decided if decided else None,
        "confusion": dict(sorted(conf.items())),
    }


def verdict(s: dict[str, Any]) -> dict[str, Any]:
    """The pre-registered reading (module docstring)."""
    m, lo, hi, n_pages = paired(s, "full", "none")
    _, n_fresh = _arm_binary(s, "full", "fresh")
    singles = {a: _arm_binary(s, a, "fresh")[0] for a in SINGLE if a in s["arms"]}
    best = max(singles, key=lambda a: singles[a]) if singles else None
    bm, blo, bhi, _ = paired(s, "full", best) if best else (float("nan"),) * 3 + (0,)
    above_best = best is not None and bm > 0
    if m >= 0.20 and lo > 0 and n_fresh >= 100 and above_best:
        reading = "convincing"
    elif m < 0.05 and hi < 0.20:
        reading = "falsified"
    else:
        reading = "inconclusive"
    return {
        "full_minus_none": [m, lo, hi],
        "pages": n_pages,
        "full_fresh_evaluations": n_fresh,
        "best_single": best,
        "full_minus_best_single": [bm, blo, bhi],
        "reading": reading,
    }


def _pct(x: float) -> str:
    return "-" if x != x else f"{100 * x:.1f}"


def _ci(t: Sequence[float]) -> str:
    return f"{100 * t[0]:+.1f} pp [{100 * t[1]:+.1f}, {100 * t[2]:+.1f}]"


def tables(s: dict[str, Any]) -> str:
    """The arm table, the per-page table, the audit and the verdict as Markdown/text."""
    abl = [a for a in ORDER if a in s["arms"]]
    lines = [
        f"seeds: {sorted({int(sd) for a in abl for sd in s['arms'][a]})}; learning-episode cap: {s.get('cap')}"
        + (
            f"; seeds not finished by every arm (left out): {s['incomplete_seeds']}"
            if s.get("incomplete_seeds")
            else ""
        ),
        "",
        "| arm | practised Binary | fresh Binary | fresh Partial | fresh evaluations | learning episodes "
        "spent, per seed (browser episodes played) | verifier calls, per seed |",
        "|---|---|---|---|---|---|---|",
    ]
    for a in abl:
        pb, pn = _arm_binary(s, a, "practised")
        fb, fn = _arm_binary(s, a, "fresh")
        played = s["audit"].get(a, {})
        spent = ", ".join(
            f"{s['spent'][a][sd]}" + (f" ({played[sd]['all']['episodes']})" if sd in played else "")
            for sd in sorted(s["spent"][a], key=int)
        )
        fp, _ = _arm_binary(s, a, "fresh_partial")
        per_calls = s.get("calls", {}).get(a, {})
        calls = ", ".join(
            "-" if per_calls.get(sd) is None else str(per_calls[sd]) for sd in sorted(s["spent"][a], key=int)
        )
        lines.append(
            f"| {LABEL[a]} | {_pct(pb)} (n={pn}) | {_pct(fb)} | {_pct(fp)} | {fn} | {spent} | {calls} |"
        )
    lines += [
        "",
        "| page | " + " | ".join(f"{LABEL[a]} fresh" for a in abl) + " |",
        "|---|" + "---|" * len(abl),
    ]
    pages = sorted({p for a in abl for pg in s["arms"][a].values() for p in pg})
    for p in pages:
        cells = []
        for a in abl:
            xs = [x for pg in s["arms"][a].values() for x in pg.get(p, {}).get("fresh", [])]
            cells.append(_pct(_mean(xs)))
        lines.append(f"| {p} | " + " | ".join(cells) + " |")
    au = pooled_audit(s)
    v = verdict(s)
    same = sum(
        int(x.get("same_utterance_as_target", 0))
        for per in s["arms"].values()
        for pg in per.values()
        for x in pg.values()
    )
    agreement = "-" if au["agreement"] is None else f"{100 * au['agreement']:.1f}%"
    lines += [
        "",
        f"verifier audit (learning arms, every learning episode): {au['episodes']} episodes, "
        f"{au['decided']} with PASS/FAIL, agreement with the raw reward {agreement} "
        f"({au['agree']}/{au['decided']}); confusion {au['confusion']}",
        f"fresh evaluations whose utterance equals the practised target's (all arms): {same}",
        f"full − none, fresh Binary (page-clustered 95% CI, {v['pages']} pages): {_ci(v['full_minus_none'])}",
        f"full − none, practised Binary: {_ci(paired(s, 'full', 'none', 'practised')[:3])}",
    ]
    if v["best_single"]:
        lines.append(
            f"full − best single-stage arm ({LABEL[v['best_single']]}), fresh Binary: "
            f"{_ci(v['full_minus_best_single'])}"
        )
    lines.append(
        f"pre-registered reading: {v['reading']} ({v['full_fresh_evaluations']} fresh evaluations of full)"
    )
    return "\n".join(lines)


PREREGISTERED = {  # miniwob_pages10.yaml's header, as benchmarks/headline.py checks it
    "rule": (
        "convincing: full − none ≥ 20 pp on fresh instances with the page-clustered CI excluding 0 "
        "(over ≥ 100 fresh evaluations of full: checked by matched_report), AND full above the best "
        "single-stage arm (mean difference > 0 against DRS only and BRS only)"
    ),
    "min_lower": 0.0,
    "min_mean": 20.0,
    "also": [
        {"a": "full", "b": "drs_only", "mean_above": 0.0},
        {"a": "full", "b": "brs_only", "mean_above": 0.0},
    ],
}


def headline_row(s: dict[str, Any], **meta: Any) -> dict[str, Any]:
    """A headline row: full vs none, per page the fresh Binary of each seed (unit pages, bootstrap);
    the single-stage arms ride along for the pre-registered rule's second half (``PREREGISTERED``)."""
    row_arms = {
        a: {p: [v[sd] for sd in sorted(v, key=int)] for p, v in sorted(_per_page_seed(s, a, "fresh").items())}
        for a in ("full", "none", "drs_only", "brs_only")
        if a in s["arms"]
    }
    meta.setdefault("preregistered", PREREGISTERED)
    return {
        "kind": "paired",
        "compare": ["full", "none"],
        "unit": "pages",
        "interval": "bootstrap",
        "scale_factor": 100.0,
        "value_unit": "pp",
        "arms": row_arms,
        **meta,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (module docstring)."""
    ap = argparse.ArgumentParser(prog="python studies/rsiagent_matched_report/matched_report.py")
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--json", type=Path, help="write the compact summary here")
    ap.add_argument("--headline", type=Path, help="write the headline row (full vs none, fresh) here")
    ap.add_argument("--commit", default="", help="the commit the run's code came from (headline row)")
    ap.add_argument("--date", default="", help="the run's date (headline row)")
    ap.add_argument("--scale", default="headline", choices=["headline", "reduced", "smoke"])
    args = ap.parse_args(argv)
    s = summary(_paths(args.dirs))
    print(tables(s))
    if args.json:
        body = {**s, "audit_pooled": pooled_audit(s), "verdict": verdict(s)}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(body, separators=(",", ":"), sort_keys=True) + "\n")
    if args.headline:
        v = verdict(s)
        seeds = sorted({sd for a in s["arms"].values() for sd in a}, key=int)
        row = headline_row(
            s,
            system="RSIAgent",
            experiment=(
                f"MiniWoB++, `miniwob_pages10.yaml` ({v['pages']} pages, seeds {', '.join(seeds)}, "
                f"cap {s.get('cap')} learning episodes per arm): full RSI vs no RSI, Binary on 10 fresh instances "
                f"per page; pre-registered reading (full − none ≥ 20 pp, CI > 0, full > best single-stage arm, "
                f"`matched_report`): **{v['reading']}**"
            ),
            status="verified",
            scale=args.scale,
            config="configs/rsiagent/miniwob_pages10.yaml",
            command="rsi-workbench run configs/rsiagent/miniwob_pages10.yaml --out /work/runs_rsiagent35/pages10",
            commit=args.commit,
            date=args.date,
            values_from="python studies/rsiagent_matched_report/matched_report.py "
            + " ".join(str(d) for d in args.dirs),
            order=9.6,
            paper={
                "figure": "OSWorld Binary 37.80 → 42.68 (no RSI → RSIAgent)",
                "source": "rsiagent.md, 六、实验设置与主结果 (main table)",
                "comparable": False,
                "why": "different benchmark (OSWorld, LLM roles), here MiniWoB++ with built-in roles",
            },
        )
        args.headline.parent.mkdir(parents=True, exist_ok=True)
        args.headline.write_text(json.dumps(row, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
