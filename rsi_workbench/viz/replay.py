"""Replay views (Dream-RSI): replay scores of candidate policies on recorded discovery trees,
recomputed for any β1, β2; compute-to-quality curves; discovery trees as DAGs.

V(π; T) = quality − β1·n + β2·n/k per tree (``replay_objective``); recomputing needs only the
recorded (quality, n, k) of each replay, because policies never read β — the engine's
:func:`rsi_workbench.experiments.dreaming.experiment.rescore_frame` does it. A replay that revealed
no valid node has quality and V undefined (``None``), drawn as "—"; a policy's mean V is then
undefined too, and the deployment rule ranks it with :func:`rsi_workbench.replay.simulator.rank_key`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from rsi_workbench.experiments.dreaming.experiment import rescore_frame
from rsi_workbench.replay.simulator import mean_value, rank_key
from rsi_workbench.viz._style import PALETTE, VERDICT_COLOURS, kind_colours
from rsi_workbench.viz.scales import (
    below_noise,
    colorbar,
    flat_range,
    int_axis,
    noise_note,
    value_decimals,
    value_tickformat,
)

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go


def choose_policy(keys: Sequence[Any]) -> int:
    """The deployment rule of ``replay.dreaming.dream``: the highest key (a mean V, or the
    :func:`~rsi_workbench.replay.simulator.rank_key` of a candidate's per-tree V), strict
    improvement only, so a tie never displaces π0 (candidate 0) — monotonic non-regression."""
    chosen = 0
    for i, v in enumerate(keys):
        if v > keys[chosen]:
            chosen = i
    return chosen


def fmt_v(v: float | None, spec: str = ".5f") -> str:
    """A replay score for a table or label: "—" when undefined (no valid node revealed)."""
    return "—" if v is None else format(v, spec)


class ReplayInfo(NamedTuple):
    """One dreaming round of one arm/seed: V per (candidate policy, tree) and the choice."""

    arm: str
    seed: int
    round: int
    beta1: float
    beta2: float
    policies: list[str]
    trees: list[str]
    V: list[list[float | None]]  # policies × trees; None = undefined (no valid node revealed)
    mean_V: list[float | None]  # None = undefined (some tree's V is)
    chosen: int
    recorded_chosen: int | None
    label: str | None = None  # the plot's heading; None: "<arm> seed <s>, round <r>"
    node_budget: int | None = None  # the replay's per-tree node budget, where the run used one
    out_of_tree_share: list[float | None] | None = None  # per policy, where the run recorded it

    def budget_note(self, i: int | None = None) -> str:
        """ "node budget N, out-of-tree share x% (policy i's)" — empty when the run used no budget."""
        parts = [] if self.node_budget is None else [f"node budget {self.node_budget}"]
        shares = self.out_of_tree_share
        j = self.chosen if i is None else i
        if shares is not None and shares[j] is not None:
            parts.append(f"out-of-tree choices {shares[j]:.0%}")
        return ", ".join(parts)


def replay_rounds(scores: pd.DataFrame) -> list[tuple[str, int, int]]:
    """Every (arm, seed, round) with recorded replay scores."""
    keys = scores[["arm", "seed", "cycle"]].drop_duplicates().sort_values(["arm", "seed", "cycle"])
    return [(str(a), int(s), int(c)) for a, s, c in keys.itertuples(index=False)]


def replay_info(
    scores: pd.DataFrame,
    arm: str,
    seed: int,
    rnd: int,
    beta1: float,
    beta2: float,
    deployed: pd.DataFrame | None = None,
) -> ReplayInfo:
    """One dreaming round's replay scores V per (candidate policy, tree), rescored at ``beta1``,
    ``beta2``, and the policy the deployment rule chooses (``recorded_chosen``: what the run deployed,
    from the ``deployed`` frame of ``policy_deployed`` events).

    ```python
    from rsi_workbench.experiments.dreaming.experiment import load_frames

    scores, deployed = load_frames(run, "replay_tree_scored"), load_frames(run, "policy_deployed")
    arm, seed, rnd = replay_rounds(scores)[-1]
    info = replay_info(scores, arm, seed, rnd, 0.0, 0.0, deployed)
    info.policies[info.chosen], info.mean_V
    ```
    """
    d = scores[(scores["arm"] == arm) & (scores["seed"] == seed) & (scores["cycle"] == rnd)]
    d = rescore_frame(d, beta1, beta2)
    cands = sorted(int(c) for c in d["candidate"].unique())
    trees = list(dict.fromkeys(str(t) for t in d.sort_values("tree_index")["tree_name"]))
    cell = {
        (int(c), str(t)): (None if v is None or v != v else float(v))
        for c, t, v in zip(d["candidate"], d["tree_name"], d["V_rescored"])
    }
    V = [[cell.get((c, t)) for t in trees] for c in cands]
    per_cand = [[cell[(c, t)] for t in trees if (c, t) in cell] for c in cands]
    mean_v = [mean_value(vals) for vals in per_cand]
    rec = None
    if deployed is not None and len(deployed):
        m = deployed[(deployed["arm"] == arm) & (deployed["seed"] == seed) & (deployed["cycle"] == rnd)]
        rec = int(m["chosen"].iloc[-1]) if len(m) else None
    labels = [("π0 (deployed)" if c == 0 else f"candidate {c}") for c in cands]
    chosen = choose_policy([rank_key(vals) for vals in per_cand])
    budget, shares = _budget_of(d, cands)
    return ReplayInfo(
        arm, seed, rnd, beta1, beta2, labels, trees, V, mean_v, chosen, rec, None, budget, shares
    )


def _budget_of(d: pd.DataFrame, cands: list[int]) -> tuple[int | None, list[float | None] | None]:
    """The round's node budget and each candidate's out-of-tree share (choices outside the record
    over all choices), from the per-tree rows of a budgeted replay; (None, None) for an unbudgeted one."""
    if "node_budget" not in d.columns or d["node_budget"].isna().all():
        return None, None
    budget = int(d["node_budget"].dropna().iloc[0])
    if "out_of_tree" not in d.columns:
        return budget, None
    shares: list[float | None] = []
    for c in cands:
        rows = d[d["candidate"] == c]
        outside = sum(len(x) if isinstance(x, list) else 0 for x in rows["out_of_tree"])
        total = outside + int(rows["n"].sum())
        shares.append(outside / total if total else None)
    return budget, shares


def _get_replay_info(
    run: str | os.PathLike[str] | ReplayInfo,
    *,
    arm: str | None,
    seed: int | None,
    rnd: int | None,
    beta1: float | None,
    beta2: float | None,
) -> ReplayInfo:
    """``run`` itself when it is a :class:`ReplayInfo`, else the last matching round of a dreaming
    experiment directory, at the run's declared β unless ``beta1``/``beta2`` are given."""
    if isinstance(run, ReplayInfo):
        return run
    from rsi_workbench.experiments.dreaming.experiment import load_frames

    path = Path(run)
    scores, deployed = load_frames(path, "replay_tree_scored"), load_frames(path, "policy_deployed")
    rounds = replay_rounds(scores) if len(scores) else []
    pick = [
        k
        for k in rounds
        if (arm is None or k[0] == arm) and (seed is None or k[1] == seed) and (rnd is None or k[2] == rnd)
    ]
    if not pick:
        raise ValueError(
            f"{run}: no replay scores for arm={arm}, seed={seed}, round={rnd} "
            f"(recorded rounds: {rounds or 'none; not a dreaming experiment?'})"
        )
    a, s, r = pick[-1]
    m = deployed[(deployed["arm"] == a) & (deployed["seed"] == s)] if len(deployed) else deployed
    declared = (float(m["beta1"].iloc[0]), float(m["beta2"].iloc[0])) if len(m) else (0.0, 0.0)
    b1 = declared[0] if beta1 is None else beta1
    b2 = declared[1] if beta2 is None else beta2
    return replay_info(scores, a, s, r, b1, b2, deployed)


def plot_replay_heatmap(
    run: str | os.PathLike[str] | ReplayInfo,
    *,
    arm: str | None = None,
    seed: int | None = None,
    round: int | None = None,
    beta1: float | None = None,
    beta2: float | None = None,
) -> go.Figure:
    """Policies × trees heatmap of V, with each policy's mean V; the chosen policy is marked ★.

    ``run``: a dreaming experiment directory (its last recorded round matching ``arm``, ``seed``,
    ``round``, rescored at the declared β1, β2 unless given) or a :func:`replay_info`.

    When every V is equal up to :data:`~rsi_workbench.viz.scales.NOISE_TOL` of their scale the cells
    are drawn one colour with a "no difference" note (float noise is not a difference); otherwise the
    colourbar and cell labels show about three significant digits of what varies.

    ```python
    plot_replay_heatmap("runs/notebooks/dreaming", beta1=0.0).show()
    ```
    """
    import plotly.graph_objects as go

    info = _get_replay_info(run, arm=arm, seed=seed, rnd=round, beta1=beta1, beta2=beta2)

    ylab = [f"★ {p}" if i == info.chosen else p for i, p in enumerate(info.policies)]
    flat = below_noise(info.V)
    spec = f".{value_decimals(info.V, sig=4)}f"
    heat: dict[str, Any] = (
        {"colorscale": [[0.0, PALETTE[0]], [1.0, PALETTE[0]]], "showscale": False}
        if flat
        else {"colorscale": "Viridis", "showscale": True, "colorbar": colorbar("V", info.V)}
    )  # both say showscale: an exported slider merges states key by key
    fig = go.Figure(
        go.Heatmap(
            z=info.V, x=info.trees, y=ylab, **heat,
            text=[[fmt_v(v, spec) for v in row] for row in info.V], texttemplate="%{text}",
            hovertemplate="%{y}<br>tree %{x}<br>V = %{text}<extra></extra>",
        )
    )  # fmt: skip
    fig.update_layout(
        title=f"{info.label or f'{info.arm} seed {info.seed}, round {info.round}'}: V(π; T) at β1={info.beta1:g}, β2={info.beta2:g} — "
        f"chosen: {info.policies[info.chosen]}" + (f" ({info.budget_note()})" if info.budget_note() else ""),
        yaxis={"autorange": "reversed"}, height=max(260, 90 + 40 * len(info.policies)),
        margin={"l": 10, "r": 10, "t": 50, "b": 40}, template="plotly_white",
    )  # fmt: skip
    if flat:
        _note(fig, noise_note(info.V))
    return fig


def _note(fig: go.Figure, text: str) -> None:
    """A "no difference" note above the plot area (top right)."""
    fig.add_annotation(
        text=text, xref="paper", yref="paper", x=1.0, y=1.0, xanchor="right", yanchor="bottom",
        showarrow=False, font={"size": 11, "color": "#555"}, name="noise-note",
    )  # fmt: skip


def plot_compute_to_quality(
    nodes: str | os.PathLike[str] | pd.DataFrame, *, title: str = "compute to quality"
) -> go.Figure:
    """Best valid score so far against real evaluation calls, one line per arm/seed.

    ``nodes``: a dreaming experiment directory or its ``tree_node`` frame (``load_frames(run, "tree_node")``).

    ```python
    plot_compute_to_quality("runs/notebooks/dreaming").show()
    ```
    """
    import plotly.graph_objects as go

    if isinstance(nodes, str | os.PathLike):
        from rsi_workbench.experiments.dreaming.experiment import load_frames

        nodes = load_frames(Path(nodes), "tree_node")

    fig = go.Figure()
    keys = nodes[["arm", "seed"]].drop_duplicates().itertuples(index=False)
    names = [f"{a} s{s}" for a, s in keys]
    colours = kind_colours(sorted({n.split(" s")[0] for n in names}))
    for name in names:
        arm, seed = name.rsplit(" s", 1)
        d = nodes[(nodes["arm"] == arm) & (nodes["seed"] == int(seed))].sort_values("calls")
        d = d[d["best_so_far"].notna()]
        fig.add_scatter(x=d["calls"], y=d["best_so_far"], mode="lines+markers", name=name,
                        line={"shape": "hv", "color": colours[arm]})  # fmt: skip
    ys = [list(t.y) for t in fig.data]
    yaxis: dict[str, Any] = {"title": "best valid score", "tickformat": value_tickformat(ys)}
    if below_noise(ys):  # equal up to float noise: a flat line, not steps of 1e-13
        yaxis["range"] = flat_range(ys)
        _note(fig, noise_note(ys))
    fig.update_layout(title=title, xaxis=int_axis([x for t in fig.data for x in t.x], title="real evaluation calls"),
                      yaxis=yaxis, height=340, template="plotly_white",
                      margin={"l": 10, "r": 10, "t": 40, "b": 40})  # fmt: skip
    return fig


class TreeLayout(NamedTuple):
    """A discovery/research tree laid out as a DAG: positions, edges, and per-node hover records."""

    ids: list[str]
    x: list[float]
    y: list[float]  # depth (rows)
    colour_value: list[Any]
    edges: list[tuple[str, str]]
    hover: list[str]


def tree_layout(nodes: Sequence[dict[str, Any]], *, colour_by: str = "score") -> TreeLayout:
    """Tidy top-down layout: depth = rows; leaves spread left to right, parents centred over children.

    ``nodes`` are dicts with ``id`` and ``parent`` (a parent not among the ids is a root) plus any
    record fields shown on hover; ``colour_by`` names the field that colours nodes.

    ```python
    layout = tree_layout([{"id": "a", "parent": None, "score": 1.0}, {"id": "b", "parent": "a", "score": 2.0}])
    layout.y  # [0.0, 1.0]
    ```
    """
    ids = [str(n["id"]) for n in nodes]
    known = set(ids)
    kids: dict[str, list[str]] = {i: [] for i in ids}
    roots: list[str] = []
    for n in nodes:
        p = n.get("parent")
        if p is not None and str(p) in known:
            kids[str(p)].append(str(n["id"]))
        else:
            roots.append(str(n["id"]))
    pos: dict[str, float] = {}
    depth: dict[str, int] = {}
    nxt = [0.0]

    def place(i: str, d: int) -> float:
        depth[i] = d
        if not kids[i]:
            pos[i] = nxt[0]
            nxt[0] += 1.0
        else:
            xs = [place(c, d + 1) for c in kids[i]]
            pos[i] = sum(xs) / len(xs)
        return pos[i]

    for r in roots:
        place(r, 0)
    by_id = {str(n["id"]): n for n in nodes}
    hover = [
        "<br>".join(f"{k}: {str(v)[:80]}" for k, v in by_id[i].items() if k not in ("payload",)) for i in ids
    ]
    edges = [
        (str(n["parent"]), str(n["id"]))
        for n in nodes
        if n.get("parent") is not None and str(n["parent"]) in known
    ]
    recorded = [by_id[i].get("depth") for i in ids]  # a recorded depth (e.g. below a virtual root) wins
    ys = [float(d) if isinstance(d, int | float) else float(depth[i]) for d, i in zip(recorded, ids)]
    return TreeLayout(
        ids,
        [pos[i] for i in ids],
        ys,
        [by_id[i].get(colour_by) for i in ids],
        edges,
        hover,
    )


def plot_tree(
    nodes: Sequence[dict[str, Any]] | TreeLayout, *, title: str = "tree", colour_by: str = "score"
) -> go.Figure:
    """The DAG: edges as lines, nodes coloured by ``colour_by`` (numbers: a scale; labels: categories).

    ``nodes``: node dicts (``id``, ``parent``, fields shown on hover; see :func:`tree_layout`) or their layout.

    ```python
    plot_tree(credit_info("runs/notebooks/discovery").nodes, colour_by="credit_q").show()
    ```
    """
    import plotly.graph_objects as go

    layout = nodes if isinstance(nodes, TreeLayout) else tree_layout(nodes, colour_by=colour_by)

    at = {i: (x, y) for i, x, y in zip(layout.ids, layout.x, layout.y)}
    ex: list[float | None] = []
    ey: list[float | None] = []
    for a, b in layout.edges:
        ex += [at[a][0], at[b][0], None]
        ey += [at[a][1], at[b][1], None]
    fig = go.Figure(
        go.Scatter(
            x=ex, y=ey, mode="lines", line={"color": "#bbb", "width": 1}, hoverinfo="skip", showlegend=False
        )
    )
    vals = layout.colour_value
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in vals if v is not None)
    flat = False
    if numeric:
        flat = below_noise(vals)  # one colour when the values differ only by float noise
        scale: dict[str, Any] = (
            {"colorscale": [[0.0, PALETTE[0]], [1.0, PALETTE[0]]], "showscale": False}
            if flat
            else {"colorscale": "Viridis", "showscale": True, "colorbar": colorbar(colour_by, vals)}
        )
        fig.add_scatter(
            x=layout.x, y=layout.y, mode="markers", text=layout.hover, hovertemplate="%{text}<extra></extra>",
            marker={"size": 12, "color": [v if v is not None else float("nan") for v in vals], **scale,
                    "line": {"width": 1, "color": "#333"}},
            customdata=layout.ids, showlegend=False,
        )  # fmt: skip
    else:
        cats = [str(v) for v in vals]
        colours = {
            **kind_colours(sorted(set(cats))),
            **{k: c for k, c in VERDICT_COLOURS.items() if k in cats},
        }
        for c in sorted(set(cats)):
            idx = [i for i, v in enumerate(cats) if v == c]
            fig.add_scatter(
                x=[layout.x[i] for i in idx], y=[layout.y[i] for i in idx], mode="markers", name=c,
                text=[layout.hover[i] for i in idx], hovertemplate="%{text}<extra></extra>",
                customdata=[layout.ids[i] for i in idx],
                marker={"size": 12, "color": colours[c], "line": {"width": 1, "color": "#333"}},
            )  # fmt: skip
    fig.update_layout(
        title=title, yaxis=int_axis(layout.y, autorange="reversed", title="depth"), xaxis={"visible": False},
        height=420, template="plotly_white", margin={"l": 10, "r": 10, "t": 40, "b": 20}, dragmode="pan",
    )  # fmt: skip
    if flat:
        _note(fig, f"{colour_by}: " + noise_note(vals))
    return fig
