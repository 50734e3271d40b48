"""``dreaming`` experiment: Dream-RSI's online-explore / replay / dream loop against fixed baselines.

For each seed and arm, one sub-run (``<out>/arms/<arm>-s<seed>/``) spends ``calls`` agent calls in
rounds of at most ``calls_per_round``; each round grows one real discovery tree (built-in SciPy
agent, W parallel workers). The ``dreaming`` arm then replays π0 and M−1 proposed revisions on all
its trees and deploys the argmax (ties to π0); fixed arms keep their policy. Everything is an event,
so the run resumes from its records and the replay-to-real gap is visible per round.

Event kinds (payload fields; every sub-run row also carries ``arm`` and ``seed``):
``tree_started`` (tree, grid_width, grid_depth, root_payload, root_score, policy, params, beta1, beta2),
``tree_node`` (tree, id, parent, created_seq, round, depth, score, value, valid, fail_class, error,
payload, move, seconds, calls, best_so_far), ``tree_recorded`` (tree, artifact, nodes, depth, branches,
best_score, invalid, errors, calls, best_so_far, rounds, V_online, wall_s), ``replay_scored`` (tree,
candidate, V, beta1, beta2, params, deployed), ``replay_tree_scored`` (tree = the dreaming round, candidate, tree_index, tree_name,
quality, n, k, V, grid_width, grid_depth), ``policy_deployed`` (tree, chosen, V_chosen, V_pi0, params,
beta1, beta2), ``arm_finished`` (arm, seed, calls, best, calls_to_target, rounds, wall_s).
"""

from __future__ import annotations

import math
import random
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from rsi_workbench.budget import AGENT_CALLS, BudgetLedger
from rsi_workbench.config import StrictModel
from rsi_workbench.domains.math import CirclePacking, DiscoveryTask, FirstAutocorrelation
from rsi_workbench.execute import Executor, make_executor
from rsi_workbench.records import Run, load_events
from rsi_workbench.replay.dreaming import adaptive_betas, dream
from rsi_workbench.experiments.dreaming.online import OnlineTree, explore_online
from rsi_workbench.replay.policies import ExplorationPolicy, PortfolioParams, PortfolioPolicy, baseline
from rsi_workbench.replay.simulator import replay_objective
from rsi_workbench.replay.tree import DiscoveryTree, Node

if TYPE_CHECKING:
    import pandas as pd

Arm = Literal["dreaming", "portfolio", "independent_roots", "greedy_deepest_best", "breadth_first"]
ALL_ARMS: tuple[Arm, ...] = (
    "dreaming",
    "portfolio",
    "independent_roots",
    "greedy_deepest_best",
    "breadth_first",
)


class TaskConfig(StrictModel):
    """Which discovery task, and how much local optimisation one attempt may do."""

    kind: Literal["circle_packing", "autocorrelation"] = "circle_packing"
    n: int = Field(default=26, ge=2, le=200, description="circles (circle_packing)")
    m: int = Field(default=60, ge=2, le=2000, description="step heights (autocorrelation)")
    maxiter: int = Field(default=150, ge=1, le=5000, description="local optimiser iterations per attempt")
    time_limit: float = Field(default=5.0, gt=0, description="seconds per attempt before a timeout failure")


class Config(StrictModel):
    experiment: Literal["dreaming"] = "dreaming"
    task: TaskConfig = Field(default_factory=TaskConfig)
    arms: list[Arm] = Field(default_factory=lambda: list(ALL_ARMS))
    seeds: list[int] = Field(default_factory=lambda: [0, 1, 2])
    W: int = Field(default=4, ge=1, le=64, description="parallel workers (batch width) in the paper's sense")
    executor: Literal["serial", "process"] = "process"
    workers: int = Field(default=2, ge=1, le=64, description="processes running attempts")
    calls: int = Field(default=200, ge=1, description="agent-call budget per arm and seed")
    calls_per_round: int = Field(
        default=40, ge=1, description="attempts per online round (one tree per round)"
    )
    max_rounds: int = Field(default=100, ge=1)
    warm_start: bool = Field(default=True, description="each new tree's root is the best state found so far")
    beta1: float = Field(default=2e-4, ge=0, description="replay cost per revealed node")
    beta2: float = Field(default=5e-4, ge=0, description="replay parallelism bonus per node per round")
    adaptive_beta: bool = Field(default=False, description="recalibrate β from the last online round")
    adaptive_c1: float = Field(default=0.5, ge=0)
    adaptive_ratio: float = Field(default=2.0, ge=0)
    candidates: int = Field(
        default=8, ge=1, le=256, description="M: π0 plus M−1 proposed revisions per round"
    )
    policy: PortfolioParams = Field(default_factory=PortfolioParams)  # type: ignore[arg-type]
    target_fraction: float = Field(
        0.999, gt=0, le=1, description="report calls to this fraction of best known"
    )


def make_task(cfg: TaskConfig) -> DiscoveryTask:
    if cfg.kind == "circle_packing":
        return CirclePacking(n=cfg.n, maxiter=cfg.maxiter, time_limit=cfg.time_limit)
    return FirstAutocorrelation(m=cfg.m, maxiter=cfg.maxiter)


def target_score(task: DiscoveryTask, fraction: float) -> float | None:
    """The score (higher is better) at ``fraction`` of the best-known value."""
    if task.best_known is None:
        return None
    return fraction * task.best_known if task.direction == "max" else -task.best_known / fraction


def arm_policy(arm: str, params: PortfolioParams) -> ExplorationPolicy:
    if arm in ("dreaming", "portfolio"):
        return PortfolioPolicy(params, name=arm)
    return baseline(arm)


# -- one arm ----------------------------------------------------------------------------------------
def run_arm(cfg: Config, arm: str, seed: int, path: Path, executor: Executor) -> dict[str, Any]:
    """Run (or resume) one arm for one seed in its own sub-run; returns its ``arm_finished`` payload."""
    from tqdm.auto import tqdm

    task = make_task(cfg.task)
    sub = Run.create(
        path, {"arm": arm, "seed": seed, **cfg.model_dump(mode="json")}, kind="dreaming_arm", exist_ok=True
    )
    with sub:
        done = sub.events("arm_finished")
        if done:
            return dict(done[-1].payload)
        ledger = BudgetLedger.open(sub, {AGENT_CALLS: cfg.calls})
        tag = {"arm": arm, "seed": seed}
        trees: list[DiscoveryTree] = [
            DiscoveryTree.from_json(
                sub.artifacts.get_json(e.payload["artifact"]), source=f"{path}:{e.payload['artifact']}"
            )
            for e in sub.events("tree_recorded")
        ]
        node_evs = sub.events("tree_node")
        wall = sum(float(e.payload.get("wall_s", 0.0)) for e in sub.events("tree_recorded"))
        best: tuple[float, str | None] = (-math.inf, None)  # (score, payload sha)
        for e in node_evs:
            p = e.payload
            if p["valid"] and p["score"] is not None and p["score"] > best[0]:
                best = (p["score"], p["payload"])
        calls = len(node_evs)
        deployed = sub.events("policy_deployed")
        params = PortfolioParams(**deployed[-1].payload["params"]) if deployed else cfg.policy
        betas = (cfg.beta1, cfg.beta2)
        if deployed:
            betas = (deployed[-1].payload["beta1"], deployed[-1].payload["beta2"])
        target = target_score(task, cfg.target_fraction)
        bar = tqdm(total=cfg.calls, initial=calls, desc=f"{arm} s{seed}", unit="call", leave=False)

        def dream_after(t: int) -> None:
            nonlocal params, betas
            if cfg.adaptive_beta:
                started = sub.events("tree_started")[t].payload
                betas = adaptive_betas(
                    trees[t], started["root_score"], c1=cfg.adaptive_c1, ratio=cfg.adaptive_ratio
                )
            res = dream(
                params,
                trees,
                W=cfg.W,
                beta1=betas[0],
                beta2=betas[1],
                M=cfg.candidates,
                rng=random.Random(seed * 1_000_003 + t),
            )
            for i, (c, s) in enumerate(zip(res.candidates, res.scores)):
                sub.append(
                    "replay_scored",
                    {
                        **tag,
                        "tree": t,
                        "candidate": i,
                        "V": s.V,
                        "beta1": betas[0],
                        "beta2": betas[1],
                        "params": c.model_dump(),
                        "deployed": i == res.chosen,
                    },
                    cycle=t,
                )
                for row in s.per_tree:
                    named = {("tree_name" if k == "tree" else k): v for k, v in row.items()}
                    sub.append("replay_tree_scored", {**tag, **named, "tree": t, "candidate": i}, cycle=t)
            params = res.candidates[res.chosen]
            sub.append(
                "policy_deployed",
                {
                    **tag,
                    "tree": t,
                    "chosen": res.chosen,
                    "V_chosen": res.V[res.chosen],
                    "V_pi0": res.V[0],
                    "params": params.model_dump(),
                    "beta1": betas[0],
                    "beta2": betas[1],
                },
                cycle=t,
            )
            sub.commit()

        if arm == "dreaming" and trees and len(deployed) < len(trees):
            dream_after(len(trees) - 1)  # crashed between recording a tree and dreaming on it
        t = len(trees)
        while ledger.remaining(AGENT_CALLS) >= 1 and t < cfg.max_rounds:
            t0 = time.perf_counter()
            policy = arm_policy(arm, params)
            started = [e.payload for e in sub.events("tree_started") if e.payload["tree"] == t]
            if not started:
                grid = policy.plan_grid(trees)
                root_sha = best[1] if cfg.warm_start else None
                root_score = best[0] if (cfg.warm_start and best[1]) else None
                sub.append(
                    "tree_started",
                    {
                        **tag,
                        "tree": t,
                        "grid_width": grid[0],
                        "grid_depth": grid[1],
                        "root_payload": root_sha,
                        "root_score": root_score,
                        "policy": policy.name,
                        "params": params.model_dump() if arm in ("dreaming", "portfolio") else None,
                        "beta1": betas[0],
                        "beta2": betas[1],
                    },
                    cycle=t,
                )
                sub.commit()
                started = [sub.events("tree_started")[-1].payload]
            st = started[0]
            root_state = sub.artifacts.get_json(st["root_payload"]) if st["root_payload"] else None
            prior = [e.payload for e in node_evs if e.payload["tree"] == t]
            otree = OnlineTree(
                index=t,
                grid=(st["grid_width"], st["grid_depth"]),
                root_state=root_state,
                nodes=[
                    Node(
                        **{
                            k: p[k]
                            for k in (
                                "id",
                                "parent",
                                "created_seq",
                                "round",
                                "score",
                                "valid",
                                "fail_class",
                                "error",
                                "payload",
                            )
                        }
                    )
                    for p in prior
                ],
            )
            for p in prior:
                otree.states[p["id"]] = sub.artifacts.get_json(p["payload"])

            def on_node(node: Node, res: Any, t: int = t, otree: OnlineTree = otree) -> None:
                nonlocal best, calls
                calls += 1
                if node.valid and node.score is not None and node.score > best[0]:
                    best = (node.score, node.payload)
                sub.append(
                    "tree_node",
                    {
                        **tag,
                        "tree": t,
                        "id": node.id,
                        "parent": node.parent,
                        "created_seq": node.created_seq,
                        "round": node.round,
                        "depth": otree.view.depth_of(node.id),
                        "score": node.score,
                        "value": node.meta.get("value"),
                        "valid": node.valid,
                        "fail_class": node.fail_class,
                        "error": node.error,
                        "payload": node.payload,
                        "move": node.meta.get("move"),
                        "seconds": node.meta.get("seconds"),
                        "reason": node.meta.get("reason"),
                        "calls": calls,
                        "best_so_far": None if best[1] is None else best[0],
                    },
                    cycle=t,
                )
                bar.update(1)

            remaining = int(ledger.remaining(AGENT_CALLS))
            explore_online(
                task,
                policy,
                otree,
                W=cfg.W,
                calls=min(cfg.calls_per_round, len(prior) + remaining),
                executor=executor,
                seed=seed,
                ledger=ledger,
                store_state=lambda s: sub.artifacts.put_json(s, name="candidate.json"),
                on_node=on_node,
                on_round_end=sub.commit,
            )
            tree = otree.to_tree(
                name=f"{arm}-s{seed}-t{t}",
                direction=task.direction,
                meta={
                    "task": task.name,
                    "W": cfg.W,
                    "root_score": st["root_score"],
                    "grid": [st["grid_width"], st["grid_depth"]],
                    "policy": policy.name,
                },
            )
            if not len(tree):
                break  # the policy stopped before any attempt; nothing more will happen
            sha = sub.artifacts.put_json(tree.to_json(), name=f"tree-{t}.json")
            s = tree.summary()
            b = tree.best()
            n_rounds = max(v.round for v in tree)
            dt = time.perf_counter() - t0
            wall += dt
            sub.append(
                "tree_recorded",
                {
                    **tag,
                    "tree": t,
                    "artifact": sha,
                    **s,
                    "calls": calls,
                    "best_so_far": None if best[1] is None else best[0],
                    "rounds": n_rounds,
                    "V_online": replay_objective(
                        b.score if b and b.score is not None else 0.0, len(tree), n_rounds, betas[0], betas[1]
                    ),
                    "wall_s": dt,
                },
                cycle=t,
            )
            sub.commit()
            trees.append(tree)
            node_evs = sub.events("tree_node")
            if arm == "dreaming":
                dream_after(t)
            t += 1
        bar.close()
        reach = None
        if target is not None:
            for e in sub.events("tree_node"):
                if e.payload["best_so_far"] is not None and e.payload["best_so_far"] >= target:
                    reach = e.payload["calls"]
                    break
        fin = {
            **tag,
            "calls": calls,
            "budget": cfg.calls,
            "best": None if best[1] is None else best[0],
            "calls_to_target": reach,
            "target": target,
            "rounds": len(trees),
            "wall_s": wall,
        }
        sub.append("arm_finished", fin)
        sub.commit()
        return fin


def run_experiment(config: Config, out: Path, *, resume: bool = False) -> Path:
    """Every (seed, arm) pair in turn, each in a resumable sub-run; summary events in ``out``."""
    run = Run.create(out, config, kind="dreaming", exist_ok=resume)
    with run:
        finished = {(e.payload["arm"], e.payload["seed"]) for e in run.events("arm_finished")}
        t0 = time.perf_counter()
        with make_executor(config.executor, config.workers) as ex:
            for seed in config.seeds:
                for arm in config.arms:
                    if (arm, seed) in finished:
                        continue
                    fin = run_arm(config, arm, seed, Path(out) / "arms" / f"{arm}-s{seed}", ex)
                    run.append("arm_finished", fin)
                    run.commit()
        run.append("experiment_session", {"wall_s": time.perf_counter() - t0})
        run.commit()
    return Path(out)


# -- reading results --------------------------------------------------------------------------------
def load_frames(path: str | Path, kind: str) -> pd.DataFrame:
    """One event kind across every arm/seed sub-run of a dreaming experiment, as one DataFrame."""
    import pandas as pd

    subs = sorted((Path(path) / "arms").glob("*-s*"))
    frames = [load_events(p, kind=kind) for p in subs if (p / "events.jsonl").exists()]
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def load_trees(path: str | Path) -> dict[tuple[str, int], list[DiscoveryTree]]:
    """Every recorded tree of a dreaming experiment, per (arm, seed), in round order (sha256-verified)."""
    out: dict[tuple[str, int], list[DiscoveryTree]] = {}
    for sub in sorted((Path(path) / "arms").glob("*-s*")):
        if not (sub / "events.jsonl").exists():
            continue
        run = Run.open(sub)
        for e in run.events("tree_recorded"):
            key = (str(e.payload["arm"]), int(e.payload["seed"]))
            obj = run.artifacts.get_json(e.payload["artifact"])
            out.setdefault(key, []).append(
                DiscoveryTree.from_json(obj, source=f"{sub}:{e.payload['artifact']}")
            )
    return out


def rescore_frame(scores: pd.DataFrame, beta1: float, beta2: float) -> pd.DataFrame:
    """Recompute V for other β1, β2 from ``replay_tree_scored`` rows (columns quality, n, k) — pure,
    no replay needed because policies never read β. Adds ``V_rescored``; group by tree/candidate and
    average to get V^m."""
    df = scores.copy()
    df["V_rescored"] = [
        replay_objective(float(q), int(n), int(k), beta1, beta2)
        for q, n, k in zip(df["quality"], df["n"], df["k"])
    ]
    return df


def best_at(nodes: pd.DataFrame, calls: int) -> float | None:
    """Best valid score within the first ``calls`` attempts of one arm/seed."""
    df = nodes[(nodes["calls"] <= calls) & nodes["best_so_far"].notna()]
    return None if df.empty else float(df["best_so_far"].max())


def calls_to_reach(nodes: pd.DataFrame, target: float) -> int | None:
    """First call count at which one arm/seed's best valid score reaches ``target`` (None = censored)."""
    hit = nodes[nodes["best_so_far"].notna() & (nodes["best_so_far"] >= target)]
    return None if hit.empty else int(hit["calls"].min())


def report(path: str | Path) -> str:
    """Best score vs calls per arm (mean over seeds), calls to the target (censored runs marked), and
    per-round dreaming choices with the replay-to-real gap."""
    import numpy as np

    path = Path(path)
    run = Run.open(path)
    cfg = Config(**run.config)
    task = make_task(cfg.task)
    fins = {(e.payload["arm"], e.payload["seed"]): e.payload for e in run.events("arm_finished")}
    nodes = load_frames(path, "tree_node")
    marks = sorted({max(1, cfg.calls // 4), max(1, cfg.calls // 2), max(1, 3 * cfg.calls // 4), cfg.calls})
    tgt = target_score(task, cfg.target_fraction)
    lines = [
        f"dreaming experiment — {path}",
        f"task {task.name}  best known {task.best_known}  target {cfg.target_fraction:g}×best = {tgt}",
        f"W={cfg.W} calls/arm={cfg.calls} calls/round={cfg.calls_per_round} seeds={cfg.seeds} "
        f"β1={cfg.beta1:g} β2={cfg.beta2:g}{' (adaptive)' if cfg.adaptive_beta else ''} M={cfg.candidates}",
        "",
        "best valid score after N agent calls (mean over seeds) and calls to reach the target per seed",
        f"{'arm':<22}"
        + "".join(f"{'@' + str(m):>11}" for m in marks)
        + "   calls to target (per seed; '>B' = censored)",
    ]
    for arm in cfg.arms:
        row = f"{arm:<22}"
        for m in marks:
            got = (
                [best_at(nodes[(nodes["arm"] == arm) & (nodes["seed"] == s)], m) for s in cfg.seeds]
                if len(nodes)
                else []
            )
            vals = [float(v) for v in got if v is not None]
            row += f"{np.mean(vals):>11.6f}" if vals else f"{'-':>11}"
        reach = []
        for s in cfg.seeds:
            f = fins.get((arm, s))
            if f is None:
                reach.append("n/a")
            elif f["calls_to_target"] is None:
                reach.append(f">{f['calls']}")
            else:
                reach.append(str(f["calls_to_target"]))
        lines.append(row + "   " + ", ".join(reach))
    dep = load_frames(path, "policy_deployed")
    rec = load_frames(path, "tree_recorded")
    if len(dep):
        lines += [
            "",
            "dreaming rounds: replay V of π0 vs the deployed choice, and the next real tree",
            f"{'seed':>4} {'after tree':>10} {'chosen':>6} {'V_pi0':>10} {'V_chosen':>10} "
            f"{'next best':>10} {'next V_online':>13}",
        ]
        for _, d in dep.sort_values(["seed", "tree"]).iterrows():
            nxt = rec[
                (rec["arm"] == "dreaming") & (rec["seed"] == d["seed"]) & (rec["tree"] == d["tree"] + 1)
            ]
            nb = (
                f"{nxt['best_score'].iloc[0]:.6f}"
                if len(nxt) and nxt["best_score"].iloc[0] == nxt["best_score"].iloc[0]
                else "-"
            )
            nv = f"{nxt['V_online'].iloc[0]:.6f}" if len(nxt) else "-"
            lines.append(
                f"{int(d['seed']):>4} {int(d['tree']):>10} {int(d['chosen']):>6} {d['V_pi0']:>10.6f} "
                f"{d['V_chosen']:>10.6f} {nb:>10} {nv:>13}"
            )
        changed = int((dep["chosen"] != 0).sum())
        lines.append(f"revisions deployed: {changed}/{len(dep)} rounds")
    if len(nodes) and task.best_known is not None:
        fracs = [0.995, 0.998, cfg.target_fraction]
        lines += [
            "",
            "calls to reach a fraction of the best known (per seed; '>N' = censored at N calls)",
            f"{'arm':<22}" + "".join(f"{fr:>22.3%}" for fr in fracs),
        ]
        for arm in cfg.arms:
            row = f"{arm:<22}"
            for frac in fracs:
                tg = target_score(task, frac)
                cells = []
                for s in cfg.seeds:
                    ns = nodes[(nodes["arm"] == arm) & (nodes["seed"] == s)]
                    if ns.empty:
                        cells.append("n/a")
                        continue
                    c = calls_to_reach(ns, tg) if tg is not None else None
                    cells.append(str(c) if c is not None else f">{int(ns['calls'].max())}")
                row += f"{', '.join(cells):>22}"
            lines.append(row)
    if len(rec):
        lines += ["", f"{'arm':<22} {'trees':>5} {'nodes':>6} {'invalid':>7} {'errors':>6} {'wall s':>8}"]
        for arm in cfg.arms:
            r = rec[rec["arm"] == arm]
            if len(r):
                lines.append(
                    f"{arm:<22} {len(r):>5} {int(r['nodes'].sum()):>6} {int(r['invalid'].sum()):>7} "
                    f"{int(r['errors'].sum()):>6} {r['wall_s'].sum():>8.1f}"
                )
    text = "\n".join(lines)
    (path / "report.txt").write_text(text + "\n")
    return text
