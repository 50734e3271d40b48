"""One arm of Dream-RSI's loop on a discovery task for one seed, in its own resumable sub-run.

Each round is *online exploration*: the arm's exploration policy grows one real discovery tree
(:meth:`ArmRun.online_round`), recorded node by node and then whole; the recorded trees are the
*replay simulator's* history. After each tree the ``dreaming`` arm does *dreaming-based policy
improvement* (:meth:`ArmRun.dream_after`): π0 and M−1 proposed revisions are replayed on every tree
so far and the argmax is deployed (ties to π0). Fixed arms keep their policy. All state is derived
from the sub-run's events, so an interrupted arm resumes where its records end. The arm reads its
own settings block (:class:`ArmSettings`: budget, β, candidates, writer), which the ``dreaming``
experiment's config extends with its arms, seeds, executor and task.
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from rsi_workbench.budget import AGENT_CALLS, BudgetLedger
from rsi_workbench.config import StrictModel
from rsi_workbench.domains.math.candidates import DiverseProposer, DreamingSettings, current_source, label_of
from rsi_workbench.domains.math.online import OnlineTree, explore_online
from rsi_workbench.domains.math.policy_writer import (
    WriterSettings,
    candidate_payload,
    load_program,
    open_writer,
)
from rsi_workbench.domains.math.settings import target_score
from rsi_workbench.domains.math.task import DiscoveryTask
from rsi_workbench.execute import Executor
from rsi_workbench.records import Run
from rsi_workbench.replay.dreaming import adaptive_betas, dream
from rsi_workbench.replay.policies import (
    BASELINES,
    ExplorationPolicy,
    PortfolioParams,
    PortfolioPolicy,
    baseline,
)
from rsi_workbench.replay.policy_writer import PolicyWriter
from rsi_workbench.replay.sandboxed import GuardedPolicy, PolicyFailure, PolicyProgram, SandboxedPolicy
from rsi_workbench.replay.simulator import LegalSet, replay_objective
from rsi_workbench.replay.tree import DiscoveryTree, Node

Arm = Literal[
    "dreaming",
    "dreaming_writer",
    "dreaming_diverse",
    "portfolio",
    "independent_roots",
    "greedy_deepest_best",
    "breadth_first",
]
#: arms that dream after each tree: parameter mutations (``dreaming``), a model writing policy code
#: (``dreaming_writer``) or the ``dreaming.candidates`` set: fixed families beside π0 and its mutations
DREAMING_ARMS = ("dreaming", "dreaming_writer", "dreaming_diverse")
ALL_ARMS: tuple[Arm, ...] = (
    "dreaming",
    "portfolio",
    "independent_roots",
    "greedy_deepest_best",
    "breadth_first",
)


class RecordingSettings(StrictModel):
    """How a dreaming arm records the trees it replays, so that replay can tell policies apart.

    Without a node budget every family that does not stop reveals the whole recorded tree, so the
    families tie in V. With this block the arm's online trees are recorded by a broad *behaviour*
    policy with ``factor`` × ``calls_per_round`` attempts each, and every candidate is replayed on
    them with a per-tree ``node_budget`` (default: ``calls_per_round``, the deployed budget), so
    the families reveal different subsets. The recording spends the arm's ``calls`` budget
    (``factor`` times faster); the dreaming loop's deployment choices are its result.
    """

    behaviour: str | None = Field(
        default="breadth_first",
        description="fixed family that grows the recorded trees (None: the deployed policy)",
    )
    factor: float = Field(
        default=3.0, ge=1.0, le=20.0, description="recorded attempts per tree ÷ calls_per_round"
    )
    node_budget: int | None = Field(
        default=None, ge=1, description="replay budget of choices per tree (default: calls_per_round)"
    )
    legal: LegalSet = Field(
        default="online",
        description="legal set in replay: 'online' ({r} ∪ leaves; choices the record never continued are "
        "reported as out-of-tree) or 'recorded' (only nodes the record continues)",
    )

    @field_validator("behaviour")
    @classmethod
    def _known_family(cls, v: str | None) -> str | None:
        if v is not None and v not in BASELINES:
            raise ValueError(f"unknown behaviour family {v!r}; one of {sorted(BASELINES)}")
        return v


class ArmSettings(StrictModel):
    """What one arm reads: batch width, agent-call budget, rounds, β, the dreaming candidates (M, the
    ``dreaming:`` set, the ``writer:``), π0's parameters and the target fraction."""

    W: int = Field(default=4, ge=1, le=64, description="parallel workers (batch width) in the paper's sense")
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
    writer: WriterSettings | None = Field(
        default=None, description="the dreaming_writer arm's policy writer (default: the offline model)"
    )
    target_fraction: float = Field(
        0.999, gt=0, le=1, description="report calls to this fraction of best known"
    )
    dreaming: DreamingSettings | None = Field(
        default=None, description="the dreaming_diverse arm's candidate set (families, mutations)"
    )
    recording: RecordingSettings | None = Field(
        default=None,
        description="dreaming arms: record trees with a broad behaviour policy and a larger budget, "
        "replay candidates under a node budget (None: the deployed policy records, no budget)",
    )

    def replay_budget(self) -> dict[str, Any]:
        """The dreaming replay's ``node_budget`` and ``legal`` (none and 'recorded' without ``recording``)."""
        rec = self.recording
        if rec is None:
            return {"node_budget": None, "legal": "recorded"}
        return {"node_budget": rec.node_budget or self.calls_per_round, "legal": rec.legal}

    def recorded_calls(self) -> int:
        """Attempts per online tree: ``calls_per_round``, times ``recording.factor`` when recording."""
        f = 1.0 if self.recording is None else self.recording.factor
        return max(1, round(f * self.calls_per_round))


def arm_policy(arm: str, params: PortfolioParams) -> ExplorationPolicy:
    """An arm's starting policy: the portfolio with ``params`` for the dreamers, else the fixed family."""
    if arm in (*DREAMING_ARMS, "portfolio"):
        return PortfolioPolicy(params, name=arm)
    return baseline(arm)


_NODE_FIELDS = ("id", "parent", "created_seq", "round", "score", "valid", "fail_class", "error", "payload")


class ArmRun:
    """The state of one arm's sub-run, rebuilt from its events: recorded trees, attempts spent, the
    best valid state so far (warm-start root), and the deployed policy parameters and β."""

    def __init__(self, cfg: ArmSettings, task: DiscoveryTask, arm: str, seed: int, path: Path, sub: Run):
        self.cfg, self.arm, self.seed, self.path, self.sub = cfg, arm, seed, path, sub
        self.task = task
        self.ledger = BudgetLedger.open(sub, {AGENT_CALLS: cfg.calls})
        self.tag = {"arm": arm, "seed": seed}
        self.trees: list[DiscoveryTree] = [
            DiscoveryTree.from_json(
                sub.artifacts.get_json(e.payload["artifact"]), source=f"{path}:{e.payload['artifact']}"
            )
            for e in sub.events("tree_recorded")
        ]
        self.node_evs = sub.events("tree_node")
        self.wall = sum(float(e.payload.get("wall_s", 0.0)) for e in sub.events("tree_recorded"))
        self.best: tuple[float, str | None] = (-math.inf, None)  # (score, payload sha)
        for e in self.node_evs:
            p = e.payload
            if p["valid"] and p["score"] is not None and p["score"] > self.best[0]:
                self.best = (p["score"], p["payload"])
        self.calls = len(self.node_evs)
        self.deployed = sub.events("policy_deployed")
        self.params: PortfolioParams = (
            PortfolioParams(**self.deployed[-1].payload["params"]) if self.deployed else cfg.policy
        )
        self.program: PolicyProgram | None = (  # a written policy deployed (params: its fallback)
            load_program(sub, self.deployed[-1].payload.get("program")) if self.deployed else None
        )
        #: a fixed family deployed by ``dreaming_diverse`` (params: the last portfolio parameters)
        self.family: str | None = self.deployed[-1].payload.get("family") if self.deployed else None
        self.writer_cfg = cfg.writer or WriterSettings()
        self.writer: PolicyWriter | None = None
        self.betas: tuple[float, float] = (cfg.beta1, cfg.beta2)
        if self.deployed:
            self.betas = (self.deployed[-1].payload["beta1"], self.deployed[-1].payload["beta2"])
        self.target = target_score(self.task, cfg.target_fraction)
        self.bar: Any = None

    def run(self, executor: Executor) -> dict[str, Any]:
        """Rounds until the agent-call budget or ``max_rounds`` is spent; the ``arm_finished`` payload."""
        from tqdm.auto import tqdm

        cfg = self.cfg
        self.bar = tqdm(
            total=cfg.calls, initial=self.calls, desc=f"{self.arm} s{self.seed}", unit="call", leave=False
        )
        if self.arm in DREAMING_ARMS and self.trees and len(self.deployed) < len(self.trees):
            self.dream_after(len(self.trees) - 1)  # crashed between recording a tree and dreaming on it
        t = len(self.trees)
        while self.ledger.remaining(AGENT_CALLS) >= 1 and t < cfg.max_rounds:
            if not self.online_round(t, executor):
                break  # the policy stopped before any attempt; nothing more will happen
            if self.arm in DREAMING_ARMS:
                self.dream_after(t)
            t += 1
        self.bar.close()
        return self.finish()

    # -- dreaming-based policy improvement ---------------------------------------------------------
    def dream_after(self, t: int) -> None:
        """Replay π0 and M−1 revisions on every recorded tree after tree ``t``; deploy the argmax."""
        cfg, sub = self.cfg, self.sub
        if cfg.adaptive_beta:
            started = sub.events("tree_started")[t].payload
            self.betas = adaptive_betas(
                self.trees[t], started["root_score"], c1=cfg.adaptive_c1, ratio=cfg.adaptive_ratio
            )
        betas = self.betas
        current = current_source(self.family, self.program, self.params)
        proposer = self._proposer(current)
        res = dream(
            current,
            self.trees,
            W=cfg.W,
            beta1=betas[0],
            beta2=betas[1],
            M=1 + proposer.size() if isinstance(proposer, DiverseProposer) else cfg.candidates,
            rng=random.Random(self.seed * 1_000_003 + t),
            proposer=proposer,
            limits=self.writer_cfg.limits(),
            **cfg.replay_budget(),
        )
        labels = [label_of(c, cfg.policy) for c in res.candidates]
        for i, (c, s, f) in enumerate(zip(res.candidates, res.scores, res.failures)):
            sub.append(
                "replay_scored",
                {
                    **self.tag,
                    "tree": t,
                    "candidate": i,
                    "V": s.V,
                    "beta1": betas[0],
                    "beta2": betas[1],
                    **candidate_payload(sub, c, f),
                    **({"origin": "family"} if isinstance(c, ExplorationPolicy) else {}),
                    "label": labels[i],
                    "deployed": i == res.chosen,
                },
                cycle=t,
            )
            for row in s.per_tree:
                named = {("tree_name" if k == "tree" else k): v for k, v in row.items()}
                sub.append("replay_tree_scored", {**self.tag, **named, "tree": t, "candidate": i}, cycle=t)
        chosen = res.candidates[res.chosen]
        if isinstance(chosen, PolicyProgram):
            self.program, self.family = chosen, None
        elif isinstance(chosen, PortfolioParams):
            self.params, self.program, self.family = chosen, None, None
        else:  # a fixed family (dreaming_diverse): the portfolio parameters stay what mutations start from
            self.program, self.family = None, labels[res.chosen]
        sub.append(
            "policy_deployed",
            {
                **self.tag,
                "tree": t,
                "chosen": res.chosen,
                "V_chosen": res.V[res.chosen],
                "V_pi0": res.V[0],
                "params": self.params.model_dump(),
                "program": candidate_payload(sub, self.program, None)["program"] if self.program else None,
                "failed": sum(f is not None for f in res.failures),
                "family": self.family,
                "label": labels[res.chosen],
                "beta1": betas[0],
                "beta2": betas[1],
            },
            cycle=t,
        )
        sub.commit()

    def _proposer(self, current: Any) -> PolicyWriter | DiverseProposer | None:
        """``dreaming``: parameter mutations (dream's default); ``dreaming_writer``: the model, opened
        once; ``dreaming_diverse``: π0, the fixed families and mutations (``dreaming.candidates``)."""
        if self.arm == "dreaming_diverse":
            cs = self.cfg.dreaming.candidates if self.cfg.dreaming else None
            if cs is None:
                raise ValueError("arm dreaming_diverse needs a `dreaming: {candidates: ...}` block")
            return DiverseProposer(
                cs.families,
                cs.mutations,
                self.cfg.policy,
                base=self.params,
                exclude=label_of(current, self.cfg.policy),
                keep_pi0=cs.pi0,
            )
        if self.arm == "dreaming_writer" and self.writer is None:
            self.writer = open_writer(self.writer_cfg, self.sub)
        return self.writer

    def _policy(self, t: int) -> ExplorationPolicy:
        """The deployed policy; a written program runs sandboxed, guarded by the portfolio fallback.
        A dreaming arm with ``recording.behaviour`` grows its trees with that family instead."""
        rec = self.cfg.recording
        if self.arm in DREAMING_ARMS and rec is not None and rec.behaviour is not None:
            return baseline(rec.behaviour)
        if self.family is not None:
            return baseline(self.family)
        policy = arm_policy(self.arm, self.params)
        if self.program is None:
            return policy

        def failed(f: PolicyFailure) -> None:
            self.sub.append("policy_failed_online", {**self.tag, "tree": t, **f.to_json()}, cycle=t)

        lim = self.writer_cfg.limits()  # online: the tree budget counts the policy's calls, not the attempts
        online = dataclasses.replace(lim, session_wall_s=max(lim.session_wall_s, 86_400.0))
        prog = SandboxedPolicy(
            self.program, name=f"{self.arm}-program", limits=online, policy_time_s=lim.session_wall_s
        )
        prog.grant.record_in(self.sub)  # a resumed arm may deploy a program before its writer opens
        return GuardedPolicy(prog, policy, failed)

    # -- online exploration --------------------------------------------------------------------------
    def online_round(self, t: int, executor: Executor) -> bool:
        """Grow and record real tree ``t`` (resuming its recorded attempts); False if it stayed empty."""
        t0 = time.perf_counter()
        policy = self._policy(t)
        st = self._tree_start(t, policy)
        otree, prior = self._online_tree(t, st)
        remaining = int(self.ledger.remaining(AGENT_CALLS))

        def on_node(node: Node, res: Any, t: int = t, otree: OnlineTree = otree) -> None:
            self._record_node(t, otree, node)

        explore_online(
            self.task,
            policy,
            otree,
            W=self.cfg.W,
            calls=min(
                self.cfg.recorded_calls() if self.arm in DREAMING_ARMS else self.cfg.calls_per_round,
                len(prior) + remaining,
            ),
            executor=executor,
            seed=self.seed,
            ledger=self.ledger,
            store_state=lambda s: self.sub.artifacts.put_json(s, name="candidate.json"),
            on_node=on_node,
            on_round_end=self.sub.commit,
        )
        if isinstance(policy, GuardedPolicy):
            policy.close()
        return self._record_tree(t, st, otree, policy, t0)

    def _tree_start(self, t: int, policy: ExplorationPolicy) -> dict[str, Any]:
        """The ``tree_started`` payload of tree ``t``: its planned grid and (warm-start) root."""
        sub, best = self.sub, self.best
        started = [e.payload for e in sub.events("tree_started") if e.payload["tree"] == t]
        if started:
            return started[0]
        grid = policy.plan_grid(self.trees)
        root_sha = best[1] if self.cfg.warm_start else None
        root_score = best[0] if (self.cfg.warm_start and best[1]) else None
        sub.append(
            "tree_started",
            {
                **self.tag,
                "tree": t,
                "grid_width": grid[0],
                "grid_depth": grid[1],
                "root_payload": root_sha,
                "root_score": root_score,
                "policy": policy.name,
                "params": self.params.model_dump() if self.arm in (*DREAMING_ARMS, "portfolio") else None,
                "beta1": self.betas[0],
                "beta2": self.betas[1],
            },
            cycle=t,
        )
        sub.commit()
        return sub.events("tree_started")[-1].payload

    def _online_tree(self, t: int, st: dict[str, Any]) -> tuple[OnlineTree, list[dict[str, Any]]]:
        """Tree ``t`` as the online rollout sees it, with the attempts already recorded for it."""
        sub = self.sub
        root_state = sub.artifacts.get_json(st["root_payload"]) if st["root_payload"] else None
        prior = [e.payload for e in self.node_evs if e.payload["tree"] == t]
        otree = OnlineTree(
            index=t,
            grid=(st["grid_width"], st["grid_depth"]),
            root_state=root_state,
            nodes=[Node(**{k: p[k] for k in _NODE_FIELDS}) for p in prior],
        )
        for p in prior:
            otree.states[p["id"]] = sub.artifacts.get_json(p["payload"])
        return otree, prior

    def _record_node(self, t: int, otree: OnlineTree, node: Node) -> None:
        """One agent call: a ``tree_node`` event with the running best valid score."""
        self.calls += 1
        if node.valid and node.score is not None and node.score > self.best[0]:
            self.best = (node.score, node.payload)
        best = self.best
        self.sub.append(
            "tree_node",
            {
                **self.tag,
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
                "calls": self.calls,
                "best_so_far": None if best[1] is None else best[0],
            },
            cycle=t,
        )
        self.bar.update(1)

    def _record_tree(
        self, t: int, st: dict[str, Any], otree: OnlineTree, policy: ExplorationPolicy, t0: float
    ) -> bool:
        """Store finished tree ``t`` as an artifact and a ``tree_recorded`` event (with its online V)."""
        sub, cfg, task, betas = self.sub, self.cfg, self.task, self.betas
        tree = otree.to_tree(
            name=f"{self.arm}-s{self.seed}-t{t}",
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
            return False
        sha = sub.artifacts.put_json(tree.to_json(), name=f"tree-{t}.json")
        s = tree.summary()
        b = tree.best()
        n_rounds = max(v.round for v in tree)
        dt = time.perf_counter() - t0
        self.wall += dt
        sub.append(
            "tree_recorded",
            {
                **self.tag,
                "tree": t,
                "artifact": sha,
                **s,
                "calls": self.calls,
                "best_so_far": None if self.best[1] is None else self.best[0],
                "rounds": n_rounds,
                "V_online": replay_objective(  # undefined (null) when the tree has no valid node
                    b.score if b and b.score is not None else None, len(tree), n_rounds, betas[0], betas[1]
                ),
                "wall_s": dt,
            },
            cycle=t,
        )
        sub.commit()
        self.trees.append(tree)
        self.node_evs = sub.events("tree_node")
        return True

    def finish(self) -> dict[str, Any]:
        """The ``arm_finished`` event: calls spent, best score, calls to the target (None = censored)."""
        reach = None
        if self.target is not None:
            for e in self.sub.events("tree_node"):
                if e.payload["best_so_far"] is not None and e.payload["best_so_far"] >= self.target:
                    reach = e.payload["calls"]
                    break
        fin = {
            **self.tag,
            "calls": self.calls,
            "budget": self.cfg.calls,
            "best": None if self.best[1] is None else self.best[0],
            "calls_to_target": reach,
            "target": self.target,
            "rounds": len(self.trees),
            "wall_s": self.wall,
        }
        self.sub.append("arm_finished", fin)
        self.sub.commit()
        return fin


__all__ = ["ALL_ARMS", "DREAMING_ARMS", "Arm", "ArmRun", "ArmSettings", "RecordingSettings", "arm_policy"]
