"""What an adaptive arm's adaptations did, in words, for the code-repair report.

For each (adaptive, fixed) pair of arms in an experiment (``world_adaptive``/``world_fixed``,
``lm_adaptive``/``lm_fixed``, ``features_adaptive``/``features_fixed``), the report says either that
the adaptive arm never adapted or kept nothing (so it equals the fixed arm), or, per seed: where
reliability (eq. 10) fired, what was adapted (the refit and the examples it saw), which gate kept or
refused it (predictor gate: the proposed and current predictor's gate score on how many units; pair
gate: the utility of the current and proposed pair), and what it gained (the tasks whose hidden
all-pass differs between the two arms in that seed).

>>> from rsi_workbench.protocol.report import RunSummary
>>> fixed = RunSummary("f", 1, {"t": {"hidden_all_pass": False}}, {}, 0.0, None, None, finished=True)
>>> adaptive_vs_fixed_lines({"lm_adaptive": {0: fixed}, "lm_fixed": {0: fixed}})
['', 'lm_adaptive never triggered an adaptation: it equals lm_fixed in every run.']
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rsi_workbench.protocol.report import RunSummary, acceptance, paired_bootstrap

#: the (adaptive, fixed) arm pairs the report describes, when both ran
PAIRS = (
    ("world_adaptive", "world_fixed"),
    ("lm_adaptive", "lm_fixed"),
    ("features_adaptive", "features_fixed"),
)


def _rel(c: Mapping[str, Any]) -> str:
    r = c.get("reliability") or {}
    m = r.get("metrics", {})
    parts = [f"{k}={m[k]:.3f}" for k in ("brier", "ece") if isinstance(m.get(k), int | float)]
    return (
        f"{r.get('verdict', '?')} (n={r.get('n_predictions', '?')}{', ' if parts else ''}{', '.join(parts)})"
    )


def _gate(g: Mapping[str, Any]) -> str:
    if g["gate"] == "pair":
        score = "utility"
        cur, new = (g.get("current") or {}).get(score), (g.get("proposed") or {}).get(score)
    else:
        score = (g.get("thresholds") or {}).get("score", "brier")
        cur, new = (g.get("current") or {}).get(score), (g.get("proposed") or {}).get(score)
    nd = 3 if score == "utility" else 4
    what = (
        f"{score} {cur:.{nd}f} → {new:.{nd}f}"
        if isinstance(cur, int | float) and isinstance(new, int | float)
        else score
    )
    reasons = [str(r) for r in g.get("reasons") or []]
    verdict = "passed" if g["passed"] else "REFUSED" + (f": {'; '.join(reasons)}" if reasons else "")
    units = (
        (g.get("current") or {}).get("n_units", g.get("n_units")) if g["gate"] == "pair" else g.get("n_units")
    )
    return f"{g['gate']} gate {verdict} ({what}; {int(units) if units is not None else '?'} units)"


def cycle_story(c: Mapping[str, Any]) -> str | None:
    """One cycle of an adaptive run in words, or None when no adaptation was triggered."""
    trig = c.get("adaptation_trigger")
    if not trig or not trig.get("triggered"):
        return None
    gates = c.get("gates", {})
    steps = [_gate(gates[n]) for n in ("predictor", "pair") if n in gates and not gates[n].get("skipped")]
    ret = c.get("retain", {})
    kept = ret.get("proposed_predictor_version") is not None and ret.get("predictor_version") == ret.get(
        "proposed_predictor_version"
    )
    fate = (
        f"KEPT as {ret['predictor_version']}"
        if kept
        else ("rolled back" if ret.get("rolled_back") else f"refused, kept {ret.get('predictor_version')}")
    )
    return (
        f"    cycle {c['cycle']}: reliability {_rel(c)} fired → refit on {trig.get('n_adapt_examples', '?')} "
        f"executed candidates → {'; '.join(steps) or 'no gate ran'} → {fate}"
    )


def _solved(s: RunSummary) -> set[str]:
    return {t for t, r in s.final.items() if r.get("hidden_all_pass")}


def adaptive_vs_fixed_lines(summaries: Mapping[str, Mapping[int, RunSummary]]) -> list[str]:
    """The report's account of each (adaptive, fixed) pair of :data:`PAIRS` present in ``summaries``
    (method → seed → run summary); module doc."""
    lines: list[str] = []
    for adaptive, fixed in PAIRS:
        if adaptive not in summaries:
            continue
        runs = summaries[adaptive]
        trig = sum(acceptance(s)["adaptations"][0] for s in runs.values())
        acc = sum(acceptance(s)["predictor"][0] for s in runs.values())
        if trig == 0:
            lines += ["", f"{adaptive} never triggered an adaptation: it equals {fixed} in every run."]
            continue
        if acc == 0:
            lines += [
                "",
                f"{adaptive} triggered {trig} adaptation(s) but no adapted predictor passed its gates:"
                f" it kept the fixed predictor, so it equals {fixed}.",
            ]
            continue
        seeds_kept = sum(acceptance(s)["predictor"][0] > 0 for s in runs.values())
        diffs: dict[str, list[float]] = {}
        for seed, s in runs.items():
            f = summaries.get(fixed, {}).get(seed)
            if f is not None and f.finished and s.finished:
                for t, r in s.final.items():
                    if t in f.final:
                        d = float(bool(r.get("hidden_all_pass"))) - float(
                            bool(f.final[t].get("hidden_all_pass"))
                        )
                        diffs.setdefault(t, []).append(d)
        delta = ""
        if diffs:
            m, lo, hi = paired_bootstrap(diffs, seed=0)
            delta = f" {adaptive} − {fixed}: {100 * m:+.1f} pp hidden all-pass [{100 * lo:+.1f}, {100 * hi:+.1f}] (paired, task-clustered)."
        lines += [
            "",
            f"What {adaptive}'s adaptations did ({trig} triggered, {acc} kept; at least one kept in "
            f"{seeds_kept}/{len(runs)} seeds).{delta}",
        ]
        for seed, s in sorted(runs.items()):
            f = summaries.get(fixed, {}).get(seed)
            if f is not None and f.finished and s.finished:
                a_only, f_only = sorted(_solved(s) - _solved(f)), sorted(_solved(f) - _solved(s))
                gain = (
                    f"{len(_solved(s))} vs {len(_solved(f))} tasks solved (hidden all-pass)"
                    + (f"; gained {', '.join(a_only)}" if a_only else "")
                    + (f"; lost {', '.join(f_only)}" if f_only else "")
                )
            else:
                gain = f"{len(_solved(s))} tasks solved ({fixed} seed {seed} not finished)"
            lines.append(f"  seed {seed}: {adaptive} vs {fixed}: {gain}")
            lines += [x for c in s.cycles if (x := cycle_story(c)) is not None]
    return lines


__all__ = ["PAIRS", "adaptive_vs_fixed_lines", "cycle_story"]
