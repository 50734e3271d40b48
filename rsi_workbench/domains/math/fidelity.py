"""Replay fidelity of a ``dreaming`` experiment: does a policy's replay score predict how it does online?

For the dreamer named in ``fidelity.arm`` (``dreaming_diverse``), every candidate of the declared
round of choice has its replay score V on the trees the dreamer had when it chose
(``fidelity.trees: at_choice``; ``round: last`` — all its trees — or ``first``). Each candidate
that is a fixed family (π0 = the ``portfolio`` arm) has an online result: that family's own arm's
best valid score within ``budget`` agent calls, on fresh seeds (``online: other_seeds_mean`` — the
mean over the *other* seeds, which never saw the dreamer's trees) or on the same seed
(``same_seed``). One point per (family, seed); ``pooling: within_seed_ranks`` ranks V and the
online result within each seed (β and the trees differ by seed) and takes Spearman's ρ over all
points; ``raw`` takes Spearman's ρ over the raw values. Mutations have no online run: they are listed
with their V and left out of ρ.

Everything here reads *per-seed summaries* (small JSON-able dicts: :func:`seed_summary` from a run's
event frames), so the same numbers come from a run directory and from the summaries committed under
``benchmarks/data/``.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from rsi_workbench.config import StrictModel
from rsi_workbench.domains.math.candidates import PI0, PI0_ARM, online_arm
from rsi_workbench.domains.math.dream_arm import Arm
from rsi_workbench.metrics.bootstrap import t_interval

if TYPE_CHECKING:
    import pandas as pd

#: convincing / falsified thresholds of the pre-registered rule (configs/dreaming/diverse_autocorrelation.yaml)
RHO_CONVINCING, RHO_FALSIFIED, DEPLOY_SHARE = 0.6, 0.0, 0.7


class FidelitySettings(StrictModel):
    """Replay fidelity, declared before the run (``fidelity:``): which replay scores V are read, which
    online results they are compared with, and how (family, seed) points are pooled into one ρ."""

    arm: Arm = Field(default="dreaming_diverse", description="the dreamer whose replay scores are read")
    trees: Literal["at_choice"] = Field(
        default="at_choice", description="V of each candidate on the trees the dreamer had when it chose"
    )
    round: Literal["last", "first"] = Field(
        default="last", description="which round of choice: the last (all trees) or the first"
    )
    online: Literal["other_seeds_mean", "same_seed"] = Field(
        default="other_seeds_mean",
        description="a family's online result: mean best@budget of its own arm over the other seeds "
        "(fresh seeds), or its arm on the same seed",
    )
    pooling: Literal["within_seed_ranks", "raw"] = Field(
        default="within_seed_ranks",
        description="one point per (family, seed); ρ = Spearman over all points of the within-seed "
        "ranks (β and difficulty differ by seed) or of the raw values",
    )
    budget: int | None = Field(default=None, ge=1, description="best@budget calls (default: calls)")


def best_at(nodes: pd.DataFrame, calls: int) -> float | None:
    """Best valid score within the first ``calls`` attempts of one arm/seed (``tree_node`` rows)."""
    df = nodes[(nodes["calls"] <= calls) & nodes["best_so_far"].notna()]
    return None if df.empty else float(df["best_so_far"].max())


def seed_summary(
    seed: int,
    budget: int,
    arms: list[str],
    marks: list[int],
    nodes: pd.DataFrame,
    scored: pd.DataFrame,
    finished: set[tuple[str, int]],
) -> dict[str, Any] | None:
    """One seed's compact summary from its ``tree_node`` and ``replay_scored`` rows: each arm's best@
    ``marks``, calls and rounds (``finished`` when its ``arm_finished`` is recorded), and each
    dreaming arm's rounds of choice (per round: every candidate's label, V and whether it was
    deployed); None when no arm of that seed made an attempt."""
    out_arms: dict[str, Any] = {}
    choices: dict[str, Any] = {}
    for arm in arms:
        d = nodes[(nodes["arm"] == arm) & (nodes["seed"] == seed)] if len(nodes) else nodes
        if not len(d):
            continue
        out_arms[arm] = {
            "best_at": {str(m): best_at(d, m) for m in marks},
            "calls": int(d["calls"].max()),
            "rounds": int(d["tree"].max()) + 1,
            "finished": (arm, seed) in finished,
        }
        s = scored[(scored["arm"] == arm) & (scored["seed"] == seed)] if len(scored) else scored
        if len(s) and "label" in s.columns:
            choices[arm] = [
                {
                    "tree": int(t),
                    "candidates": [
                        {"label": str(r["label"]), "V": _num(r["V"]), "deployed": bool(r["deployed"])}
                        for _, r in g.sort_values("candidate").iterrows()
                    ],
                }
                for t, g in s.groupby("tree")
            ]
    if not out_arms:
        return None
    return {"seed": int(seed), "budget": budget, "arms": out_arms, "choices": choices}


def _num(v: Any) -> float | None:
    return None if v is None or v != v else float(v)


def best_of(summary: dict[str, Any], arm: str, at: int) -> float | None:
    """One seed's best@``at`` of ``arm`` (None when absent or no valid node)."""
    a = summary["arms"].get(arm)
    return None if a is None else _num(a["best_at"].get(str(at)))


@dataclass(frozen=True)
class FidelityPoint:
    """One candidate of a dreamer's declared round on one seed: its replay V and online result."""

    seed: int
    tree: int
    label: str
    V: float | None
    online: float | None  # None: no online arm (a mutation) or no other seed
    deployed: bool


@dataclass(frozen=True)
class FidelityResult:
    """Spearman ρ of replay V vs online best@budget, pooled as declared, with its points."""

    settings: FidelitySettings
    budget: int
    points: list[FidelityPoint]
    rho: float | None
    n_points: int
    per_seed: dict[int, float | None] = field(default_factory=dict)


def _ranks(xs: list[float]) -> list[float]:
    from scipy.stats import rankdata

    return [float(r) for r in rankdata(xs)]


def _pearson(xs: list[float], ys: list[float]) -> float | None:
    if len(xs) < 3:
        return None
    mx, my = statistics.mean(xs), statistics.mean(ys)
    sx = math.sqrt(sum((x - mx) ** 2 for x in xs))
    sy = math.sqrt(sum((y - my) ** 2 for y in ys))
    if sx == 0 or sy == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / (sx * sy)


def _online(summaries: list[dict[str, Any]], arm: str, seed: int, at: int, how: str) -> float | None:
    if how == "same_seed":
        return next((best_of(s, arm, at) for s in summaries if s["seed"] == seed), None)
    vals = [v for s in summaries if s["seed"] != seed for v in [best_of(s, arm, at)] if v is not None]
    return statistics.mean(vals) if vals else None


def fidelity(
    summaries: list[dict[str, Any]], settings: FidelitySettings, budget: int | None = None
) -> FidelityResult:
    """Replay fidelity from per-seed summaries (see the module docstring for what is compared)."""
    at = settings.budget or budget or (summaries[0]["budget"] if summaries else 0)
    points: list[FidelityPoint] = []
    for s in summaries:
        rounds = s["choices"].get(settings.arm) or []
        if not rounds:
            continue
        rnd = rounds[-1] if settings.round == "last" else rounds[0]
        for c in rnd["candidates"]:
            label = c["label"]
            has_arm = label != "mutation" and online_arm(label) in s["arms"]
            onl = _online(summaries, online_arm(label), s["seed"], at, settings.online) if has_arm else None
            points.append(FidelityPoint(s["seed"], rnd["tree"], label, c["V"], onl, c["deployed"]))
    used = [p for p in points if p.online is not None and (p.V is not None or settings.pooling != "raw")]
    per_seed: dict[int, float | None] = {}
    xs: list[float] = []
    ys: list[float] = []
    for seed in sorted({p.seed for p in used}):
        ps = [p for p in used if p.seed == seed]
        v = [p.V if p.V is not None else -math.inf for p in ps]  # undefined V ranks below any defined
        o = [float(p.online) for p in ps if p.online is not None]
        rv, ro = _ranks(v), _ranks(o)
        per_seed[seed] = _pearson(rv, ro)
        if settings.pooling == "within_seed_ranks":
            xs += rv
            ys += ro
        else:
            xs += [float(x) for x in v]
            ys += o
    if settings.pooling == "raw" and xs:
        xs, ys = _ranks(xs), _ranks(ys)
    return FidelityResult(settings, at, points, _pearson(xs, ys), len(xs), per_seed)


def online_table(
    summaries: list[dict[str, Any]], arms: list[str], at: int
) -> dict[str, tuple[float, float, float, int]]:
    """Each arm's best@``at``: mean and t 95% interval over seeds."""
    out = {}
    for arm in arms:
        vals = [v for s in summaries for v in [best_of(s, arm, at)] if v is not None]
        out[arm] = t_interval(vals)
    return out


def paired(summaries: list[dict[str, Any]], a: str, b: str, at: int) -> tuple[float, float, float, int]:
    """Seed-paired best@``at`` difference a − b: mean and t 95% interval over the seeds both have."""
    diffs = []
    for s in summaries:
        va, vb = best_of(s, a, at), best_of(s, b, at)
        if va is not None and vb is not None:
            diffs.append(va - vb)
    return t_interval(diffs)


def deployed_labels(summaries: list[dict[str, Any]], arm: str) -> list[str]:
    """The label each round's choice deployed *for a real tree* (a round after the last tree is
    never used online and is left out), over all seeds."""
    out = []
    for s in summaries:
        rounds = s["choices"].get(arm) or []
        n_trees = s["arms"].get(arm, {}).get("rounds", 0)
        for r in rounds:
            if r["tree"] + 1 < n_trees:
                out += [c["label"] for c in r["candidates"] if c["deployed"]]
    return out


def verdict(
    summaries: list[dict[str, Any]], settings: FidelitySettings, families: list[str], budget: int
) -> list[str]:
    """The pre-registered rule read from the summaries: convincing (all four conditions), falsified
    (ρ ≤ 0 while replay mostly deploys a family that is not the online winner), or neither."""
    at = settings.budget or budget
    arm = settings.arm
    fixed = [online_arm(f) for f in [PI0, *families]]
    table = online_table(summaries, [*fixed, arm], at)
    ok = {f: t for f, t in table.items() if f in fixed and t[3]}
    if not ok or not table[arm][3]:
        return ["pre-registered verdict: not computable (no finished seed of the dreamer or the families)"]
    winner = max(ok, key=lambda f: ok[f][0])
    win_label = PI0 if winner == PI0_ARM else winner
    dm = table[arm][0]
    c1 = ok[winner][1] == ok[winner][1] and dm >= ok[winner][1]
    pm, plo, phi, pn = paired(summaries, arm, PI0_ARM, at)
    c2 = plo == plo and plo > 0
    labels = deployed_labels(summaries, arm)
    share = labels.count(win_label) / len(labels) if labels else math.nan
    c3 = share == share and share >= DEPLOY_SHARE
    fid = fidelity(summaries, settings, budget)
    rho = fid.rho
    c4 = rho is not None and rho >= RHO_CONVINCING
    most = max(set(labels), key=labels.count) if labels else None
    falsified = rho is not None and rho <= RHO_FALSIFIED and most is not None and most != win_label
    reading = "CONVINCING" if (c1 and c2 and c3 and c4) else "FALSIFIED" if falsified else "neither"
    yes = lambda b: "yes" if b else "no"  # noqa: E731
    return [
        f"pre-registered verdict ({len(summaries)} seeds, best@{at}): {reading}",
        f"  online winner among the fixed families: {winner} "
        f"{ok[winner][0]:.6f} [{ok[winner][1]:.6f}, {ok[winner][2]:.6f}]",
        f"  {arm} mean {dm:.6f} within (or above) the winner's CI: {yes(c1)}",
        f"  {arm} − π0 (portfolio), seed-paired: {pm:+.6f} [{plo:+.6f}, {phi:+.6f}] ({pn} seeds) "
        f"CI excludes 0 above: {yes(c2)}",
        f"  rounds deploying the winner ({win_label}): {labels.count(win_label)}/{len(labels)} "
        f"= {share:.0%} (≥ {DEPLOY_SHARE:.0%}): {yes(c3)}; most deployed: {most}",
        f"  ρ = {_fmt(rho)} over {fid.n_points} points (≥ {RHO_CONVINCING}): {yes(c4)}; "
        f"falsified needs ρ ≤ {RHO_FALSIFIED:g} and the most deployed ≠ the winner: {yes(falsified)}",
    ]


def _fmt(x: float | None) -> str:
    return "—" if x is None or x != x else f"{x:+.3f}"


def fidelity_lines(res: FidelityResult) -> list[str]:
    """The report's fidelity section: the declaration, ρ, per-seed ρ and every point."""
    st = res.settings
    lines = [
        "",
        f"replay fidelity ({st.arm}): V on the dreamer's trees at its {st.round} round of choice vs "
        f"online best@{res.budget} ({st.online}); pooling {st.pooling}",
        f"Spearman ρ = {_fmt(res.rho)} over {res.n_points} (family, seed) points; per seed: "
        + ", ".join(f"s{k} {_fmt(v)}" for k, v in res.per_seed.items()),
        f"{'seed':>4} {'round':>5} {'candidate':<22} {'V':>12} {'online':>12} deployed",
    ]
    for p in res.points:
        v = "—" if p.V is None else f"{p.V:.6f}"
        o = "—" if p.online is None else f"{p.online:.6f}"
        lines.append(f"{p.seed:>4} {p.tree:>5} {p.label:<22} {v:>12} {o:>12} {'*' if p.deployed else ''}")
    return lines


def wins_lines(summaries: list[dict[str, Any]], arms: list[str]) -> list[str]:
    """Which candidate label each dreaming arm deployed, counted over its rounds and seeds."""
    lines = []
    for arm in arms:
        labels = [
            c["label"]
            for s in summaries
            for r in s["choices"].get(arm) or []
            for c in r["candidates"]
            if c["deployed"]
        ]
        if labels:
            counts = ", ".join(f"{lb} {labels.count(lb)}" for lb in sorted(set(labels)))
            lines.append(f"{arm}: rounds won per candidate ({len(labels)} rounds): {counts}")
    return ["", "candidates deployed (the replay's choice each round)", *lines] if lines else []


__all__ = [
    "FidelityPoint",
    "FidelityResult",
    "FidelitySettings",
    "best_at",
    "best_of",
    "deployed_labels",
    "fidelity",
    "fidelity_lines",
    "online_table",
    "paired",
    "seed_summary",
    "t_interval",
    "verdict",
    "wins_lines",
]
