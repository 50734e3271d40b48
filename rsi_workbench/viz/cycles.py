"""Cycle views of a protocol run: the timeline proposals → predictions → selection → feedback → gates,
and the detail of one cycle (every task's candidates, the selection, the observed feedback, gate reasons).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, NamedTuple

from rsi_workbench.viz._style import VERDICT_COLOURS
from rsi_workbench.viz.protocol import ProtocolRun, RunLike, as_protocol_run
from rsi_workbench.viz.scales import int_axis

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

STAGES = ("proposals", "predictions", "selection", "feedback", "gates")


class CycleTimelineInfo(NamedTuple):
    """Per cycle and stage: a count and a one-line summary."""

    cycles: list[int]
    counts: dict[str, list[int]]
    summary: dict[str, list[str]]
    gate_status: list[str]  # worst gate outcome of the cycle: pass | fail | skip | none


def cycle_timeline_info(run: RunLike) -> CycleTimelineInfo:
    """The data of :func:`plot_cycle_timeline`: per cycle and stage of a protocol run (loaded, or its
    directory), a count and a one-line summary, and the worst gate outcome of each cycle.

    ```python
    info = cycle_timeline_info("runs/notebooks/code_repair/runs/world_adaptive/seed0")
    dict(zip(info.cycles, info.gate_status))  # {1: 'pass', 2: 'skip', ...}
    ```
    """
    run = as_protocol_run(run)
    cycles = sorted({int(e.cycle) for e in run.of("cycle_started") if e.cycle is not None})
    counts: dict[str, list[int]] = {s: [] for s in STAGES}
    summary: dict[str, list[str]] = {s: [] for s in STAGES}
    status: list[str] = []
    for k in cycles:
        props = run.of("proposal", k)
        cands = [c for p in props for c in p.payload["candidates"]]
        valid = sum(bool(c["valid"]) for c in cands)
        predicted = [c for c in cands if c.get("prediction")]
        sels = run.of("selection", k)
        chosen = sum(len(s.payload["selected"]) for s in sels)
        refused = sum(s.payload["outcome"] != "selected" for s in sels)
        obs = run.of("observation", k)
        solved = sum(bool(o.payload["pair"]["observation"].get("solved")) for o in obs)
        gates = run.of("gate", k)
        outcomes = [
            ("skip" if g.payload.get("skipped") else "pass" if g.payload["passed"] else "fail") for g in gates
        ]
        rel = run.of("reliability", k)
        counts["proposals"].append(len(cands))
        summary["proposals"].append(f"{len(cands)} candidates for {len(props)} tasks, {valid} valid")
        counts["predictions"].append(len(predicted))
        summary["predictions"].append(
            f"{len(predicted)} predicted" + (f"; reliability {rel[-1].payload['verdict']}" if rel else "")
        )
        counts["selection"].append(chosen)
        summary["selection"].append(
            f"{chosen} selected ({run.rule})" + (f", {refused} refused" if refused else "")
        )
        counts["feedback"].append(len(obs))
        summary["feedback"].append(f"{len(obs)} online feedback calls, {solved} solved")
        counts["gates"].append(len(gates))
        summary["gates"].append(
            ", ".join(f"{g.payload['gate']} {o}" for g, o in zip(gates, outcomes)) or "no gate decisions"
        )
        status.append(
            "fail" if "fail" in outcomes else "pass" if "pass" in outcomes else "skip" if outcomes else "none"
        )
    return CycleTimelineInfo(cycles, counts, summary, status)


def plot_cycle_timeline(run: RunLike | CycleTimelineInfo, *, title: str = "cycle timeline") -> go.Figure:
    """Swimlanes: one row per stage, one column per cycle; marker size = count, gate lane coloured by outcome.

    ``run``: a protocol run (loaded, or its directory) or its :func:`cycle_timeline_info`.

    ```python
    plot_cycle_timeline("runs/notebooks/code_repair/runs/world_adaptive/seed0").show()
    ```
    """
    import plotly.graph_objects as go

    info = _get_cycle_timeline_info(run)

    fig = go.Figure()
    peak = max((max(v) for v in info.counts.values() if v), default=1) or 1
    for s in STAGES:
        colours = [VERDICT_COLOURS.get(g, "#BAB0AC") for g in info.gate_status] if s == "gates" else "#4C78A8"
        fig.add_trace(
            go.Scatter(
                x=info.cycles,
                y=[s] * len(info.cycles),
                mode="markers+text",
                text=[str(n) for n in info.counts[s]],
                textposition="middle center",
                textfont={"color": "white", "size": 11},
                marker={"size": [12 + 22 * (n / peak) ** 0.5 for n in info.counts[s]], "color": colours},
                customdata=info.summary[s],
                hovertemplate="cycle %{x} · " + s + "<br>%{customdata}<extra></extra>",
                name=s,
            )
        )
    fig.update_layout(
        title=title,
        xaxis=int_axis(info.cycles, title="cycle"),
        yaxis={"categoryorder": "array", "categoryarray": list(reversed(STAGES))},
        showlegend=False,
        height=360,
        margin={"l": 10, "r": 10, "t": 40, "b": 40},
        template="plotly_white",
    )
    return fig


def _get_cycle_timeline_info(run: RunLike | CycleTimelineInfo) -> CycleTimelineInfo:
    return run if isinstance(run, CycleTimelineInfo) else cycle_timeline_info(run)


class CycleDetail(NamedTuple):
    """One cycle in full: candidate rows per task, and the learn/retain decisions with their reasons."""

    cycle: int
    # task, split, candidate, [action], valid, reason, utility, [p_all_pass], rank, selected, observed
    candidates: pd.DataFrame
    decisions: list[dict[str, Any]]  # kind, outcome, reasons


def cycle_detail(run: RunLike, cycle: int) -> CycleDetail:
    """One cycle of a protocol run in full: every task's candidates (validity, predicted utility,
    selection, observed feedback) and the learn/retain decisions with their reasons.

    ```python
    d = cycle_detail(run, run.cycles[-1])
    d.candidates[d.candidates["selected"]]
    ```
    """
    import pandas as pd

    run = as_protocol_run(run)

    sel = {e.payload["task_id"]: e.payload for e in run.of("selection", cycle)}
    obs: dict[tuple[str, int], dict[str, Any]] = {
        (e.payload["task_id"], int(e.payload["index"])): e.payload["pair"]["observation"]
        for e in run.of("observation", cycle)
    }
    rows = []
    for p in run.of("proposal", cycle):
        t = p.payload["task_id"]
        s = sel.get(t, {})
        rank = {idx: r for r, idx in enumerate(s.get("order", []))}
        for c in p.payload["candidates"]:
            i = int(c["index"])
            pred = c.get("prediction") or {}
            o = obs.get((t, i))
            rows.append(
                {
                    "task": t,
                    "split": p.payload.get("split"),
                    "candidate": i,
                    "action": _action_text(p.payload.get("actions", []), c),
                    "valid": bool(c["valid"]),
                    "reason": c.get("reason") or "",
                    "utility": c.get("utility"),
                    "p_all_pass": (pred.get("utility_terms") or {}).get("p_all_pass"),
                    "rank": rank.get(i),
                    "selected": i in s.get("selected", []),
                    "observed": None if o is None else _observed_text(o),
                }
            )
    cols = [
        "task",
        "split",
        "candidate",
        "action",
        "valid",
        "reason",
        "utility",
        "p_all_pass",
        "rank",
        "selected",
        "observed",
    ]
    decisions: list[dict[str, Any]] = []
    for kind in ("policy_trigger", "reliability", "adaptation_trigger", "gate", "assembly", "retain"):
        for e in run.of(kind, cycle):
            decisions.append(_decision_row(kind, e.payload))
    frame = pd.DataFrame(rows, columns=cols)
    if len(frame):  # a column no candidate of this domain fills (programs, no p_all_pass term) is left out
        frame = frame.drop(columns=[c for c in ("action", "p_all_pass") if frame[c].isna().all()])
    return CycleDetail(cycle, frame, decisions)


def _action_text(actions: list[Any], cand: dict[str, Any]) -> str | None:
    """A recorded action that is not a program, in one line (compact JSON, at most 60 characters;
    ``BaseEnvironment``'s ``{"action": a}`` shows as ``a``); None for programs (see the diff)."""
    import json

    slot = int(cand.get("slot", cand["index"]))
    if not 0 <= slot < len(actions):
        return None
    a = actions[slot]
    if isinstance(a, dict) and "program" in a:
        return None
    if isinstance(a, dict) and list(a) == ["action"]:
        a = a["action"]
    text = json.dumps(a, sort_keys=True, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _observed_text(o: dict[str, Any]) -> str:
    """An observation in a word: solved, the pass fraction (test-suite domains), else every
    observed utility term (any domain's, e.g. ``score 0.304``)."""
    terms = o.get("utility_terms") or {}
    if o.get("solved"):
        return "solved"
    if "pass_fraction" in terms:
        return f"pass {terms['pass_fraction']:.2f}"
    return ", ".join(f"{k} {float(v):.3g}" for k, v in terms.items()) or "observed"


def _decision_row(kind: str, p: dict[str, Any]) -> dict[str, Any]:
    """A learn/retain event as (decision, outcome, reasons) for the stepper's decision list."""
    if kind == "gate":
        out = "skip" if p.get("skipped") else ("pass" if p.get("passed") else "fail")
        return {
            "decision": f"{p['gate']} gate",
            "outcome": out,
            "reasons": "; ".join(p.get("reasons", [])) or "passes",
        }
    if kind == "reliability":
        return {
            "decision": "reliability",
            "outcome": p["verdict"],
            "reasons": "; ".join(p.get("reasons", [])) or "meets the criteria",
        }
    if kind in ("policy_trigger", "adaptation_trigger"):
        off = [n for n, ok in p.get("conjuncts", {}).items() if not ok]
        return {
            "decision": kind.replace("_", " "),
            "outcome": "on" if p["triggered"] else "off",
            "reasons": "fails: " + ", ".join(off) if off else "all conjuncts hold",
        }
    if kind == "assembly":
        return {
            "decision": "assembly",
            "outcome": "changed" if p.get("anything_changed") else "unchanged",
            "reasons": f"policy {p.get('policy_changed')}, predictor {p.get('predictor_changed')}",
        }
    return {
        "decision": "retain",
        "outcome": "rolled back" if p.get("rolled_back") else "kept",
        "reasons": f"policy {p.get('policy_version')}, predictor {p.get('predictor_version')}",
    }


class CandidateDiff(NamedTuple):
    """A proposed candidate program against the program the task kept at that cycle (its state)."""

    task: str
    cycle: int
    candidate: int
    valid: bool
    reason: str
    diff: str  # unified diff, kept -> candidate; "" = identical
    edits: list[str]  # the coder's own description of its edits (when recorded)


def candidate_diff(run: ProtocolRun, task: str, cycle: int, index: int) -> CandidateDiff | None:
    """The unified diff of candidate ``index`` of ``task`` in ``cycle`` against the kept program
    (the ``state.program`` its proposal event records); None when the candidate is not recorded or
    the domain's actions are not programs."""
    import difflib

    for p in run.of("proposal", cycle):
        if p.payload["task_id"] != task:
            continue
        cand = next((c for c in p.payload["candidates"] if int(c["index"]) == index), None)
        if cand is None:
            return None
        action = p.payload["actions"][cand.get("slot", cand["index"])]
        kept = (p.payload.get("state") or {}).get("program")
        if not isinstance(action, dict) or "program" not in action or not isinstance(kept, str):
            return None
        diff = "".join(
            difflib.unified_diff(
                kept.splitlines(keepends=True),
                str(action["program"]).splitlines(keepends=True),
                fromfile=f"kept program (cycle {cycle})",
                tofile=f"candidate {index}",
            )
        )
        meta = action.get("meta") or {}
        edits = [str(e) for e in meta.get("edits") or []]
        return CandidateDiff(task, cycle, index, bool(cand["valid"]), cand.get("reason") or "", diff, edits)
    return None


def actions_are_programs(run: ProtocolRun) -> bool:
    """Whether the run's candidates are programs (a proposal whose actions carry ``program`` over a
    kept ``state.program``), so :func:`candidate_diff` has diffs to show; False for reactions,
    GUI steps, numbers... and for a run with no proposal yet."""
    for p in run.of("proposal"):
        kept = (p.payload.get("state") or {}).get("program")
        actions = p.payload.get("actions") or []
        return isinstance(kept, str) and any(isinstance(a, dict) and "program" in a for a in actions)
    return False


def diff_markdown(d: CandidateDiff | None) -> str:
    """A candidate's diff as Markdown (a fenced ``diff`` block), or why there is none."""
    if d is None:
        return "(no program diff recorded for this candidate: its actions are not programs)"
    head = f"**{d.task} · cycle {d.cycle} · candidate {d.candidate}** — " + (
        "valid" if d.valid else f"**invalid**: {d.reason}"
    )
    if d.edits:
        head += " · edits: " + "; ".join(d.edits)
    body = d.diff if d.diff else "(identical to the kept program)\n"
    ticks = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, ticks + 1)  # a program holding ``` cannot close the block
    return f"{head}\n\nunified diff against the kept program:\n\n{fence}diff\n{body.rstrip()}\n{fence}"
