"""Tree inspector: pan/zoom a discovery tree (a DAG of attempts), click a node for its record and lineage,
filter by operation, round and validity, colour by score or failure class. A ``program_agent`` run
also shows "initial X → best Y (Δ)" per lane (flagged where no candidate beat the initial program).

    panel serve widgets/tree_inspector.py --args --run runs/<dreaming experiment or discovery campaign>
    rsi-workbench serve TREE.json    # a standalone discovery tree file (widgets/tree_file.py)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import panel as pn
import param

from rsi_workbench.viz.credit import credit_info, is_research_graph, plot_trueskill
from rsi_workbench.viz.html import Section, Table
from rsi_workbench.viz.replay import plot_tree, tree_layout
from rsi_workbench.widgets._app import served_app

APP_NAME = "trees"
ALL = "(all)"


def tree_records(run: Path) -> dict[str, list[dict[str, Any]]]:
    """Every recorded discovery tree of a dreaming experiment (sha256-verified), or the research graph
    of a DiscoveryRSI campaign (hypothesis versions with their TrueSkill credit), as node records."""
    from rsi_workbench.viz.credit import credit_info, is_research_graph
    from rsi_workbench.widgets.tree_file import is_tree_file, tree_file_records

    if is_tree_file(run):  # a standalone tree file (widgets/tree_file.py)
        return tree_file_records(run)
    if is_research_graph(run):
        return {f"research graph ({run.name})": credit_info(run).nodes}
    from rsi_workbench.experiments.dreaming.experiment import load_trees

    out: dict[str, list[dict[str, Any]]] = {}
    for (arm, seed), trees in load_trees(run).items():
        for t in trees:
            fr = t.to_frame()
            recs = []
            for r in fr.to_dict("records"):
                rec = {k: v for k, v in r.items() if not (isinstance(v, float) and v != v)}
                rec["operation"] = rec.pop("meta.move", None)
                recs.append(rec)
            out[f"{t.name} ({arm}, seed {seed})"] = recs
    return out


def baseline_lines(run: Path) -> list[str]:
    """A ``program_agent`` run's "initial X → best Y (Δ)" per lane, flagged where no candidate beat
    the initial program ([] for any other run, or one whose initial program was not scored)."""
    from rsi_workbench.records import has_events

    if not has_events(run) or (run / "arms").is_dir():
        return []
    from rsi_workbench.experiments.dreaming.program_report import initial_lines, lane_rows
    from rsi_workbench.records import Run

    r = Run.open(run)
    return [ln for ln in initial_lines(r, lane_rows(r)) if ln]


def lineage(nodes: list[dict[str, Any]], node_id: str) -> list[str]:
    """Ids from the root down to ``node_id``."""
    parent = {str(n["id"]): (None if n.get("parent") is None else str(n["parent"])) for n in nodes}
    path = [node_id]
    while parent.get(path[-1]) in parent:
        path.append(parent[path[-1]])  # type: ignore[arg-type]
    return list(reversed(path))


class TreeInspector(pn.viewable.Viewer):
    run = param.String(doc="dreaming experiment or campaign directory, or a discovery tree file")
    tree = param.Selector(default=None, objects=[], doc="which recorded tree")
    colour_by = param.Selector(
        default="score", objects=["score", "fail_class", "valid", "operation", "round"]
    )
    operation = param.Selector(default=ALL, objects=[ALL])
    round = param.Selector(default=ALL, objects=[ALL])
    validity = param.Selector(default=ALL, objects=[ALL, "valid", "invalid"])
    node = param.String(default="", doc="selected node id")

    def __init__(self, **params: Any):
        super().__init__(**params)
        self._trees = tree_records(Path(self.run))
        if not self._trees:
            raise ValueError(f"{self.run}: no recorded discovery trees")
        self.param.tree.objects = list(self._trees)
        self.research_graph = is_research_graph(Path(self.run))
        fields = (
            ["credit_q", "mu", "s", "operation", "round", "valid", "status"]
            if self.research_graph
            else ["score", "fail_class", "valid", "operation", "round"]
        )
        self.param.colour_by.objects = fields
        if self.colour_by not in fields:
            self.colour_by = fields[0]
        self._credit: list[Any] | None = None
        if self.research_graph:
            info = credit_info(Path(self.run))
            self._credit = [
                pn.pane.Markdown(
                    "**Credit per hypothesis version** (eq. 2–7: μ, σ, s = μ − κσ, rank, reliabilities, q, capped q̃)",
                    css_classes=["rsi-credit"],
                ),
                pn.pane.Plotly(
                    plot_trueskill(info),
                    sizing_mode="stretch_width",
                    height=max(260, 80 + 34 * len(info.hypotheses)),
                ),
                pn.widgets.Tabulator(
                    info.hypotheses.astype(object).where(info.hypotheses.notna(), None),
                    disabled=True,
                    show_index=False,
                    sizing_mode="stretch_width",
                    height=220,
                ),
                *omega_oracle_view(Path(self.run)),
            ]
        if self.tree not in self._trees:
            self.tree = list(self._trees)[0]
        self._plot = pn.pane.Plotly(
            sizing_mode="stretch_width", config={"displaylogo": False, "scrollZoom": True}
        )
        self._record = pn.pane.JSON({}, depth=2, theme="light", sizing_mode="stretch_width", height=300)
        self._lineage = pn.pane.Markdown(
            "click a node", css_classes=["rsi-lineage"], sizing_mode="stretch_width"
        )
        self._count = pn.pane.Markdown(css_classes=["rsi-tree-count"])
        base = [] if self.research_graph else baseline_lines(Path(self.run))
        self._baseline = pn.pane.Markdown(
            "\n".join(f"- `{ln}`" for ln in base), css_classes=["rsi-baseline"], visible=bool(base)
        )
        self._plot.param.watch(self._on_click, "click_data")
        self.param.watch(self._on_tree, "tree")
        self.param.watch(self._refresh, ["colour_by", "operation", "round", "validity"])
        self.param.watch(self._show_node, "node")
        self._on_tree()

    def _nodes(self) -> list[dict[str, Any]]:
        return self._trees[self.tree]

    def _on_tree(self, *_: Any) -> None:
        ns = self._nodes()
        self.param.operation.objects = [ALL, *sorted({str(n.get("operation")) for n in ns})]
        self.param.round.objects = [ALL, *sorted({str(n.get("round")) for n in ns})]
        self.operation, self.round, self.validity, self.node = ALL, ALL, ALL, ""
        self._refresh()

    def filtered(self) -> list[dict[str, Any]]:
        keep = []
        for n in self._nodes():
            if self.operation != ALL and str(n.get("operation")) != self.operation:
                continue
            if self.round != ALL and str(n.get("round")) != self.round:
                continue
            if self.validity != ALL and bool(n.get("valid")) != (self.validity == "valid"):
                continue
            keep.append(n)
        return keep

    def _refresh(self, *_: Any) -> None:
        ns = self.filtered()
        self._count.object = f"**{len(ns)} of {len(self._nodes())} nodes shown**"
        self._plot.object = plot_tree(
            tree_layout(ns, colour_by=self.colour_by), title=self.tree, colour_by=self.colour_by
        )

    def _on_click(self, e: Any) -> None:
        pts = (e.new or {}).get("points") or []
        if pts and pts[0].get("customdata") is not None:
            self.node = str(pts[0]["customdata"])

    def _show_node(self, *_: Any) -> None:
        by_id = {str(n["id"]): n for n in self._nodes()}
        if self.node not in by_id:
            self._record.object, self._lineage.object = {}, "click a node"
            return
        self._record.object = by_id[self.node]
        path = lineage(self._nodes(), self.node)
        steps = [
            f"`{i}` ({by_id[i].get('operation')}, {self.colour_by} {by_id[i].get(self.colour_by)})"
            for i in path
            if i in by_id
        ]
        self._lineage.object = f"**node {self.node}** — lineage: " + " → ".join(steps)

    def __panel__(self) -> pn.viewable.Viewable:
        w = pn.widgets.Select.from_param
        filters = pn.Row(
            w(self.param.tree),
            w(self.param.colour_by),
            w(self.param.operation),
            w(self.param.round),
            w(self.param.validity),
            sizing_mode="stretch_width",
        )
        parts = [self._baseline, filters, self._count, self._plot, self._lineage, self._record]
        if self._credit is not None:  # research graphs: TrueSkill posteriors and the credit table
            parts.extend(self._credit)
        return pn.Column(*parts, sizing_mode="stretch_width")


def omega_oracle_view(run: Path) -> list[Any]:
    """ω beside the planted oracle value and the episode, per Lead decision (viz/omega.py): the caption
    with ρ(ω, oracle) and ρ(ω, episode), the two-panel scatter and the table."""
    from rsi_workbench.viz.omega import (
        omega_oracle_info,
        omega_oracle_summary,
        omega_oracle_table,
        plot_omega_oracle,
    )

    info = omega_oracle_info(run)
    return [
        pn.pane.Markdown(
            "**ω beside the oracle value, per Lead decision** (eq. 9 ω of the decision's Lead trajectory; "
            "oracle value: the planted ground truth of what its episode published)\n\n"
            + omega_oracle_summary(info),
            css_classes=["rsi-omega-oracle"],
            sizing_mode="stretch_width",
        ),
        pn.pane.Plotly(plot_omega_oracle(info), sizing_mode="stretch_width", height=400),
        pn.widgets.Tabulator(
            omega_oracle_table(info),
            disabled=True,
            show_index=False,
            sizing_mode="stretch_width",
            height=min(400, 60 + 32 * len(info.decisions)),
        ),
    ]


def applies(run: Path, kinds: set[str]) -> bool:
    if "hypothesis_version" in kinds:
        return True
    from rsi_workbench.records import has_events
    from rsi_workbench.viz.memory import memory_runs

    if "memory_run_started" in kinds or memory_runs(run):  # RSIAgent arms hold memory runs, not trees
        return False
    if "tree_recorded" in kinds and "initial_program_scored" in kinds:  # a program_agent run
        return True
    return (run / "arms").is_dir() and any(has_events(p) for p in (run / "arms").iterdir())


def build(run: Path, extra: dict[str, str], live: Any = None) -> TreeInspector:
    view = TreeInspector(run=str(run))
    if pn.state.location is not None:
        pn.state.location.sync(view, {"tree": "tree", "node": "node", "colour_by": "colour"})
    return view


def export_sections(run: Path) -> list[Section]:
    """Static report part: the research graph with TrueSkill posteriors, or the first discovery trees."""
    if is_research_graph(run):
        info = credit_info(run)
        fig = plot_tree(
            tree_layout(info.nodes, colour_by="credit_q"), title="research graph", colour_by="credit_q"
        )
        text = f"{len(info.nodes)} hypothesis versions; colour = credit q; hover a node for its record"
        return [Section("Research graph and credit", text, [fig, plot_trueskill(info)]), _omega_section(run)]
    trees = tree_records(run)
    figs = [plot_tree(tree_layout(ns, colour_by="score"), title=name) for name, ns in list(trees.items())[:6]]
    base = baseline_lines(run)
    return [
        Section(
            "Discovery trees",
            ("\n".join(base) + "\n\n" if base else "")
            + f"{len(trees)} recorded trees (first {len(figs)} shown); hover a node for its record",
            figs,
        )
    ]


def _omega_section(run: Path) -> Section:
    from rsi_workbench.viz.omega import (
        omega_oracle_info,
        omega_oracle_summary,
        omega_oracle_table,
        plot_omega_oracle,
    )

    info = omega_oracle_info(run)
    t = omega_oracle_table(info)
    table = Table([str(c) for c in t.columns], [[str(v) for v in row] for row in t.itertuples(index=False)])
    return Section(
        "ω beside the oracle value, per Lead decision",
        omega_oracle_summary(info).replace("**", ""),
        [plot_omega_oracle(info)],
        table,
    )


if pn.state.served:
    served_app(build)
