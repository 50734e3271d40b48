"""The credit-information table and its pre-registered verdict, from per-(arm, direction, seed) rows.

The quality figure is ``l1_weighted_mean``: per dev campaign, the mean of the ``weighted`` column of
the campaign report's "level 1 — hypothesis profiles" table (``assess.profile_table``, DFM-Bench
weighted profile, 1-10) over the campaign's hypothesis versions. Comparisons are paired by
(direction, seed): the difference of two arms per pair, its mean and a percentile bootstrap 95%
interval over pairs (2,000 resamples, seed from the config; ``metrics.bootstrap.interval``).

Pre-registered rule (also in ``configs/discovery/credit_information.yaml``'s header):
*convincing* when credit − uniform ≥ +0.3 with its interval above 0, credit − shuffled > 0 with its
interval above 0, and, against uniform, the restart share falls and the evolve + repair share rises
(paired means); *falsified* when the credit − shuffled interval lies within ±0.3 (credit ≈
placebo); otherwise *inconclusive*. Fewer than 3 pairs give no interval and no verdict.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

from rsi_workbench.domains.tabular.credit import omega_diagnostics, policy_agreement

MIN_GAIN = 0.3  # pre-registered: credit − uniform on l1_weighted_mean
EQUIVALENCE = 0.3  # pre-registered: |credit − shuffled| interval within this is "credit ≈ placebo"
QUALITY = "l1_weighted_mean"


def paired(rows: list[dict[str, Any]], a: str, b: str, column: str) -> list[float]:
    """Per-(direction, seed) differences a − b of ``column`` (pairs present in both arms only)."""
    by = {(r["arm"], r["direction"], r["seed"]): float(r[column]) for r in rows}
    keys = sorted({(d, s) for (arm, d, s) in by if arm == a} & {(d, s) for (arm, d, s) in by if arm == b})
    return [by[(a, d, s)] - by[(b, d, s)] for d, s in keys]


def mean_ci(diffs: list[float], seed: int = 0) -> tuple[float, float, float, int]:
    """Mean of paired differences and its percentile bootstrap 95% interval (NaN below 3 pairs)."""
    from rsi_workbench.metrics.bootstrap import interval

    if not diffs:
        return math.nan, math.nan, math.nan, 0
    m = statistics.fmean(diffs)
    if len(diffs) < 3:
        return m, math.nan, math.nan, len(diffs)
    lo, hi = interval(diffs, n_resamples=2000, seed=seed)
    return m, lo, hi, len(diffs)


def _with_evolve_repair(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**r, "share_evolve_repair": r["share_evolve"] + r["share_repair"]} for r in rows]


def verdict(rows: list[dict[str, Any]], seed: int = 0) -> tuple[str, list[str]]:
    """The pre-registered verdict and the lines that justify it."""
    rows = _with_evolve_repair(rows)
    cu = mean_ci(paired(rows, "credit", "uniform", QUALITY), seed)
    cs = mean_ci(paired(rows, "credit", "shuffled", QUALITY), seed)
    restart = mean_ci(paired(rows, "credit", "uniform", "share_restart"), seed)
    er = mean_ci(paired(rows, "credit", "uniform", "share_evolve_repair"), seed)
    lines = [
        f"credit − uniform ({QUALITY}): {_fmt(cu)}  [rule: mean ≥ +{MIN_GAIN}, interval above 0]",
        f"credit − shuffled ({QUALITY}): {_fmt(cs)}  [rule: interval above 0; falsified if within ±{EQUIVALENCE}]",
        f"credit − uniform (restart share): {_fmt(restart)}  [rule: mean < 0]",
        f"credit − uniform (evolve + repair share): {_fmt(er)}  [rule: mean > 0]",
    ]
    if min(cu[3], cs[3]) < 3:
        return "no verdict (fewer than 3 pairs)", lines
    if cs[1] >= -EQUIVALENCE and cs[2] <= EQUIVALENCE:
        return "falsified (credit ≈ shuffled placebo)", lines
    ok = cu[0] >= MIN_GAIN and cu[1] > 0 and cs[0] > 0 and cs[1] > 0 and restart[0] < 0 and er[0] > 0
    return ("convincing" if ok else "inconclusive (rule not met, placebo not equivalent)"), lines


def _fmt(x: tuple[float, float, float, int]) -> str:
    m, lo, hi, n = x
    if n == 0:
        return "no pairs"
    ci = "no interval" if math.isnan(lo) else f"[{lo:+.3f}, {hi:+.3f}]"
    return f"{m:+.3f} {ci} (n={n} pairs)"


def arm_table(rows: list[dict[str, Any]]) -> str:
    """Markdown: per arm, the mean over (direction, seed) of quality, shares and seconds per episode."""
    arms = list(dict.fromkeys(r["arm"] for r in rows))
    out = [
        f"| arm | pairs | {QUALITY} | best_weighted | restart | evolve | repair | crossover | s/episode |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for a in arms:
        rs = [r for r in rows if r["arm"] == a]

        def m(k: str, rs: list[dict[str, Any]] = rs) -> float:
            return statistics.fmean(float(r[k]) for r in rs)

        out.append(
            f"| {a} | {len(rs)} | {m(QUALITY):.3f} | {m('best_weighted'):.3f} | {m('share_restart'):.0%} | "
            f"{m('share_evolve'):.0%} | {m('share_repair'):.0%} | {m('share_crossover'):.0%} | "
            f"{m('s_per_episode'):.2f} |"
        )
    return "\n".join(out)


def table(rows: list[dict[str, Any]], seed: int = 0) -> str:
    """The arm table, the paired comparisons and the pre-registered verdict."""
    v, lines = verdict(rows, seed)
    return "\n".join([arm_table(rows), "", *lines, "", f"pre-registered verdict: {v}"])


def run_rows(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(dev rows, training rows) recorded by a ``discovery_credit`` run."""
    from rsi_workbench.records import Run

    run = Run.open(path)
    dev = [e.payload["row"] for e in run.events("credit_dev_campaign")]
    train = [e.payload["row"] for e in run.events("credit_train_campaign")]
    return dev, train


def run_report(path: Path) -> str:
    """The report of a ``discovery_credit`` run (done so far: a chunked run reports its progress)."""
    from rsi_workbench.records import Run

    run = Run.open(path)
    dev, train = run_rows(path)
    lines = [f"DiscoveryRSI credit information — {path}", ""]
    if train:
        s = statistics.fmean(r["s_per_episode"] for r in train)
        lines.append(
            f"training: {len(train)} behaviour campaigns, {sum(r['episodes'] for r in train)} episodes, "
            f"{s:.2f} s per episode, mean {QUALITY} {statistics.fmean(r[QUALITY] for r in train):.3f}"
        )
    fit = run.events("theta_plus_policies")
    if fit:
        p = fit[-1].payload
        lines.append(
            f"theta+ fits: {p['n_decisions']} decisions ({p['omega_positive']} with omega > 0), "
            f"operations {p['operations']}, policies "
            + ", ".join(f"{a} {sha[:12]}" for a, sha in p["policies"].items())
        )
        lines.append(f"LoRA: {p['lora']}")
        lines += diagnostics_lines(omega_diagnostics(path))
        lines += agreement_lines(policy_agreement(path))
    if dev:
        cfg_seed = int(run.config.get("seed", 0))
        lines += ["", table(dev, cfg_seed)]
    return "\n".join(lines)


def diagnostics_lines(d: dict[str, Any] | None) -> list[str]:
    """The omega diagnostics as report lines."""
    if not d:
        return []
    return [
        f"omega over {d['decisions']} behaviour decisions: {d['omega_positive']} positive, range "
        f"{d['omega_min_positive']:.4f}-{d['omega_max']:.4f}; Spearman rho(omega, episode) "
        f"{d['rho_omega_episode']:+.2f}, rho(omega, mean weighted profile its episode published) "
        f"{d['rho_omega_quality']:+.2f} pooled, {d['rho_omega_quality_within_campaign']:+.2f} mean within "
        f"{d['campaigns_with_within_rho']} campaigns"
    ]


def agreement_lines(d: dict[str, Any] | None) -> list[str]:
    """The policy agreement as one report line."""
    if not d:
        return []
    return [
        "theta+ policies on the training states: "
        + "; ".join(
            f"{k}: argmax agrees {v['argmax_agreement']:.0%}, mean TV {v['mean_tv']:.3f}"
            for k, v in d.items()
        )
    ]
