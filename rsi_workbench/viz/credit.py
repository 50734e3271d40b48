"""Research graph and credit views (DiscoveryRSI): hypothesis versions as a DAG, TrueSkill posteriors
(μ ± κσ, the conservative score s = μ − κσ of eq. 3) and the credit tables of eq. 2–7, 9.

Credit is computed by the discovery engine itself (``assign_credit`` on ``credit_records_from``),
so what is drawn is exactly what the fine-tuning release would use.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, NamedTuple

from rsi_workbench.discovery.credit import assign_credit, credit_records_from, credit_tables
from rsi_workbench.discovery.records import load_records

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go


class CreditInfo(NamedTuple):
    hypotheses: (
        pd.DataFrame
    )  # hypothesis, stratum, mu, sigma, n_effective, s, rank, valid, progress, q, q_tilde, ...
    edges: pd.DataFrame  # trajectory, hypothesis, basis, admitted, kind, alpha, reason
    trajectories: pd.DataFrame  # trajectory, w, omega
    nodes: list[
        dict[str, Any]
    ]  # research-graph nodes for the tree layout (id, parent, operation, round, ...)


def is_research_graph(path: str | os.PathLike[str]) -> bool:
    """Whether the run at ``path`` records hypothesis versions (a DiscoveryRSI campaign)."""
    from pathlib import Path

    from rsi_workbench.records import log_bytes

    return b'"kind":"hypothesis_version"' in log_bytes(Path(path) / "events.jsonl")  # plain or compacted


def credit_info(path: str | os.PathLike[str]) -> CreditInfo:
    """Credit tables and research-graph nodes of a DiscoveryRSI campaign run (the data of
    :func:`plot_trueskill`; ``nodes`` feed :func:`~rsi_workbench.viz.replay.plot_tree`).

    ```python
    info = credit_info("runs/notebooks/discovery")
    info.hypotheses[["hypothesis", "mu", "sigma", "q"]]
    plot_tree(info.nodes, colour_by="credit_q")
    ```
    """
    recs = load_records(path)
    tables = credit_tables(assign_credit(credit_records_from(recs)))
    hyp = tables["hypotheses"]
    by_h = {r["hypothesis"]: r for r in hyp.to_dict("records")} if len(hyp) else {}
    nodes = []
    for h in recs.hypotheses:
        c = by_h.get(h.hypothesis_id, {})
        nodes.append(
            {
                "id": h.hypothesis_id,
                "parent": h.parents[0] if h.parents else None,
                "parents": ", ".join(h.parents),
                "operation": h.operation,
                "round": h.round,
                "episode": h.episode,
                "family": h.family,
                "direction": h.direction,
                "claim": h.content.claim.statement,
                "criteria": f"{h.content.criteria.metric} ({h.content.criteria.supports})",
                "valid": c.get("valid"),
                "mu": c.get("mu"),
                "sigma": c.get("sigma"),
                "s": c.get("s"),
                "credit_q": c.get("q"),
                "status": c.get("status"),
            }
        )
    return CreditInfo(hyp, tables["edges"], tables["trajectories"], nodes)


def _get_credit_info(run: str | os.PathLike[str] | CreditInfo) -> CreditInfo:
    return run if isinstance(run, CreditInfo) else credit_info(run)


def plot_trueskill(
    run: str | os.PathLike[str] | CreditInfo, *, kappa: float = 2.0, title: str | None = None
) -> go.Figure:
    """Each hypothesis version's TrueSkill posterior as μ with a ±κσ bar; the conservative score s = μ − κσ marked.

    ``run``: a campaign run directory or its :func:`credit_info`.

    ```python
    plot_trueskill("runs/notebooks/discovery", kappa=2.0).show()
    ```
    """
    import plotly.graph_objects as go

    info = _get_credit_info(run)

    h = info.hypotheses.sort_values("mu", ascending=False) if len(info.hypotheses) else info.hypotheses
    fig = go.Figure()
    if len(h):
        fig.add_scatter(
            x=h["mu"], y=h["hypothesis"], mode="markers", name="μ",
            error_x={"type": "data", "array": [kappa * s for s in h["sigma"]], "visible": True},
            customdata=h[["sigma", "n_effective", "status"]].values,
            hovertemplate="%{y}<br>μ %{x:.2f} ± κσ (σ %{customdata[0]:.2f})<br>comparisons %{customdata[1]} · %{customdata[2]}<extra></extra>",
        )  # fmt: skip
        fig.add_scatter(x=h["mu"] - kappa * h["sigma"], y=h["hypothesis"], mode="markers", name=f"s = μ − {kappa:g}σ",
                        marker={"symbol": "line-ns-open", "size": 14, "color": "#E45756"})  # fmt: skip
    fig.update_layout(
        title=title or f"TrueSkill posteriors (μ ± {kappa:g}σ)", xaxis_title="skill", height=max(240, 80 + 34 * len(h)),
        yaxis={"autorange": "reversed"}, template="plotly_white", margin={"l": 10, "r": 10, "t": 40, "b": 40},
    )  # fmt: skip
    return fig
