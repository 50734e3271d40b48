"""Results of protocol runs, derived only from their effective events (pure functions of records).

:func:`summarize_run` gives one run's final audit, online feedback per task, prediction quality on
metrics-only audit outcomes, and every cycle's reliability verdict, adaptation trigger, gate
decisions and retention. :func:`paired_bootstrap` gives a paired difference with a 95% bootstrap
interval clustered by task. :func:`format_experiment` prints the experiment table.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rsi_workbench.metrics.bootstrap import cluster_interval
from rsi_workbench.protocol.decisions import UtilitySpec, utility
from rsi_workbench.protocol.loop import effective_events
from rsi_workbench.protocol.metrics import brier, metrics_version_of, ranking_accuracy
from rsi_workbench.records import Run


@dataclass
class RunSummary:
    """One run (one method, one seed) as numbers."""

    path: str
    n_tasks: int
    final: dict[str, dict[str, Any]]  # task -> final audit row
    online_calls: dict[str, float]  # task -> external feedback spent
    update_compute: float
    ranking_accuracy: float | None
    brier: float | None
    cycles: list[dict[str, Any]] = field(default_factory=list)
    discarded_attempts: int = 0
    finished: bool = False

    def rate(self, key: str) -> float:
        vals = [float(bool(r.get(key))) for r in self.final.values()]
        return sum(vals) / len(vals) if vals else float("nan")

    @property
    def calls_per_task(self) -> float:
        return sum(self.online_calls.values()) / self.n_tasks if self.n_tasks else float("nan")


def summarize_run(
    path: str | Path, utility_spec: UtilitySpec | None = None, ranking_terms: str = "utility_terms"
) -> RunSummary:
    """Summarize a run directory from its effective events (cut-off cycle attempts are ignored).

    Ranking accuracy orders each proposal group's candidates by predicted utility against the
    observed utility of the audit outcome field ``ranking_terms`` (e.g. all tests, for code repair).
    """
    run = Run.open(path)
    evs = effective_events(run)
    opened = next(e for e in evs if e.kind == "loop_opened")
    spec = utility_spec or UtilitySpec.model_validate(opened.payload["settings"]["utility"])
    tasks = opened.payload["tasks"]
    calls: dict[str, float] = {t: 0.0 for t in tasks}
    upd = 0.0
    final: dict[str, dict[str, Any]] = {}
    proposals: dict[tuple[str, int], dict[str, Any]] = {}
    audits: dict[tuple[str, int], list[dict[str, Any]]] = {}
    per_cycle: dict[int, dict[str, Any]] = defaultdict(dict)
    for e in evs:
        p = e.payload
        if e.kind == "budget_spent":
            if p["budget"] == "external_feedback":
                calls[p.get("task_id", "?")] = calls.get(p.get("task_id", "?"), 0.0) + float(p["amount"])
            elif p["budget"] == "update_compute":
                upd += float(p["amount"])
        elif e.kind == "final_audit":
            final[p["task_id"]] = p
        elif e.kind == "proposal":
            proposals[(p["task_id"], p["cycle"])] = p
        elif e.kind == "audit" and e.cycle is not None:
            audits[(p["task_id"], e.cycle)] = p["outcomes"]
        elif (
            e.kind in ("reliability", "adaptation_trigger", "policy_trigger", "assembly", "retain")
            and e.cycle
        ):
            per_cycle[e.cycle][e.kind] = p
        elif e.kind == "gate" and e.cycle:
            per_cycle[e.cycle].setdefault("gates", {})[p["gate"]] = p
        elif e.kind == "cycle_finished" and e.cycle:
            per_cycle[e.cycle]["report"] = p["report"]
    probs: list[list[float]] = []
    labels: list[int] = []
    groups = []
    for key, prop in proposals.items():
        outs = audits.get(key)
        if outs is None:
            continue
        if not outs:  # the environment audits nothing (BaseEnvironment's default)
            continue
        grp = []
        for c, o in zip(prop["candidates"], outs, strict=True):
            pred = c.get("prediction")
            if pred is None:
                continue
            probs.extend(pred["probs"])
            labels.extend(o["labels"][: len(pred["probs"])])
            grp.append((c["utility"], utility(o.get(ranking_terms, o["utility_terms"]), spec)))
        groups.append(grp)
    cycles = [{"cycle": k, **per_cycle[k]} for k in sorted(per_cycle)]
    return RunSummary(
        path=str(path),
        n_tasks=len(tasks),
        final=final,
        online_calls=calls,
        update_compute=upd,
        ranking_accuracy=ranking_accuracy(groups, version=metrics_version_of(opened.payload["settings"])),
        brier=brier(probs, labels) if labels else None,
        cycles=cycles,
        discarded_attempts=sum(1 for e in run.events("cycle_attempt_discarded")),
        finished=any(e.kind == "cycle_finished" and e.payload["report"].get("finished") for e in evs),
    )


def paired_bootstrap(
    diffs: Mapping[str, Sequence[float]], n_boot: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """Mean paired difference over (task, seed) pairs and its 95% interval, resampling whole tasks
    (:func:`rsi_workbench.metrics.bootstrap.cluster_interval`)."""
    return cluster_interval(diffs, n_resamples=n_boot, seed=seed)


def _fmt(x: float | None, pct: bool = False, nd: int = 3) -> str:
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "—"
    return f"{100 * x:.1f}%" if pct else f"{x:.{nd}f}"


def decision_lines(summary: RunSummary, metrics: Sequence[str] = ("brier", "ece")) -> list[str]:
    """Every cycle's reliability verdict (with its ``metrics``), adaptation trigger, gate decisions
    and retention, one line each."""
    lines = []
    for c in summary.cycles:
        rel = c.get("reliability")
        trig = c.get("adaptation_trigger")
        pol = c.get("policy_trigger")
        gates = c.get("gates", {})
        rel_s = (
            f"{rel['verdict']} (n={rel['n_predictions']}, "
            + ", ".join(f"{m}={_fmt(rel['metrics'].get(m))}" for m in metrics)
            + ")"
            if rel
            else "no predictor"
        )
        if trig:
            off = [k for k, v in trig["conjuncts"].items() if not v]
            trig_s = "TRIGGERED" if trig["triggered"] else f"no ({', '.join(off)} false)"
        else:
            trig_s = "—"
        pol_s = "TRIGGERED" if pol and pol["triggered"] else "no"
        g = []
        for name in ("policy", "predictor", "pair"):
            if name in gates:
                gd = gates[name]
                g.append(
                    f"{name}={'skipped(G=1)' if gd['skipped'] else ('pass' if gd['passed'] else 'FAIL')}"
                )
        ret = c.get("retain", {})
        lines.append(
            f"  cycle {c['cycle']}: reliability {rel_s}; adapt {trig_s}; policy update {pol_s}; "
            f"gates {' '.join(g) or '—'}; kept ({ret.get('policy_version')}, {ret.get('predictor_version')})"
            + ("; ROLLED BACK" if ret.get("rolled_back") else "")
        )
    return lines


def acceptance(summary: RunSummary) -> dict[str, tuple[int, int]]:
    """(accepted, proposed) per component and (passed, evaluated) for the pair gate."""
    out = {"policy": [0, 0], "predictor": [0, 0], "pair": [0, 0], "adaptations": [0, 0]}
    for c in summary.cycles:
        gates = c.get("gates", {})
        ret = c.get("retain", {})
        for comp in ("policy", "predictor"):
            if comp in gates:
                out[comp][1] += 1
                proposed = ret.get(f"proposed_{comp}_version")
                out[comp][0] += int(proposed is not None and ret.get(f"{comp}_version") == proposed)
        if "pair" in gates and not gates["pair"]["skipped"]:
            out["pair"][1] += 1
            out["pair"][0] += int(gates["pair"]["passed"])
        trig = c.get("adaptation_trigger")
        if trig:
            out["adaptations"][1] += 1
            out["adaptations"][0] += int(trig["triggered"])
    return {k: (v[0], v[1]) for k, v in out.items()}


def _best_observed(evs: Sequence[Any], spec: UtilitySpec) -> dict[str, float]:
    """Per task, the highest observed utility R_d of its online observations (initial one included)."""
    best: dict[str, float] = {}
    for e in evs:
        if e.kind == "observation":
            t, terms = e.payload["task_id"], e.payload["pair"]["observation"]["utility_terms"]
        elif e.kind == "initial_observation":
            t, terms = e.payload["task_id"], e.payload["observation"]["utility_terms"]
        else:
            continue
        try:
            u = utility(terms, spec)
        except KeyError:  # terms the declared weights do not name: no utility to show
            continue
        best[t] = max(best.get(t, u), u)
    return best


def run_report(path: str | Path) -> str:
    """The generic table of one protocol run, or of every protocol run below an experiment folder:
    per task its split, stop reason, online calls and best observed utility; the components and
    rule ``loop_opened`` recorded; prediction quality on audits (when the domain audits);
    acceptance counts and every cycle's decisions. Reads events only (no domain code is imported)."""
    from rsi_workbench.records import list_runs

    p = Path(path)
    runs = [p] if _is_protocol_run(p) else [r for r in list_runs(p) if r != p and _is_protocol_run(r)]
    if not runs:
        raise ValueError(f"{path}: no protocol run here (no loop_opened event)")
    return "\n\n".join(_one_run_report(r) for r in runs)


def _is_protocol_run(path: Path) -> bool:
    from rsi_workbench.records import has_events

    return has_events(path) and any(e.kind == "loop_opened" for e in Run.open(path).events("loop_opened"))


def _one_run_report(path: Path) -> str:
    s = summarize_run(path)
    evs = effective_events(Run.open(path))
    opened = next(e for e in evs if e.kind == "loop_opened").payload
    settings = opened["settings"]
    spec = UtilitySpec.model_validate(settings["utility"])
    split_of = {t: name for name, ts in opened.get("splits", {}).items() for t in ts}
    stops = {e.payload["task_id"]: e.payload.get("stop", "?") for e in evs if e.kind == "final_audit"}
    best = _best_observed(evs, spec)
    comps = opened.get("components", {})
    rule = comps.get("selection_rule", {}).get("name", settings.get("rule", "?"))
    lines = [
        f"protocol run {path} — spec {opened.get('spec', '?')}, seed {opened.get('seed')}, rule {rule}, "
        f"{s.n_tasks} tasks" + ("" if s.finished else " (UNFINISHED)"),
    ]
    if comps:
        lines.append(
            "components: "
            + " · ".join(f"{k} {v}" for k, v in comps.items() if k != "selection_rule" and v is not None)
        )
    lines += ["", f"{'task':<24} {'split':<12} {'stop':<20} {'calls':>6} {'best utility':>13}"]
    for t in opened["tasks"]:
        lines.append(
            f"{t:<24} {split_of.get(t, '?'):<12} {stops.get(t, '—'):<20} "
            f"{s.online_calls.get(t, 0.0):>6g} {_fmt(best.get(t)):>13}"
        )
    acc = acceptance(s)
    lines += [
        "",
        f"online feedback {sum(s.online_calls.values()):g} calls ({_fmt(s.calls_per_task, nd=2)} per task); "
        f"update compute {s.update_compute:g}",
        "accepted: "
        + ", ".join(f"{k} {a}/{n}" for k, (a, n) in acc.items() if k != "pair")
        + f"; pair gate passed {acc['pair'][0]}/{acc['pair'][1]}",
    ]
    if s.ranking_accuracy is not None or s.brier is not None:
        lines.append(
            f"prediction quality on audits: ranking accuracy {_fmt(s.ranking_accuracy)}, brier {_fmt(s.brier)}"
        )
    if s.discarded_attempts:
        lines.append(f"cut-off cycle attempts discarded: {s.discarded_attempts}")
    gaussian = settings.get("readout") == "gaussian"
    lines += ["", "decisions:"]
    lines += decision_lines(s, ("mae", "mean_abs_z") if gaussian else ("brier", "ece"))
    return "\n".join(lines)
