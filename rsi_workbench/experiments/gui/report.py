"""The ``gui`` experiment's report: per retained tier and method, test-episode success with 95%
intervals, mean actions, wrong submits, repeated clicks and time per episode, the world-based control
(and the policy-only arm) side by side, the paper's figures for reference, per-seed success at every
tier with seed-level paired t-intervals (the seed is the randomised unit; the pooled-episode intervals
of the first table overstate the precision), where tier 0 came from (an ``initial_pair``), and every
cycle's reliability verdict, triggers, gate decisions and retained pair. Pure: it reads the run's
events and prints, never writes.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from rsi_workbench.domains.gui.outcomes import (  # noqa: F401  (re-exported: the report's readers)
    episode_economy,
    paired_seed_difference,
    seed_auc,
    seed_success,
    tier_auc,
    tier_gains,
)
from rsi_workbench.metrics.bootstrap import interval, t_interval
from rsi_workbench.protocol.loop import effective_events
from rsi_workbench.records import Run

# RSI-Anything's click-checkboxes success per tier 0/1/2 (the control is the paper's "world-based" agent)
PAPER_TASK = "click-checkboxes"
PAPER_SUCCESS: dict[str, list[float]] = {"rsi": [0.51, 0.79, 0.99], "world_based": [0.49, 0.96, 0.98]}
PAPER_NOTE = (
    "paper (RSI-Anything, click-checkboxes, 100 test instances): success 51%/79%/99% (control 49%/96%/98%), "
    "mean actions 5.30/2.93/3.21, wrong submits 9/21/1, repeated clicks 237 -> 0"
)


def tier_rows(path: str | Path) -> list[dict[str, Any]]:
    """One row per (method, tier): the test-episode metrics pooled over seeds, with 95% intervals."""
    run = Run.open(path)
    cfg = run.config
    by_pair: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in run.events("test_episode"):
        by_pair[e.payload["pair"]].append(e.payload)
    tiers: dict[tuple[str, int], list[str]] = defaultdict(list)
    for e in run.events("tier"):
        tiers[(e.payload["method"], e.payload["tier"])].append(e.payload["pair"])
    n_boot = int(cfg.get("bootstrap", 2000))
    rows = []
    for (method, tier), pairs in sorted(
        tiers.items(), key=lambda kv: (cfg["methods"].index(kv[0][0]), kv[0][1])
    ):
        eps = [p for key in pairs for p in by_pair.get(key, [])]
        ok = [p for p in eps if not p["infra_failure"]]
        succ = np.array([float(p["success"]) for p in ok])
        acts = np.array([float(p["n_actions"]) for p in ok])
        secs = np.array([float(p["elapsed_s"]) for p in ok])
        rows.append(
            {
                "method": method,
                "tier": tier,
                "episodes": len(ok),
                "infra_failures": len(eps) - len(ok),
                "success": float(succ.mean()) if len(ok) else float("nan"),
                "success_ci": interval(succ, n_resamples=n_boot),
                "mean_actions": float(acts.mean()) if len(ok) else float("nan"),
                "mean_actions_ci": interval(acts, n_resamples=n_boot),
                "wrong_submits": sum(bool(p["wrong_submit"]) for p in ok),
                "repeated_clicks": sum(int(p["repeated_clicks"]) for p in ok),
                "time_s": float(secs.mean()) if len(ok) else float("nan"),
                "time_s_ci": interval(secs, n_resamples=n_boot),
                "pairs": sorted(set(pairs)),
            }
        )
    return rows


def auc_markdown(path: str | Path, control: str = "world_based") -> str:
    """Area under the tier curve per method (mean over seeds) and each method − ``control`` with its
    seed-level paired 95% t-interval."""
    per = seed_success(path)
    auc = seed_auc(per)
    if control not in auc:
        return ""
    methods = [m for m in Run.open(path).config["methods"] if m in auc]
    lines = ["area under the tier curve (mean success over tiers 0..G, per seed; mean over seeds):"]
    for m in methods:
        vals = list(auc[m].values())
        lines.append(f"  {m}: {100 * sum(vals) / len(vals):.1f}% (seeds {len(vals)})")
    for m in methods:
        if m == control:
            continue
        diffs = [auc[m][s] - auc[control][s] for s in sorted(auc[m].keys() & auc[control].keys())]
        mean, lo, hi, n = t_interval(diffs)
        ci = f" [{100 * lo:+.1f}, {100 * hi:+.1f}]" if lo == lo else ""
        lines.append(f"  {m} − {control}: {100 * mean:+.1f} pp{ci} (n={n} seeds)")
    return "\n".join(lines)


def economy_markdown(path: str | Path) -> str:
    """Per method and seed, each tier's mean actions per test episode, wrong submits and repeated
    clicks (the paper's action economy: 5.30 → 3.21 actions, repeated clicks 237 → 0)."""
    eco = episode_economy(path)
    methods = [m for m in Run.open(path).config["methods"] if m in eco]
    n_tiers = 1 + max((t for m in eco.values() for ts in m.values() for t in ts), default=-1)
    if not methods or n_tiers < 1:
        return ""
    lines = [
        "action economy per seed (mean actions / wrong submits / repeated clicks per tier):",
        "",
        "| method | seed | " + " | ".join(f"tier {t}" for t in range(n_tiers)) + " |",
        "|---|---|" + "---|" * n_tiers,
    ]
    for m in methods:
        for s in sorted(eco[m]):
            cells = []
            for t in range(n_tiers):
                r = eco[m][s].get(t)
                cells.append(
                    f"{r['mean_actions']:.2f} / {r['wrong_submits']:.0f} / {r['repeated_clicks']:.0f}"
                    if r
                    else "-"
                )
            lines.append(f"| {m} | {s} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def seed_markdown(path: str | Path) -> str:
    """Per-seed success at every tier, the seed-level paired t-intervals of rsi − each other method
    at every tier, and per tier step the seeds where rsi rose."""
    per = seed_success(path)
    methods = [m for m in Run.open(path).config["methods"] if m in per]
    n_tiers = 1 + max((t for m in per.values() for ts in m.values() for t in ts), default=-1)
    if not methods or n_tiers < 1:
        return ""
    lines = ["| method | seed | " + " | ".join(f"tier {t}" for t in range(n_tiers)) + " |"]
    lines.append("|---|---|" + "---|" * n_tiers)
    for m in methods:
        for s in sorted(per[m]):
            cells = [f"{100 * per[m][s][t]:.0f}%" if t in per[m][s] else "-" for t in range(n_tiers)]
            lines.append(f"| {m} | {s} | " + " | ".join(cells) + " |")
    if "rsi" in per and len(methods) > 1:
        lines += ["", "seed-level paired difference, rsi − other (pp, mean [95% t-interval over seeds]):"]
        for m in methods:
            if m == "rsi":
                continue
            cells = []
            for t in range(n_tiers):
                mean, lo, hi, n = paired_seed_difference(per, "rsi", m, t)
                ci = f" [{100 * lo:+.1f}, {100 * hi:+.1f}]" if lo == lo else ""
                cells.append(f"tier {t}: {100 * mean:+.1f}{ci} (n={n})")
            lines.append(f"  rsi − {m}: " + "; ".join(cells))
    if "rsi" in per:
        steps = [
            f"{g}→{g + 1}: rose in {r} of {n} (at 100% before: {c})"
            for g, r, c, n in tier_gains(per["rsi"], n_tiers)
        ]
        if steps:
            lines.append("  rsi per seed, tier " + "; ".join(steps))
    return "\n".join(lines)


def initial_pair_text(path: str | Path) -> str:
    """Where tier 0 came from: the untrained pair, or the ``initial_pair`` event's pretraining."""
    run = Run.open(path)
    ev = run.events("initial_pair")
    if not ev:
        if (run.config.get("policy") or {}).get("kind") == "llm":
            return "tier 0: the language-model θ with the untrained world model (zero weights)"
        return "tier 0: the untrained pair (zero weights)"
    p = ev[0].payload
    st = p["settings"]
    gens = ", ".join(
        f"gen {g['generation']} solved {g['episodes_solved']}/{g['episodes']} -> {g['policy_version']} + {g['predictor_version']}"
        for g in p["generations"]
    )
    return (
        f"tier 0: pretrained on {p['task']} ({st['generations']} generation(s) of {st['train_episodes']} training + "
        f"{st['gate_episodes']} gate episodes, seed {st['seed']}; {gens}); "
        f"one pair for every seed: {p['policy_version']} + {p['predictor_version']}"
    )


def cycle_rows(path: str | Path) -> list[dict[str, Any]]:
    """Every protocol cycle: reliability verdict, triggers, gate decisions and the retained pair."""
    run = Run.open(path)
    out = []
    for g in run.events("generation_finished"):
        p = g.payload
        sub = Run.open(Path(path) / p["run_dir"])
        per: dict[int, dict[str, Any]] = defaultdict(dict)
        for e in effective_events(sub):
            k, d = e.cycle, e.payload
            if k is None:
                continue
            row = per[k]
            if e.kind == "reliability":
                row["reliability"] = (
                    f"{d['verdict']} ({d['version']}, n={d['n_predictions']}, brier={_f(d['metrics'].get('brier'))})"
                )
            elif e.kind == "adaptation_trigger":
                row["adapt"] = d["triggered"]
            elif e.kind == "policy_trigger":
                row["policy_update"] = d["triggered"]
            elif e.kind == "gate":
                row.setdefault("gates", []).append(
                    f"{d['gate']}:{'skip' if d['skipped'] else ('pass' if d['passed'] else 'fail')}"
                )
            elif e.kind == "retain":
                row["retained"] = f"{d['policy_version']} + {d['predictor_version']}" + (
                    " (rolled back)" if d["rolled_back"] else ""
                )
            elif e.kind == "cycle_finished":
                rep = d["report"]
                row["active"], row["executed"], row["solved"] = rep["active"], rep["executed"], rep["solved"]
        for k in sorted(per):
            out.append(
                {
                    "seed": p["seed"],
                    "method": p["method"],
                    "generation": p["generation"],
                    "cycle": k,
                    **per[k],
                }
            )
    return out


def _f(x: Any, nd: int = 3) -> str:
    return "-" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.{nd}f}"


def _ci(x: float, ci: tuple[float, float], pct: bool = False, nd: int = 2) -> str:
    if pct:
        return f"{100 * x:.0f}% [{100 * ci[0]:.0f}, {100 * ci[1]:.0f}]"
    return f"{x:.{nd}f} [{ci[0]:.{nd}f}, {ci[1]:.{nd}f}]"


def markdown(path: str | Path) -> str:
    """The tier table (markdown), the control side by side and (click-checkboxes) the paper's figures."""
    rows = tier_rows(path)
    task = Run.open(path).config["task"]
    paper = task == PAPER_TASK
    lines = [
        "| method | tier | episodes | success [95% CI] | mean actions [95% CI] | wrong submits | repeated clicks | time/episode s [95% CI] |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['method']} | {r['tier']} | {r['episodes']}"
            + (f" (+{r['infra_failures']} infra)" if r["infra_failures"] else "")
            + f" | {_ci(r['success'], r['success_ci'], pct=True)} | {_ci(r['mean_actions'], r['mean_actions_ci'])}"
            f" | {r['wrong_submits']} | {r['repeated_clicks']} | {_ci(r['time_s'], r['time_s_ci'])} |"
        )
    by = {(r["method"], r["tier"]): r for r in rows}
    n_tiers = max((r["tier"] for r in rows), default=-1) + 1
    po = any(r["method"] == "policy_only" for r in rows)
    lines += [
        "",
        "| tier | rsi success | world-based control success |"
        + (" policy-only success |" if po else "")
        + " paper rsi | paper control |",
        "|---|---|---|---|---|" + ("---|" if po else ""),
    ]
    for t in range(n_tiers):
        a, b, c = by.get(("rsi", t)), by.get(("world_based", t)), by.get(("policy_only", t))
        # (an oracle arm appears in the tier table above and the tier-curve areas below)
        pa = PAPER_SUCCESS["rsi"][t] if t < 3 and paper else None
        pb = PAPER_SUCCESS["world_based"][t] if t < 3 and paper else None
        lines.append(
            f"| {t} | {_ci(a['success'], a['success_ci'], pct=True) if a else '-'}"
            f" | {_ci(b['success'], b['success_ci'], pct=True) if b else '-'}"
            + (f" | {_ci(c['success'], c['success_ci'], pct=True) if c else '-'}" if po else "")
            + f" | {f'{100 * pa:.0f}%' if pa is not None else '-'} | {f'{100 * pb:.0f}%' if pb is not None else '-'} |"
        )
    lines.append("\n" + (PAPER_NOTE if paper else f"(the paper reports no figures for {task})"))
    return "\n".join(lines)


def report(path: str | Path) -> str:
    """Print the tier table, the control side by side, and every cycle's decisions."""
    run = Run.open(path)
    cfg = run.config
    head = (
        f"GUI experiment {Path(path).name}: task {cfg['task']}, methods {cfg['methods']}, seeds {cfg['seeds']}, "
        f"{cfg['generations']} generation(s) of {cfg['train_episodes']} training + {cfg['gate_episodes']} gate "
        f"episodes, {cfg['test_instances']} test instances, caps {cfg['max_actions']} actions / {cfg['wall_clock_s']} s\n"
        "success = the page's raw reward is 1 after a submit (every checkbox as asked), E0; "
        "world_based = world model updated, policy fixed; policy_only = policy updated, world model fixed\n"
        + initial_pair_text(path)
    )
    inst = run.events("instances")
    if inst:
        d = inst[0].payload
        head += (
            f"\ntest instances disjoint by content (utterance + initial DOM hash) from "
            f"{sum(len(v) for v in d['episodes'].values())} training/gate episodes (asserted); "
            f"{len(d['skipped'])} drawn episode(s) skipped as duplicates"
        )
    parts = [head, "", markdown(path), "", "per seed (the randomised unit):", "", seed_markdown(path)]
    for extra in (auc_markdown(path), economy_markdown(path)):
        if extra:
            parts += ["", extra]
    parts += ["", "cycles (reliability verdict, triggers, gates, retained pair):"]
    for c in cycle_rows(path):
        parts.append(
            f"  seed {c['seed']} {c['method']:<11} gen {c['generation']} cycle {c['cycle']}: "
            f"active {c.get('active', '-')}, executed {c.get('executed', '-')}; reliability {c.get('reliability', '-')}; "
            f"u_W={int(bool(c.get('adapt')))} u_pi={int(bool(c.get('policy_update')))}; "
            f"gates {' '.join(c.get('gates', []))}; retained {c.get('retained', '-')}"
        )
    if not run.events("experiment_finished"):
        parts.append("\n(experiment not finished: resume with `rsi-workbench resume DIR`)")
    return "\n".join(parts)


def report_json(path: str | Path) -> str:
    """The tier rows as JSON (for notebooks and tests)."""
    return json.dumps(tier_rows(path), default=str)
