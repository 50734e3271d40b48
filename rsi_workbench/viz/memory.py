"""Views of an RSIAgent run (the memory room's events): the memory tree per snapshot with diffs,
waves and branches, verdicts with evidence, audit rejects, handoffs and recursion curves.

Split like ``optuna.visualization``: ``plot_*`` take a run directory (or its :func:`memory_info`, the
run read through the records API into plain data, tested) and draw it. Snapshots are loaded by tree hash
(:func:`~rsi_workbench.memory.snapshots.load_snapshot`, every byte sha256-checked).
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from rsi_workbench.memory import ledger as L
from rsi_workbench.memory.tree import MemoryTree
from rsi_workbench.viz.scales import int_axis

if TYPE_CHECKING:
    import plotly.graph_objects as go

OUTCOME_COLOURS = {"PASS": "#54A24B", "FAIL": "#E45756", "UNVERIFIED": "#F58518", "rejected": "#BAB0AC"}


class MemoryInfo(NamedTuple):
    """Plain data of one RSIAgent run."""

    path: Path
    started: dict[str, Any]
    snapshots: list[dict[str, Any]]  # memory_snapshot payloads, in order (label, tree_hash, n_files, ...)
    outcomes: list[dict[str, Any]]  # ledger lines (memory_outcome)
    handoffs: list[dict[str, Any]]
    rejects: list[dict[str, Any]]  # memory_audit_reject (host-side only)
    waves: list[dict[str, Any]]  # memory_wave_committed
    curve: list[dict[str, Any]]  # memory_curve_point
    evaluation: list[dict[str, Any]]  # memory_evaluation
    result: dict[str, Any] | None


def memory_runs(path: str | Path) -> dict[str, Path]:
    """The RSIAgent runs in ``path``: the run itself, or an experiment's ``arms/*`` runs, by name."""
    from rsi_workbench.records import has_events
    from rsi_workbench.records.events import read_log
    from rsi_workbench.records.run import EVENTS_FILE

    p = Path(path)

    def is_memory_run(d: Path) -> bool:
        if not has_events(d):
            return False
        res = read_log(d / EVENTS_FILE)
        return any(e.kind == L.RUN_STARTED for e in res.events[:5])

    if is_memory_run(p):
        return {p.name: p}
    arms = p / "arms"
    return {d.name: d for d in sorted(arms.iterdir()) if is_memory_run(d)} if arms.is_dir() else {}


def memory_info(path: str | Path) -> MemoryInfo:
    """Read one RSIAgent run's events into :class:`MemoryInfo` (snapshots, outcomes, waves, curve, result).

    ```python
    arms = memory_runs("runs/notebooks/rsiagent")
    info = memory_info(arms["full"])
    info.result["binary"], len(info.snapshots)
    ```
    """
    from rsi_workbench.records import Run

    run = Run.open(path)
    ev = run.events()

    def of(kind: str) -> list[dict[str, Any]]:
        return [dict(e.payload) for e in ev if e.kind == kind]

    started = of(L.RUN_STARTED)
    result = of(L.RESULT)
    return MemoryInfo(
        path=Path(path),
        started=started[0] if started else {},
        snapshots=of("memory_snapshot"),
        outcomes=of(L.OUTCOME),
        handoffs=of(L.HANDOFF),
        rejects=of(L.AUDIT_REJECT),
        waves=of(L.WAVE_COMMITTED),
        curve=of(L.CURVE_POINT),
        evaluation=of(L.EVALUATION),
        result=result[-1] if result else None,
    )


def load_tree(info: MemoryInfo, tree_hash: str) -> MemoryTree:
    """The memory stored under ``tree_hash`` in the run (sha256-verified)."""
    from rsi_workbench.memory.snapshots import load_snapshot
    from rsi_workbench.records import Run

    if not tree_hash or tree_hash == MemoryTree({}).tree_hash():
        return MemoryTree({})
    return load_snapshot(Run.open(info.path), tree_hash)


def snapshot_labels(info: MemoryInfo) -> dict[str, str]:
    """``{label: tree hash}`` of the run's snapshots, in order (``w2-p3``: after project 3 of wave 2)."""
    return {str(s["label"]): str(s["tree_hash"]) for s in info.snapshots}


def tree_rows(before: MemoryTree, after: MemoryTree) -> list[dict[str, Any]]:
    """One row per path of either tree: status (created / deleted / modified / unchanged) and sizes."""
    d = before.diff(after)
    status = {p: s for s, paths in d.as_dict().items() for p in paths}
    rows = []
    for p in sorted(status):
        rows.append(
            {
                "path": p,
                "status": status[p],
                "bytes_before": len(before.files.get(p, b"")),
                "bytes_after": len(after.files.get(p, b"")),
            }
        )
    return rows


def file_diff(before: MemoryTree, after: MemoryTree, path: str) -> str:
    """The unified diff of one memory file between two trees (text; binary files by size)."""
    a = before.files.get(path, b"").decode("utf-8", "replace").splitlines(keepends=True)
    b = after.files.get(path, b"").decode("utf-8", "replace").splitlines(keepends=True)
    return "".join(difflib.unified_diff(a, b, f"before/{path}", f"after/{path}")) or "(unchanged)"


def outcome_rows(info: MemoryInfo) -> list[dict[str, Any]]:
    """The ledger as table rows: wave, project, phase, verdict, cycles, files changed, audit rejects,
    and the last verifier report's evidence."""
    rows = []
    for r in info.outcomes:
        reports = r.get("verifier_reports") or []
        n = r.get("n_files_changed") or {}
        rows.append(
            {
                "wave": r["wave"],
                "project": r["project_index"],
                "id": r["project_id"],
                "phase": r.get("phase"),
                "unit": r.get("unit"),
                "target": bool(r.get("is_target")),
                "outcome": r.get("terminal_outcome"),
                "cycles": r.get("verification_cycles"),
                "created": n.get("created", 0),
                "modified": n.get("modified", 0),
                "deleted": n.get("deleted", 0),
                "rejects": r.get("n_audit_rejects", 0),
                "evidence": " | ".join(reports[-1].get("evidence", [])) if reports else "",
                "instruction": r.get("instruction", ""),
                "memory_after": str(r.get("memory_after", ""))[:12],
            }
        )
    return rows


def handoff_rows(info: MemoryInfo) -> list[dict[str, Any]]:
    """Curriculum turns: wave, phase, accepted or the failed turn's reason, the projects authored."""
    return [
        {
            "wave": h.get("wave"),
            "phase": h.get("phase"),
            "turn": h.get("turn"),
            "ok": h.get("ok"),
            "decision": h.get("decision", ""),
            "projects": ", ".join(p["id"] for p in h.get("projects") or []),
            "rationale_or_reason": h.get("rationale") if h.get("ok") else h.get("reason"),
        }
        for h in info.handoffs
    ]


def summary_text(info: MemoryInfo) -> str:
    """One paragraph: ablation, status, Partial/Binary, episodes, waves, frozen memory."""
    res = info.result
    if res is None:
        return f"run {info.path.name}: not finished ({len(info.outcomes)} projects committed so far)"
    stats = res.get("memory_stats") or {}
    return (
        f"ablation **{res['ablation']}** · status **{res['status']}** · Partial **{res['partial']:.1f}** · "
        f"Binary **{res['binary']:.1f}** over {res['n_targets']} targets · {res['episodes']} learning episodes · "
        f"{res['waves']} waves · frozen memory `{str(res.get('frozen_hash'))[:12]}` "
        f"({stats.get('n_files', '?')} files, {stats.get('n_bytes', '?')} bytes)"
    )


def _layout(fig: go.Figure, title: str, x: str, y: str) -> None:
    fig.update_layout(title=title, height=360, margin={"l": 50, "r": 20, "t": 50, "b": 40})
    fig.update_xaxes(title_text=x)
    fig.update_yaxes(title_text=y)


def _get_memory_info(run: str | Path | MemoryInfo) -> MemoryInfo:
    return run if isinstance(run, MemoryInfo) else memory_info(run)


def plot_waves(run: str | Path | MemoryInfo) -> go.Figure:
    """Branches per wave (x: wave, y: project index), coloured by terminal outcome; diamonds are
    target tests; hover shows the instruction and the verifier's evidence.

    ``run``: an RSIAgent run directory (one arm) or its :func:`memory_info`.

    ```python
    plot_waves(memory_runs("runs/notebooks/rsiagent")["full"]).show()
    ```
    """
    import plotly.graph_objects as go

    info = _get_memory_info(run)

    rows = outcome_rows(info)
    fig = go.Figure()
    for outcome in sorted({r["outcome"] for r in rows}):
        sub = [r for r in rows if r["outcome"] == outcome]
        fig.add_trace(
            go.Scatter(
                x=[r["wave"] for r in sub],
                y=[r["project"] for r in sub],
                mode="markers",
                name=str(outcome),
                marker={
                    "size": 13,
                    "color": OUTCOME_COLOURS.get(str(outcome), "#4C78A8"),
                    "symbol": ["diamond" if r["target"] else "circle" for r in sub],
                },
                customdata=[r["project"] for r in sub],
                text=[
                    f"{r['id']} ({r['phase']}, {r['unit']})<br>{r['instruction'][:80]}<br>{r['evidence'][:120]}"
                    f"<br>files +{r['created']} ~{r['modified']} -{r['deleted']}, rejects {r['rejects']}"
                    for r in sub
                ],
                hovertemplate="%{text}<extra></extra>",
            )
        )
    _layout(fig, "Waves and branches (◆ target test)", "wave", "project index")
    fig.update_xaxes(**int_axis([r["wave"] for r in rows]))
    fig.update_yaxes(**int_axis([r["project"] for r in rows]))
    return fig


def plot_memory_growth(run: str | Path | MemoryInfo) -> go.Figure:
    """Files and bytes of the canonical memory after each committed project.

    ``run``: an RSIAgent run directory (one arm) or its :func:`memory_info`.

    ```python
    plot_memory_growth(memory_runs("runs/notebooks/rsiagent")["full"]).show()
    ```
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    info = _get_memory_info(run)

    xs = [r["project_index"] for r in info.outcomes]
    after = [r.get("memory_after_stats") or {} for r in info.outcomes]
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(
        go.Scatter(x=xs, y=[a.get("n_files", 0) for a in after], name="files", mode="lines+markers")
    )
    fig.add_trace(
        go.Scatter(
            x=xs, y=[a.get("n_bytes", 0) for a in after], name="bytes", mode="lines", line={"dash": "dot"}
        ),
        secondary_y=True,
    )
    _layout(fig, "Memory after each committed project", "project index", "files")
    fig.update_xaxes(**int_axis(xs))
    fig.update_yaxes(**int_axis([0, *(a.get("n_files", 0) for a in after)]), secondary_y=False)
    fig.update_yaxes(title_text="bytes", secondary_y=True)
    return fig


def plot_curve(run: str | Path | MemoryInfo) -> go.Figure:
    """Recursion curve: each target's official score probed after each committed wave.

    ``run``: an RSIAgent run directory (one arm) or its :func:`memory_info`.

    ```python
    info = memory_info(memory_runs("runs/notebooks/rsiagent")["full"])
    if info.curve:
        plot_curve(info).show()
    ```
    """
    import plotly.graph_objects as go

    info = _get_memory_info(run)

    fig = go.Figure()
    for target in sorted({str(c["target"]) for c in info.curve}):
        pts = [c for c in info.curve if str(c["target"]) == target]
        fig.add_trace(
            go.Scatter(
                x=[c["wave"] for c in pts], y=[c["score"] for c in pts], name=target, mode="lines+markers"
            )
        )
    _layout(fig, "Target score after each wave (probes)", "wave", "score s_i")
    fig.update_xaxes(**int_axis([c["wave"] for c in info.curve]))
    fig.update_yaxes(range=[-0.05, 1.05])
    return fig
