"""Replay fidelity of a dreaming experiment as a figure: replay rank vs online rank per (family, seed).

``plot_replay_fidelity(run)`` takes a dreaming experiment directory (or the per-seed summaries that
``rsi_workbench.experiments.dreaming.fidelity.seed_summaries`` returns, e.g. loaded from
``benchmarks/data/dreaming_diverse/``, or its :class:`FidelityInfo`) and draws one marker per (family, seed): x its replay score's
rank among the seed's families at the declared round, y its online best@budget rank (the pooling the
config declares; raw values with ``pooling: raw``), ρ in the title.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from rsi_workbench.viz._style import kind_colours

if TYPE_CHECKING:
    import plotly.graph_objects as go


class FidelityInfo(NamedTuple):
    """The figure's data: one row per (family, seed) point used in ρ, and ρ itself."""

    rows: list[dict[str, Any]]  # seed, label, V, online, x, y, deployed
    rho: float | None
    pooling: str
    budget: int


def fidelity_info(run: str | os.PathLike[str] | list[dict[str, Any]], settings: Any = None) -> FidelityInfo:
    """The points and ρ of a run directory's (or summaries') declared fidelity measure."""
    from rsi_workbench.domains.math.fidelity import _ranks, fidelity
    from rsi_workbench.experiments.dreaming.config import Config, FidelitySettings
    from rsi_workbench.experiments.dreaming.fidelity import seed_summaries

    budget = None
    if isinstance(run, str | os.PathLike):
        from rsi_workbench.records import Run

        cfg = Config(**Run.open(Path(run)).config)
        settings = settings or cfg.fidelity
        budget = cfg.calls
        run = seed_summaries(Path(run))
    st = settings or FidelitySettings()
    res = fidelity(run, st, budget)
    used = [p for p in res.points if p.online is not None and (p.V is not None or st.pooling != "raw")]
    rows: list[dict[str, Any]] = []
    for seed in sorted({p.seed for p in used}):
        ps = [p for p in used if p.seed == seed]
        v = [p.V if p.V is not None else -float("inf") for p in ps]
        o = [float(p.online) for p in ps if p.online is not None]
        xs, ys = (_ranks(v), _ranks(o)) if st.pooling == "within_seed_ranks" else (v, o)
        for p, x, y in zip(ps, xs, ys, strict=True):
            rows.append(
                {"seed": p.seed, "label": p.label, "V": p.V, "online": p.online, "x": x, "y": y,
                 "deployed": p.deployed}
            )  # fmt: skip
    return FidelityInfo(rows, res.rho, st.pooling, res.budget)


def plot_replay_fidelity(
    run: str | os.PathLike[str] | list[dict[str, Any]] | FidelityInfo, *, title: str = "replay fidelity"
) -> go.Figure:
    """Replay score vs online result, one marker per (family, seed); ρ (declared pooling) in the title.

    ```python
    plot_replay_fidelity("runs/diverse-full").show()
    ```
    """
    import plotly.graph_objects as go

    info = run if isinstance(run, FidelityInfo) else fidelity_info(run)
    fig = go.Figure()
    labels = sorted({r["label"] for r in info.rows})
    colours = kind_colours(labels)
    ranks = info.pooling == "within_seed_ranks"
    for lb in labels:
        rs = [r for r in info.rows if r["label"] == lb]
        jitter = [((r["seed"] % 5) - 2) * 0.04 if ranks else 0.0 for r in rs]  # separate stacked ranks
        fig.add_scatter(
            x=[r["x"] + j for r, j in zip(rs, jitter, strict=True)],
            y=[r["y"] + j for r, j in zip(rs, jitter, strict=True)],
            mode="markers", name=lb,
            marker={"color": colours[lb], "size": 9, "symbol": ["star" if r["deployed"] else "circle" for r in rs]},
            text=[f"seed {r['seed']}: V {r['V']}, online {r['online']}" for r in rs], hoverinfo="text+name",
        )  # fmt: skip
    rho = "—" if info.rho is None else f"{info.rho:+.3f}"
    what = "rank within seed" if ranks else "value"
    fig.update_layout(
        title=f"{title}: Spearman ρ = {rho} ({len(info.rows)} points; ★ = deployed)",
        xaxis={"title": f"replay V ({what})"}, yaxis={"title": f"online best@{info.budget} ({what})"},
        height=360, template="plotly_white", margin={"l": 10, "r": 10, "t": 40, "b": 40},
    )  # fmt: skip
    return fig


__all__ = ["FidelityInfo", "fidelity_info", "plot_replay_fidelity"]
