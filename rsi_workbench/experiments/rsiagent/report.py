"""The ``rsiagent`` experiment's report: the main table (Partial/Binary per target set vs no-RSI),
recursion curves (target score after each committed step) and the four-way ablation with each arm's
episode budget. Pure: it reads the experiment's events and the arms' run directories, never writes.

Partial = 100 * mean s_i and Binary = 100 * mean 1{s_i = 1} over the targets of a set (s_i: MiniWoB++'s
raw reward mapped from [-1, 1] to [0, 1], from the frozen evaluation), averaged over seeds (± sd).
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rsi_workbench.records import Run

ORDER = ("none", "drs_only", "brs_only", "full")
LABEL = {"none": "no RSI", "drs_only": "DRS only", "brs_only": "BRS only", "full": "full RSI"}


Paths = str | Path | Sequence[str | Path]


def _paths(path: Paths) -> list[Path]:
    return [Path(path)] if isinstance(path, str | Path) else [Path(p) for p in path]


def arms(path: Paths) -> list[dict[str, Any]]:
    """Every finished arm's payload (ablation, seed, scores, episodes, ...), pooled over experiment
    directories of the same config apart from seeds (the first directory's copy of an arm wins)."""
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for p in _paths(path):
        for e in Run.open(p).events("arm_finished"):
            out.setdefault((e.payload["ablation"], e.payload["seed"]), {**e.payload, "root": str(p)})
    return sorted(out.values(), key=lambda a: (a["seed"], ORDER.index(a["ablation"])))


def _page(instruction: str) -> str:
    return instruction.split(":", 1)[1].strip().split(";")[0].strip() if ":" in instruction else instruction


def target_sets(arm: dict[str, Any]) -> dict[str, list[str]]:
    """'all' and one set per page: target ids."""
    sets: dict[str, list[str]] = defaultdict(list)
    for tid, ins in arm["targets"].items():
        sets["all"].append(tid)
        sets[_page(ins)].append(tid)
    return dict(sets)


def _pb(scores: dict[str, float], ids: list[str]) -> tuple[float, float]:
    s = [float(scores[i]) for i in ids if i in scores]
    if not s:
        return float("nan"), float("nan")
    return 100 * sum(s) / len(s), 100 * sum(x == 1.0 for x in s) / len(s)


def _ms(xs: list[float]) -> str:
    xs = [x for x in xs if x == x]
    if not xs:
        return "-"
    return f"{statistics.mean(xs):.1f}" + (f" ± {statistics.stdev(xs):.1f}" if len(xs) > 1 else "")


def set_rows(path: Paths) -> list[dict[str, Any]]:
    """Per (target set, ablation): Partial and Binary per seed."""
    rows: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(
        lambda: {"partial": [], "binary": [], "seeds": []}
    )
    for a in arms(path):
        for name, ids in target_sets(a).items():
            p, b = _pb(a["scores"], ids)
            r = rows[(name, a["ablation"])]
            r["partial"].append(p)
            r["binary"].append(b)
            r["seeds"].append(a["seed"])
    return [{"set": k[0], "ablation": k[1], **v} for k, v in rows.items()]


def main_table(path: Paths) -> str:
    rows = {(r["set"], r["ablation"]): r for r in set_rows(path)}
    sets = list(dict.fromkeys(r[0] for r in rows))
    sets = ["all"] + [s for s in sets if s != "all"]
    best = "full" if any(k[1] == "full" for k in rows) else None
    lines = [
        "| target set | targets/seed | seeds | no-RSI Partial | no-RSI Binary | RSIAgent (full) Partial | RSIAgent (full) Binary |",
        "|---|---|---|---|---|---|---|",
    ]
    per_seed = {s: len(ids) for a in arms(path)[:1] for s, ids in target_sets(a).items()}
    for s in sets:
        base, full = rows.get((s, "none")), rows.get((s, best)) if best else None
        lines.append(
            f"| {s} | {per_seed.get(s, '-')} | {len((base or full or {'seeds': []})['seeds'])} "
            f"| {_ms(base['partial']) if base else '-'} | {_ms(base['binary']) if base else '-'} "
            f"| {_ms(full['partial']) if full else '-'} | {_ms(full['binary']) if full else '-'} |"
        )
    return "\n".join(lines)


def ablation_table(path: Paths) -> str:
    rows = {(r["set"], r["ablation"]): r for r in set_rows(path)}
    abl = [a for a in ORDER if any(k[1] == a for k in rows)]
    sets = ["all"] + sorted({k[0] for k in rows} - {"all"})
    lines = [
        "| target set | " + " | ".join(f"{LABEL[a]} Partial / Binary" for a in abl) + " |",
        "|---|" + "---|" * len(abl),
    ]
    for s in sets:
        cells = [
            f"{_ms(rows[(s, a)]['partial'])} / {_ms(rows[(s, a)]['binary'])}" if (s, a) in rows else "-"
            for a in abl
        ]
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    budget: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for a in arms(path):
        b = budget[a["ablation"]]
        b["episodes"].append(a["episodes"])
        b["practice"].append(a["practice_projects"])
        b["brs"].append(a["brs_projects"])
        b["waves"].append(a["waves"])
        b["eval"].append(a["n_targets"])
        b["wall"].append(a["wall_s"])
        b["bytes"].append(a["memory_stats"].get("n_bytes", 0))
    for key, label in (
        ("episodes", "learning episodes (practice + DRS target tests)"),
        ("practice", "practice projects (BRS + DRS)"),
        ("brs", "BRS projects"),
        ("waves", "committed units (waves + DRS steps)"),
        ("eval", "evaluation episodes"),
        ("bytes", "frozen memory bytes"),
        ("wall", "wall time per arm, s"),
    ):
        lines.append(
            f"| {label} | " + " | ".join(_ms([float(x) for x in budget[a][key]]) for a in abl) + " |"
        )
    return "\n".join(lines)


def curve_rows(path: Paths) -> list[dict[str, Any]]:
    """Recursion curves: per arm, the Partial score of the targets after each committed step."""
    out = []
    for a in arms(path):
        sub = Run.open(Path(a["root"]) / a["run_dir"])
        by_wave: dict[int, list[float]] = defaultdict(list)
        phase: dict[int, str] = {}
        for e in sub.events("memory_curve_point"):
            by_wave[int(e.payload["wave"])].append(float(e.payload["score"]))
            phase[int(e.payload["wave"])] = e.payload.get("phase", "")
        pts = [(w, phase[w], 100 * sum(v) / len(v)) for w, v in sorted(by_wave.items())]
        out.append({"ablation": a["ablation"], "seed": a["seed"], "points": pts, "final": a["partial"]})
    return out


SCORE_TEXT = {
    "miniwob": "MiniWoB++ raw reward mapped to [0, 1]",
    "code_repair": "the fraction of the task's hidden tests passed",
}


def _roles_text(roles: Any) -> str:
    """``builtin``, or which roles a model drives (``actor: transformers:default``...)."""
    if isinstance(roles, str):
        return roles
    ms = {r: v["model"] for r, v in roles.items() if isinstance(v, dict) and "model" in v}
    return (
        "model " + ", ".join(f"{r}: {m['backend']}:{m['name']}" for r, m in ms.items()) + " (others builtin)"
    )


def report(path: Paths) -> str:
    """Print the main table, the ablation with episode budgets, and the recursion curves (of one
    experiment directory, or pooled over several of the same config apart from seeds)."""
    paths = _paths(path)
    cfg = Run.open(paths[0]).config
    env = cfg["environment"]
    pages = ", ".join(f"{t['page']} x{t['count']}" if isinstance(t, dict) else str(t) for t in env["targets"])
    eng = cfg["engine"]
    seeds = sorted({a["seed"] for a in arms(paths)})
    parts = [
        f"RSIAgent experiment {', '.join(p.name for p in paths)}: {env['kind']} targets {pages}; roles "
        f"{_roles_text(cfg['roles'])}; ablations {cfg['ablations']}; seeds with finished arms {seeds}",
        f"engine: project_budget {eng['project_budget']}, max_parallel {eng['max_parallel']}, max_waves "
        f"{eng['max_waves']}, max_verification_cycles {eng['max_verification_cycles']}, max_drs_steps "
        f"{eng['max_drs_steps']}, stop_policy {eng['stop_policy']}, curriculum_memory {eng['curriculum_memory']}, "
        f"shingle_n {eng['shingle_n']}",
        f"Partial = 100·mean s_i, Binary = 100·mean 1{{s_i = 1}}; s_i = {SCORE_TEXT.get(env['kind'], 'the official score')} in "
        "frozen evaluation (one fresh-actor attempt per target); mean ± sd over seeds",
        "",
        "Main table (per target set, vs the no-RSI baseline: same actor, empty memory):",
        main_table(paths),
        "",
        "Ablation (Partial / Binary per target set) and each arm's episode budget (mean ± sd over seeds):",
        ablation_table(paths),
        "",
        "Recursion curves (target Partial after each committed step: wave/phase -> score; 'final' = frozen evaluation):",
    ]
    for c in curve_rows(paths):
        pts = ", ".join(f"{w}{ph[:1]}:{s:.0f}" for w, ph, s in c["points"]) or "(no probes in this arm)"
        parts.append(
            f"  {LABEL.get(c['ablation'], c['ablation']):<9} seed {c['seed']}: {pts}; final {c['final']:.0f}"
        )
    for p in paths:
        run = Run.open(p)
        for e in run.events("arm_stopped"):
            parts.append(
                f"\n{p.name}: arm {e.payload['ablation']} seed {e.payload['seed']} stopped: {e.payload.get('stop_reason')}"
            )
        if not run.events("experiment_finished"):
            parts.append(f"\n({p.name}: experiment not finished: resume with `rsi-workbench resume {p}`)")
    return "\n".join(parts)


def report_json(path: Paths) -> str:
    """The per-set rows and curves as JSON (for notebooks and tests)."""
    return json.dumps({"sets": set_rows(path), "curves": curve_rows(path)}, default=str)
