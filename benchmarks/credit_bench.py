"""Credit pipeline (DiscoveryRSI eq. 2-7, 9) on synthetic record sets at the paper's scale and 10x.

Paper scale: 15,792 collected trajectories (Table 4 role mix) and 1,176 hypothesis versions, with a
few Critique comparisons per hypothesis. Prints the seconds per stage at 1x and 10x side by side
and their ratio. Run: ``python benchmarks/credit_bench.py [--comparisons-per-hypothesis 3]``.
"""

from __future__ import annotations

import argparse
import platform
import random
import time
from datetime import UTC, datetime

from rsi_workbench.discovery import credit as C

ROLE_MIX = {
    "lead": 3423,
    "generation": 2502,
    "evolution": 2310,
    "critique": 4988,
    "compiler": 2056,
    "progress": 513,
}
N_HYPOTHESES = 1176


def synthetic_records(scale: int, comparisons_per_h: int, seed: int = 0) -> C.CreditRecords:
    """A research-graph-shaped record set: episodes of 20 hypotheses, Lead/Generation/Evolution edges, Critique noise."""
    rng = random.Random(seed)
    n_h = N_HYPOTHESES * scale
    trajs: dict[str, C.TrajectoryNode] = {}
    by_role: dict[str, list[str]] = {}
    n_ep = max(1, n_h // 20)
    for role, n in ROLE_MIX.items():
        ids = []
        for k in range(n * scale):
            tid = f"{role[:3]}{k}"
            ep = f"e{k % n_ep}"
            dom = "bio" if k % 10 else "battery"
            trajs[tid] = C.TrajectoryNode(
                tid,
                role,
                agent=tid,
                episode=ep,
                domain=dom,
                group=f"g{k % 4}",
                started_at=0.0,  # type: ignore[arg-type]
                text_sha256s=frozenset({f"P{tid}"}) if role == "evolution" else frozenset(),
            )
            ids.append(tid)
        by_role[role] = ids
    hyps: dict[str, C.HypothesisNode] = {}
    claims: list[C.ContributionClaim] = []
    assignments: dict[str, C.Assignment] = {}
    for k in range(n_h):
        hid = f"h{k}"
        gen = by_role["generation"][k % len(by_role["generation"])]
        evo = by_role["evolution"][rng.randrange(len(by_role["evolution"]))]
        lead = by_role["lead"][k % len(by_role["lead"])]
        hyps[hid] = C.HypothesisNode(
            hid,
            domain=trajs[gen].domain,
            round=k % 2,
            episode=trajs[gen].episode,
            publisher=gen,
            created_at=1.0,
            proposal_sha256=f"P{evo}",
            local_family=f"L{k // 4}",
            global_family=f"G{k // 12}",
            duplicate_key=f"d{k // 2}" if rng.random() < 0.02 else None,
        )
        assignments[f"as{k}"] = C.Assignment(f"as{k}", frozenset({hid}), lead)
        claims += [
            C.ContributionClaim(lead, hid, "assignment", f"as{k}"),
            C.ContributionClaim(gen, hid, "direct_publication"),
            C.ContributionClaim(evo, hid, "proposal_text"),
            C.ContributionClaim(
                by_role["critique"][rng.randrange(len(by_role["critique"]))], hid, "worker_call"
            ),
            C.ContributionClaim(
                by_role["evolution"][rng.randrange(len(by_role["evolution"]))], hid, "shared_episode"
            ),
        ]
    hs = list(hyps)
    comps = []
    for _ in range(n_h * comparisons_per_h):
        a, b = rng.sample(hs, 2)
        comps.append(C.Comparison(a, b, rng.choices(["a", "b", "tie", "abstain"], [4, 4, 1, 1])[0]))
    assess = [
        C.Assessment(h, valid=rng.random() > 0.05, progress=rng.choice(C.PROGRESS_LABELS + (None,)))  # type: ignore[arg-type]
        for h in hs
        if rng.random() > 0.03
    ]
    return C.CreditRecords(hyps, trajs, comps, assess, claims, {}, assignments)


def run_stages(recs: C.CreditRecords) -> dict[str, float]:
    s = C.CreditSettings()
    t: dict[str, float] = {}
    t0 = time.perf_counter()
    ratings = C.rate_hypotheses(recs.comparisons, recs.hypotheses, s.trueskill)
    t["eq. 2 TrueSkill ratings"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    weights = C.hypothesis_weights(ratings, recs.assessments, recs.hypotheses, s.weight)
    t["eq. 3-5 hypothesis weights q"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    dec = C.admit_edges(recs.claims, recs.trajectories, recs.hypotheses, recs.promotions, recs.assignments)
    edges = [
        C.ContributionEdge(d.claim.trajectory, d.claim.hypothesis, d.kind, d.claim.basis)
        for d in dec
        if d.admitted and d.kind
    ]
    t["eq. 6 edge admission"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    alpha = C.contributor_shares(edges, s.shares.gamma)
    capped = C.family_caps({h: w.q for h, w in weights.items() if w.q is not None}, recs.hypotheses)
    w, _b = C.trajectory_weights(alpha, {h: c.q_tilde for h, c in capped.items()}, s.shares.w_max)
    t["eq. 6-7 shares, caps, w"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    rel = C.training_weights(w, recs.trajectories, {"bio": 0.9, "battery": 0.1})
    t["eq. 9 omega release"] = time.perf_counter() - t0
    t["total"] = sum(t.values())
    t["_trained"] = float(len(rel.omega))
    t["_edges"] = float(len(edges))
    return t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--comparisons-per-hypothesis", type=int, default=3)
    args = ap.parse_args()
    res = {}
    for scale in (1, 10):
        recs = synthetic_records(scale, args.comparisons_per_hypothesis)
        res[scale] = run_stages(recs)
        print(
            f"{scale}x: {len(recs.hypotheses)} hypotheses, {len(recs.trajectories)} trajectories, "
            f"{len(recs.comparisons)} comparisons, {len(recs.claims)} claims -> {int(res[scale]['_edges'])} edges, "
            f"{int(res[scale]['_trained'])} trajectories with omega > 0"
        )
    print(
        f"\nmachine: {platform.processor() or platform.machine()}, python {platform.python_version()}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    )
    print("\n| stage | 1x (s) | 10x (s) | 10x / 1x |\n|---|---:|---:|---:|")
    for k in res[1]:
        if not k.startswith("_"):
            print(f"| {k} | {res[1][k]:.3f} | {res[10][k]:.3f} | {res[10][k] / max(res[1][k], 1e-9):.1f} |")


if __name__ == "__main__":
    main()
