"""The credit-information machinery on the tabular domain: decision samples -> theta+ per arm.

What the ``discovery_credit`` experiment runs and reads, each piece with its own settings: the arms
(``credit``: eq. 9 omega weights, ``uniform``, ``shuffled``: the placebo, ``oracle``: the planted
ground-truth value of what each decision's episode published, on synthetic directions only,
``rule``), theta+'s fit
(:class:`PolicySettings`; :func:`fit_arms` over the recorded decision samples), a dev arm's Lead
(:func:`arm_lead`), a finished campaign's summary row (:func:`campaign_row`), and two diagnostics of
a finished experiment: whether omega ranks the decisions by what they produced
(:func:`omega_diagnostics`), how far apart the fitted policies are (:func:`policy_agreement`), and
how often two arms' operation probabilities differ enough for one shared random draw to send them to
different operations (:func:`split_probability`, :func:`decision_splits`).
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from rsi_workbench.config import StrictModel
from rsi_workbench.discovery.lead import Lead, RuleLead
from rsi_workbench.discovery.records import EVENT_KINDS, DiscoveryRecords, EpisodeFinished, load_records
from rsi_workbench.domains.tabular.credit_policy import FEATURES, OperationPolicy, PolicyLead, fit_policy
from rsi_workbench.records import Event, Run

Arm = Literal["credit", "uniform", "shuffled", "oracle", "rule"]
FITTED_ARMS: tuple[Arm, ...] = ("credit", "uniform", "shuffled", "oracle")
DEFAULT_ARMS: tuple[Arm, ...] = ("credit", "uniform", "shuffled")


class PolicySettings(StrictModel):
    """theta+'s fit: scikit-learn LogisticRegression (multinomial, L2) and the placebo's permutation."""

    C: float = Field(default=1.0, gt=0, description="inverse L2 strength (same for every arm)")
    seed: int = 0
    shuffle_seed: int = Field(default=0, description="seed of the placebo's permutation of omega")
    decode: Literal["argmax", "sample"] = Field(
        default="argmax",
        description="dev Lead: the most probable valid operation, or one sampled with the campaign's rng",
    )


def records_before(events: list[Event], episode: int) -> DiscoveryRecords:
    """The typed records of the completed episodes before ``episode`` (what its Lead saw)."""
    recs = DiscoveryRecords()
    for ev in events:
        if ev.kind == EpisodeFinished.kind:
            if int(ev.payload["episode"]) < episode:
                recs.add(EpisodeFinished.from_event(ev))
            continue
        t = EVENT_KINDS.get(ev.kind)
        if t is not None and (ev.cycle is None or int(ev.cycle) < episode):
            recs.add(t.from_event(ev))
    return recs


def arm_weights(rows: list[dict[str, Any]], arm: str, shuffle_seed: int) -> list[float]:
    """Training weights per decision: omega (credit), 1 (uniform), omega permuted (shuffled) or the
    planted oracle value of what the decision's episode published (oracle; every row needs one)."""
    if arm == "oracle":
        missing = sum(r.get("oracle") is None for r in rows)
        if missing:
            raise ValueError(
                f"arm 'oracle': {missing} of {len(rows)} decisions have no planted oracle value "
                "(train on synthetic-planted-NN directions)"
            )
        return [float(r["oracle"]) for r in rows]
    omega = [float(r["omega"]) for r in rows]
    if arm == "credit":
        return omega
    if arm == "uniform":
        return [1.0] * len(rows)
    if arm == "shuffled":
        perm = list(omega)
        random.Random(shuffle_seed).shuffle(perm)
        return perm
    raise ValueError(f"arm {arm!r} is not fitted; fitted arms: {FITTED_ARMS}")


def fit_arms(
    run: Run, rows: list[dict[str, Any]], arms: Sequence[str], policy: PolicySettings
) -> dict[str, str]:
    """theta+ per fitted arm of ``arms`` from the training campaigns' decision samples ``rows``;
    records the samples and each policy as artifacts, and a ``theta_plus_policies`` event."""
    samples_sha = run.artifacts.put_json(
        {"features": list(FEATURES), "rows": rows}, name="credit_decision_samples.json"
    )
    shas: dict[str, str] = {}
    info: dict[str, Any] = {}
    for arm in [a for a in arms if a in FITTED_ARMS]:
        w = arm_weights(rows, arm, policy.shuffle_seed)
        pol = fit_policy(
            [r["features"] for r in rows],
            [r["operation"] for r in rows],
            w,
            C=policy.C,
            seed=policy.seed,
        )
        pol.meta.update(
            {
                "arm": arm,
                "samples_sha256": samples_sha,
                "estimator": "sklearn.linear_model.LogisticRegression(multinomial, lbfgs, L2)",
                "weights": {
                    "credit": "eq. 9 omega",
                    "uniform": "1",
                    "shuffled": "omega permuted",
                    "oracle": "planted oracle value of the episode's versions",
                }[arm],
                "shuffle_seed": policy.shuffle_seed if arm == "shuffled" else None,
            }
        )
        shas[arm] = run.artifacts.put_json(pol.to_json(), name=f"theta_plus_{arm}.json")
        info[arm] = {k: pol.meta[k] for k in ("n_decisions", "n_weighted")}
    ops = sorted({r["operation"] for r in rows})
    run.append(
        "theta_plus_policies",
        {
            "policies": shas,
            "samples": samples_sha,
            "n_decisions": len(rows),
            "omega_positive": sum(r["omega"] > 0 for r in rows),
            "operations": {o: sum(r["operation"] == o for r in rows) for o in ops},
            "arms": info,
            "lora": "not run: the three LoRA trainings of the SmolLM2 ModelLead are out of this experiment",
        },
    )
    run.commit()
    return shas


def arm_lead(run: Run, arm: str, decode: str = "argmax") -> Lead:
    """The Lead of a dev arm: the rule Lead, or the recorded theta+ policy of a fitted arm."""
    if arm == "rule":
        return RuleLead()
    sha = run.events("theta_plus_policies")[-1].payload["policies"][arm]
    pol = OperationPolicy.from_json(run.artifacts.get_json(sha))
    sample = decode == "sample"
    return PolicyLead(pol, name=f"theta+:{arm}:{sha[:12]}" + (":sample" if sample else ""), sample=sample)


def campaign_row(path: Path) -> dict[str, Any]:
    """A finished campaign's summary: mean Level-1 weighted profile, operation shares, wall time."""
    from rsi_workbench.discovery.assess import profile_table

    run = Run.open(path)
    recs = load_records(run)
    prof = profile_table(recs)
    decs = [d for d in recs.lead_decisions if d.valid or d.fallback]
    n = max(1, len(decs))
    started: dict[int, float] = {}
    walls = []
    for e in run.events():
        if e.kind == "episode_started":
            started[int(e.payload["episode"])] = e.time
        elif e.kind == "episode_finished" and int(e.payload["episode"]) in started:
            walls.append(e.time - started[int(e.payload["episode"])])
    row: dict[str, Any] = {
        "l1_weighted_mean": float(prof.weighted.mean()) if len(prof) else 0.0,
        "best_weighted": float(prof.weighted.max()) if len(prof) else 0.0,
        "versions": len(recs.hypotheses),
        "episodes": len(recs.episodes),
        "invalid_decisions": sum(not d.valid for d in recs.lead_decisions),
        "s_per_episode": sum(walls) / max(1, len(walls)),
    }
    for op in ("evolve", "repair", "crossover", "restart"):
        row[f"share_{op}"] = sum(d.operation == op for d in decs) / n
    return row


def omega_diagnostics(path: Path) -> dict[str, Any] | None:
    """Does omega rank the behaviour decisions by what they produced? From the recorded decision
    samples and the training campaigns' profiles: omega's range, and Spearman rho of omega with the
    decision's episode and with the mean Level-1 weighted profile of the versions its episode
    published (pooled over decisions, and the mean of the within-campaign rho)."""
    from scipy.stats import spearmanr

    run = Run.open(path)
    fit = run.events("theta_plus_policies")
    if not fit:
        return None
    rows = run.artifacts.get_json(fit[-1].payload["samples"])["rows"]
    quality: dict[tuple[str, int], float] = {}
    for camp in sorted({r["campaign"] for r in rows}):
        recs = load_records(path / "train" / camp)
        ep_of = {h.hypothesis_id: h.episode for h in recs.hypotheses}
        by_ep: dict[int, list[float]] = {}
        for p in recs.profiles:
            by_ep.setdefault(ep_of[p.hypothesis_id], []).append(p.weighted)
        for ep, v in by_ep.items():
            quality[(camp, ep)] = statistics.fmean(v)
    pts = [(r["omega"], r["episode"], quality.get((r["campaign"], r["episode"]))) for r in rows]
    pts = [p for p in pts if p[2] is not None]
    if len(pts) < 3:
        return None
    om = [p[0] for p in pts]
    within = []
    for camp in {r["campaign"] for r in rows}:
        cp = [(r["omega"], quality.get((camp, r["episode"]))) for r in rows if r["campaign"] == camp]
        cp = [c for c in cp if c[1] is not None]
        if len(cp) >= 3 and len({c[0] for c in cp}) > 1 and len({c[1] for c in cp}) > 1:
            within.append(float(spearmanr([c[0] for c in cp], [c[1] for c in cp]).statistic))
    positive = [o for o in om if o > 0]
    return {
        "decisions": len(pts),
        "omega_positive": len(positive),
        "omega_min_positive": min(positive) if positive else 0.0,
        "omega_max": max(om),
        "rho_omega_episode": float(spearmanr(om, [p[1] for p in pts]).statistic),
        "rho_omega_quality": float(spearmanr(om, [p[2] for p in pts]).statistic),
        "rho_omega_quality_within_campaign": statistics.fmean(within) if within else math.nan,
        "campaigns_with_within_rho": len(within),
    }


def policy_agreement(path: Path) -> dict[str, Any] | None:
    """How far apart the fitted theta+ policies are on the recorded decision states: per pair of arms,
    the share of states where their most probable operation agrees and the mean total-variation
    distance of their operation distributions (0: identical policies, 1: disjoint)."""
    run = Run.open(path)
    fit = run.events("theta_plus_policies")
    if not fit:
        return None
    p = fit[-1].payload
    states = [r["features"] for r in run.artifacts.get_json(p["samples"])["rows"]]
    pols = {a: OperationPolicy.from_json(run.artifacts.get_json(s)) for a, s in p["policies"].items()}
    out: dict[str, Any] = {}
    arms = sorted(pols)
    for i, a in enumerate(arms):
        for b in arms[i + 1 :]:
            agree, tv = [], []
            for x in states:
                pa, pb = pols[a].probabilities(x), pols[b].probabilities(x)
                ops = set(pa) | set(pb)
                agree.append(max(pa, key=pa.__getitem__) == max(pb, key=pb.__getitem__))
                tv.append(0.5 * sum(abs(pa.get(o, 0.0) - pb.get(o, 0.0)) for o in ops))
            out[f"{a}-{b}"] = {"argmax_agreement": statistics.fmean(agree), "mean_tv": statistics.fmean(tv)}
    return out


def split_probability(
    pa: dict[str, float], pb: dict[str, float], order: Sequence[str] | None = None
) -> float:
    """P(two policies choose different operations | one shared uniform draw u), each taking the
    operation whose cumulative-probability interval (in ``order``) holds u. It is at least their
    total-variation distance; 0 means a shared draw can never split them."""
    ops = list(order) if order is not None else sorted(set(pa) | set(pb))
    same, ca, cb = 0.0, 0.0, 0.0
    for o in ops:
        a0, a1 = ca, ca + pa.get(o, 0.0)
        b0, b1 = cb, cb + pb.get(o, 0.0)
        same += max(0.0, min(a1, b1) - max(a0, b0))
        ca, cb = a1, b1
    return max(0.0, 1.0 - same)


def decision_splits(
    policies: dict[str, OperationPolicy], states: Sequence[Sequence[float]], threshold: float = 0.05
) -> dict[str, dict[str, float]]:
    """Per pair of arms, over the decision states: the mean probability that one shared draw sends the
    two policies to different operations, and the share of states where it is at least ``threshold``."""
    from rsi_workbench.discovery.records import OPERATIONS

    out: dict[str, dict[str, float]] = {}
    arms = sorted(policies)
    for i, a in enumerate(arms):
        for b in arms[i + 1 :]:
            ps = [
                split_probability(
                    policies[a].probabilities(list(x)), policies[b].probabilities(list(x)), OPERATIONS
                )
                for x in states
            ]
            out[f"{a}-{b}"] = {
                "mean_split": statistics.fmean(ps) if ps else 0.0,
                "share_split_ge_threshold": statistics.fmean(p >= threshold for p in ps) if ps else 0.0,
                "threshold": threshold,
                "states": float(len(ps)),
            }
    return out
