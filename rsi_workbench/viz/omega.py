"""ω beside the oracle value, per Lead decision (DiscoveryRSI, arXiv 2610.23839; docs/discovery.md).

For each Lead decision of a campaign this view puts its eq. 9 training weight ω (its Lead trajectory's
weight in the eq. 2-9 credit pipeline, 0 when the credit gave it none) next to the planted oracle value
of what the decision's episode published and the episode index. It also gives Spearman ρ(ω, oracle)
and ρ(ω, episode), which ask whether credit follows what a decision produced or when it was made.
ω is computed twice: with the paper's eq. 7 family budgets (C_loc = C_glob = 2, what the credit table
shows) and without them (C_loc = C_glob = ∞, the credit experiment's ``family_caps: false``).

The oracle value is the tabular domain's planted ground truth (``domains.tabular.oracle``: info(B ∪ X)
− info(B) of each version, averaged over the versions an episode published, the episode-0 noise
control excluded). It is a pure function of the recorded direction name and plan spec, so it is read
from the run's records like everything else here: nothing the run names is imported or executed. A
decision on a direction without planted truth (a real dataset, or another domain) gets no value, and
the view says so in words. ρ is taken, as in the credit experiment's decision samples, over the
valid, non-fallback decisions that have both values.

    info = omega_oracle_info("runs/campaign")
    info.decisions[["episode", "operation", "omega", "oracle"]]
    plot_omega_oracle(info).show()
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from rsi_workbench.discovery.credit import CreditSettings, ShareSettings, assign_credit, credit_records_from
from rsi_workbench.discovery.records import DiscoveryRecords, load_records

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

NO_TRUTH = "no oracle value (direction without planted truth)"
NO_VERSION = "no oracle value (the episode published no version with a planted value)"
NOT_SAMPLED = "not in ρ: an invalid or fallback decision"
VARIANTS = {
    "paper": "ω (paper's eq. 7 family budgets)",
    "no_caps": "ω without family budgets (C_loc = C_glob = ∞)",
}
PLANTED_DOMAIN = "tabular"  # the built-in domain whose synthetic directions carry a planted truth


class OmegaOracleInfo(NamedTuple):
    """The view's data: one row per Lead decision, and the rank correlations over the ρ sample."""

    decisions: pd.DataFrame  # episode, trajectory, lead, operation, direction, valid, fallback, in_rho,
    #                          published, omega, omega_no_caps, oracle (NaN where none), oracle_note
    rho: dict[str, dict[str, float]]  # variant ("paper", "no_caps") -> {"oracle", "episode"} (NaN: undefined)
    n: dict[str, int]  # decisions in each ρ: "oracle" (with an oracle value), "episode"
    planted: bool  # whether any decision has an oracle value


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman ρ, NaN when undefined (fewer than 3 pairs or a constant side)."""
    if len(x) < 3 or len(set(x)) < 2 or len(set(y)) < 2:
        return math.nan
    from scipy.stats import spearmanr

    return float(spearmanr(x, y).statistic)


def _omega(recs: DiscoveryRecords, family_caps: bool) -> dict[str, float]:
    settings = (
        CreditSettings()
        if family_caps
        else CreditSettings(shares=ShareSettings(c_loc=math.inf, c_glob=math.inf))
    )
    return dict(assign_credit(credit_records_from(recs), settings).release.omega)


def _planted(recs: DiscoveryRecords) -> tuple[Any, dict[int, float], set[str]]:
    """Which directions carry a planted truth, each episode's oracle value and the versions left out
    of it (the episode-0 noise control): the tabular domain's; nothing for any other domain."""
    if not any(h.domain == PLANTED_DOMAIN for h in recs.hypotheses):
        return (lambda _d: False), {}, set()
    from rsi_workbench.domains.tabular.oracle import episode_oracle_values, is_noise_control
    from rsi_workbench.domains.tabular.synthetic import is_synthetic

    try:
        values = episode_oracle_values(recs)
    except KeyError:  # a direction name the planted designs do not know: no truth to show
        return (lambda _d: False), {}, set()
    return is_synthetic, values, {h.hypothesis_id for h in recs.hypotheses if is_noise_control(h)}


def omega_oracle_info(run: str | os.PathLike[str] | DiscoveryRecords) -> OmegaOracleInfo:
    """Each Lead decision's ω (with and without the family budgets), oracle value and episode, and
    ρ(ω, oracle), ρ(ω, episode) over the valid, non-fallback decisions (``run``: a campaign run
    directory, or its records)."""
    import pandas as pd

    recs = run if isinstance(run, DiscoveryRecords) else load_records(run)
    omega = {"paper": _omega(recs, True), "no_caps": _omega(recs, False)}
    has_truth, oracle, controls = _planted(recs)
    published: dict[int, list[str]] = {}
    for h in recs.hypotheses:
        label = h.hypothesis_id + (
            " (noise control, not in the oracle value)" if h.hypothesis_id in controls else ""
        )
        published.setdefault(h.episode, []).append(label)
    rows = []
    for d in sorted(recs.lead_decisions, key=lambda d: d.episode):
        value = oracle.get(d.episode) if has_truth(d.direction) else None
        note = "" if value is not None else (NO_VERSION if has_truth(d.direction) else NO_TRUTH)
        rows.append(
            {
                "episode": d.episode,
                "trajectory": d.trajectory_id,
                "lead": d.lead,
                "operation": d.operation,
                "direction": d.direction,
                "valid": d.valid,
                "fallback": d.fallback,
                "in_rho": d.valid and not d.fallback,
                "published": ", ".join(published.get(d.episode, [])),
                "omega": float(omega["paper"].get(d.trajectory_id, 0.0)),
                "omega_no_caps": float(omega["no_caps"].get(d.trajectory_id, 0.0)),
                "oracle": math.nan if value is None else float(value),
                "oracle_note": note,
            }
        )
    cols = ["episode", "trajectory", "lead", "operation", "direction", "valid", "fallback", "in_rho",
            "published", "omega", "omega_no_caps", "oracle", "oracle_note"]  # fmt: skip
    df = pd.DataFrame(rows, columns=cols)
    used = df[df["in_rho"]] if len(df) else df
    with_oracle = used[used["oracle"].notna()] if len(used) else used
    rho: dict[str, dict[str, float]] = {}
    for variant, col in (("paper", "omega"), ("no_caps", "omega_no_caps")):
        rho[variant] = {
            "oracle": spearman(list(with_oracle[col]), list(with_oracle["oracle"])),
            "episode": spearman(list(used[col]), [float(e) for e in used["episode"]]),
        }
    n = {"oracle": len(with_oracle), "episode": len(used)}
    return OmegaOracleInfo(df, rho, n, bool(df["oracle"].notna().any()) if len(df) else False)


def _get_omega_oracle_info(run: str | os.PathLike[str] | OmegaOracleInfo) -> OmegaOracleInfo:
    return run if isinstance(run, OmegaOracleInfo) else omega_oracle_info(run)


def fmt_rho(v: float) -> str:
    """ρ with its sign (``+0.48``), or ``undefined`` (fewer than 3 decisions or a constant side)."""
    return "undefined" if v != v else f"{v:+.2f}"


def omega_oracle_summary(run: str | os.PathLike[str] | OmegaOracleInfo) -> str:
    """The view's caption in Markdown: ρ(ω, oracle) and ρ(ω, episode) with and without the family
    budgets, how many decisions each uses, and, where nothing has a planted value, why."""
    info = _get_omega_oracle_info(run)
    d = info.decisions
    if not len(d):
        return "no Lead decisions recorded"
    lines = []
    for variant, label in VARIANTS.items():
        r = info.rho[variant]
        orc = (
            f"ρ(ω, oracle) **{fmt_rho(r['oracle'])}** (n {info.n['oracle']})"
            if info.planted
            else "ρ(ω, oracle): " + NO_TRUTH
        )
        lines.append(f"- {label}: {orc}; ρ(ω, episode) **{fmt_rho(r['episode'])}** (n {info.n['episode']})")
    left = int((~d["in_rho"]).sum())
    if left:
        lines.append(f"- {left} invalid or fallback decision(s) listed but left out of ρ")
    return "\n".join(lines)


def omega_oracle_table(run: str | os.PathLike[str] | OmegaOracleInfo) -> pd.DataFrame:
    """The per-decision table as shown: ω with and without the family budgets, the oracle value or,
    in words, why there is none, and the episode (every cell filled)."""
    info = _get_omega_oracle_info(run)
    d = info.decisions
    t = d[["episode", "operation", "trajectory", "direction"]].copy()
    t["ω"] = [f"{v:.4f}" for v in d["omega"]]
    t["ω, no family budgets"] = [f"{v:.4f}" for v in d["omega_no_caps"]]
    t["oracle value"] = [
        n if v != v else f"{v:g}" for v, n in zip(d["oracle"], d["oracle_note"], strict=True)
    ]
    t["in ρ"] = ["yes" if k else NOT_SAMPLED for k in d["in_rho"]]
    t["published"] = d["published"].where(d["published"] != "", "(nothing)")
    return t


def plot_omega_oracle(
    run: str | os.PathLike[str] | OmegaOracleInfo, *, title: str | None = None
) -> go.Figure:
    """Two panels, one marker per Lead decision: ω against its oracle value, and ω against its
    episode, with and without the family budgets (legend toggles), ρ in each panel's title. Where no
    decision has a planted value the left panel says so.

    ```python
    plot_omega_oracle("runs/campaign").show()
    ```
    """
    from plotly.subplots import make_subplots

    from rsi_workbench.viz._style import PALETTE
    from rsi_workbench.viz.scales import int_axis

    info = _get_omega_oracle_info(run)
    d = info.decisions
    used = d[d["in_rho"]] if len(d) else d
    r = info.rho
    left = (
        f"ω vs oracle value: ρ {fmt_rho(r['paper']['oracle'])} (no budgets {fmt_rho(r['no_caps']['oracle'])})"
        if info.planted
        else "ω vs oracle value"
    )
    right = (
        f"ω vs episode: ρ {fmt_rho(r['paper']['episode'])} (no budgets {fmt_rho(r['no_caps']['episode'])})"
    )
    fig = make_subplots(rows=1, cols=2, subplot_titles=[left, right], horizontal_spacing=0.1)
    for i, (variant, col) in enumerate((("paper", "omega"), ("no_caps", "omega_no_caps"))):
        hover = [
            f"episode {e} · {op} · {t}<br>ω {w:.4f}<br>oracle {'none' if o != o else f'{o:g}'}"
            for e, op, t, w, o in zip(
                used["episode"], used["operation"], used["trajectory"], used[col], used["oracle"], strict=True
            )
        ]
        style = {"color": PALETTE[i], "size": 9, "symbol": ["circle", "diamond"][i]}
        common = {"mode": "markers", "name": VARIANTS[variant], "legendgroup": variant, "marker": style}
        planted = [k for k, o in enumerate(used["oracle"]) if o == o]
        fig.add_scatter(
            x=[used["oracle"].iloc[k] for k in planted], y=[used[col].iloc[k] for k in planted],
            text=[hover[k] for k in planted], hovertemplate="%{text}<extra></extra>", row=1, col=1, **common,
        )  # fmt: skip
        fig.add_scatter(
            x=list(used["episode"]), y=list(used[col]), text=hover, hovertemplate="%{text}<extra></extra>",
            row=1, col=2, showlegend=False, **common,
        )  # fmt: skip
    if not info.planted:
        fig.add_annotation(
            text=NO_TRUTH if len(d) else "no Lead decisions recorded", showarrow=False,
            xref="x domain", yref="y domain", x=0.5, y=0.5, font={"size": 12},
        )  # fmt: skip
    fig.update_xaxes(title_text="oracle value (planted)", row=1, col=1)
    fig.update_xaxes(title_text="episode", row=1, col=2, **int_axis(list(d["episode"]) if len(d) else [0]))
    fig.update_yaxes(title_text="ω (eq. 9)", row=1, col=1)
    fig.update_layout(
        title=title or f"ω beside the oracle value, per Lead decision ({len(used)} in ρ)",
        template="plotly_white", height=380, margin={"l": 10, "r": 10, "t": 70, "b": 40},
        legend={"orientation": "h", "y": -0.2},
    )  # fmt: skip
    return fig


__all__ = [
    "NO_TRUTH",
    "NO_VERSION",
    "OmegaOracleInfo",
    "omega_oracle_info",
    "omega_oracle_summary",
    "omega_oracle_table",
    "plot_omega_oracle",
    "spearman",
]
