"""The program-writing agent's lanes: one (arm, seed) each, grown in lockstep, round by round.

Arms (each per seed, one *lane*): ``program`` — the agent writes programs under the fixed ``policy``;
``scipy`` — the built-in SciPy agent under the same policy, W and budget; ``program_replay`` — the
agent, and after each tree the replay-selected policy (every ``replay_candidates`` policy replayed
on the lane's recorded trees, argmax of V^m deployed, ties keep the current one);
``program_text_hint`` — the agent under the fixed policy, its prompts extended by a text summary of
the lane's earlier trees; ``mutate`` — (OpenEvolve tasks) seeded mutations of the evolve block.

The W attempts of every program lane in one round are one batched call of the agent (their prompts
differ). The initial program is scored once per run before any lane starts
(``initial_program_scored``: the baseline of "initial → best"; never a tree node, a tree's root
stays unscored). Every step appends events (``tree_started``, ``tree_node``, ``tree_recorded``,
``policy_selected``, ``program_step``, ``lane_finished``), so :class:`ProgramLanes` rebuilt on a run
continues where its records end. The lanes read their own settings block (:class:`LaneSettings`);
the agent (a :class:`~.program_agent.ProgramAgent` or the OpenEvolve one), the task's starting
program and its program evaluator are handed in.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field, field_validator

from rsi_workbench.budget import BudgetExceeded
from rsi_workbench.config import StrictModel
from rsi_workbench.domains.math.online import OnlineTree, attempt_seed
from rsi_workbench.domains.math.program_agent import AttemptView, ProgramAgent, history_hint
from rsi_workbench.domains.math.settings import target_score
from rsi_workbench.domains.math.task import AttemptResult, DiscoveryTask, run_attempt
from rsi_workbench.records import Run
from rsi_workbench.replay.policies import ExplorationPolicy, baseline
from rsi_workbench.replay.simulator import check_batch, score_policy
from rsi_workbench.replay.tree import DiscoveryTree, Node

ProgramArm = Literal["program", "scipy", "program_replay", "program_text_hint", "mutate"]
MODEL_FREE = ("scipy", "mutate")  # arms that call no model
DEFAULT_ARMS: tuple[ProgramArm, ...] = ("program", "scipy")
POLICIES = ("portfolio", "independent_roots", "greedy_deepest_best", "breadth_first")
_NODE_FIELDS = ("id", "parent", "created_seq", "round", "score", "valid", "fail_class", "error", "payload")


class LaneSettings(StrictModel):
    """What the lanes read: seeds' budget and rounds, the fixed and replayed policies, β, the target."""

    W: int = Field(default=2, ge=1, le=16, description="attempts per round (parallel workers)")
    calls: int = Field(default=30, ge=1, description="agent calls per arm and seed")
    calls_per_round: int = Field(default=30, ge=1, description="attempts per online tree")
    policy: str = Field(default="portfolio", description=f"the fixed exploration policy: one of {POLICIES}")
    replay_candidates: list[str] = Field(default_factory=lambda: list(POLICIES))
    warm_start: bool = Field(default=True, description="a new tree's root is the lane's best program")
    beta1: float = Field(default=2e-4, ge=0)
    beta2: float = Field(default=5e-4, ge=0)
    target_fraction: float = Field(default=0.999, gt=0, le=1)

    @field_validator("policy")
    @classmethod
    def _known_policy(cls, v: str) -> str:
        if v not in POLICIES:
            raise ValueError(f"unknown policy {v!r}; allowed: {list(POLICIES)}")
        return v

    @field_validator("replay_candidates")
    @classmethod
    def _known_candidates(cls, v: list[str]) -> list[str]:
        bad = [p for p in v if p not in POLICIES]
        if bad or not v:
            raise ValueError(f"replay_candidates must be a non-empty list of {list(POLICIES)}, got {v}")
        return v


@dataclass
class Lane:
    """One (arm, seed): its recorded trees, the tree being grown, states by node id, deployed policy."""

    arm: str
    seed: int
    policy: str
    trees: list[DiscoveryTree] = field(default_factory=list)
    states: dict[str, Any] = field(default_factory=dict)
    otree: OnlineTree | None = None
    calls: int = 0
    best: tuple[float, str | None] = (-math.inf, None)
    done: bool = False
    root_line: str = "the root program"
    selections: int = 0  # policy_selected events (program_replay)

    @property
    def tag(self) -> dict[str, Any]:
        return {"arm": self.arm, "seed": self.seed}

    @property
    def writes_programs(self) -> bool:
        return self.arm != "scipy"

    @property
    def uses_model(self) -> bool:
        return self.arm not in MODEL_FREE


class ProgramLanes:
    """All lanes of one run, grown in lockstep; every step appends events, so a resume continues.

    ``agent`` writes the program lanes' children (None when every arm is model-free);
    ``seed_program`` is the task's starting program and ``evaluate`` scores one program."""

    def __init__(
        self,
        cfg: LaneSettings,
        run: Run,
        task: DiscoveryTask,
        lanes: list[tuple[str, int]],
        *,
        agent: ProgramAgent | None,
        seed_program: str,
        evaluate: Callable[[str], AttemptResult],
    ):
        self.cfg, self.run, self.task, self.agent = cfg, run, task, agent
        self.seed_program, self._evaluate = seed_program, evaluate
        self.target = target_score(self.task, cfg.target_fraction)
        self.initial: dict[str, Any] | None = initial_record(run)
        self.seed_score: float | None = None if self.initial is None else _seed_score(self.initial)
        self.lanes = [self._restore(arm, seed) for arm, seed in lanes]
        for lane in self.lanes:  # a run stopped between recording a tree and selecting the next policy
            if lane.arm == "program_replay" and lane.trees and lane.selections < len(lane.trees):
                self._select_policy(lane)
        self.step = len(run.events("program_step"))

    # -- state from events ---------------------------------------------------------------------------
    def _restore(self, arm: str, seed: int) -> Lane:
        """A lane rebuilt from its events (a fresh lane when there are none)."""
        run, lane = self.run, Lane(arm, seed, self.cfg.policy)
        mine = lambda e: e.payload.get("arm") == arm and e.payload.get("seed") == seed  # noqa: E731
        for e in run.events("tree_recorded"):
            if mine(e):
                lane.trees.append(DiscoveryTree.from_json(run.artifacts.get_json(e.payload["artifact"])))
        for e in run.events("policy_selected"):
            if mine(e):
                lane.policy = e.payload["chosen"]
                lane.selections += 1
        started = [e.payload for e in run.events("tree_started") if mine(e)]
        nodes = [e.payload for e in run.events("tree_node") if mine(e)]
        for p in nodes:
            lane.states[p["id"]] = run.artifacts.get_json(p["payload"])
            if p["valid"] and p["score"] is not None and p["score"] > lane.best[0]:
                lane.best = (p["score"], p["id"])
        lane.calls = len(nodes)
        if started and started[-1]["tree"] == len(lane.trees):  # a tree was being grown
            st = started[-1]
            lane.root_line = st["root_line"]
            lane.otree = OnlineTree(
                index=st["tree"],
                grid=(st["grid_width"], st["grid_depth"]),
                root_state=run.artifacts.get_json(st["root_payload"]),
                nodes=[Node(**{k: p[k] for k in _NODE_FIELDS}) for p in nodes if p["tree"] == st["tree"]],
            )
            lane.otree.states.update({v.id: lane.states[v.id] for v in lane.otree.nodes})
        lane.done = any(mine(e) for e in run.events("lane_finished"))
        return lane

    # -- the loop --------------------------------------------------------------------------------------
    def run_all(self) -> None:
        """Steps until every lane has spent its budget (or its policy stops); first, once per run,
        the initial program is scored (:meth:`score_initial`)."""
        self.score_initial()
        while True:
            plans = [(lane, self._plan(lane)) for lane in self.lanes if not lane.done]
            plans = [(lane, b) for lane, b in plans if b]
            if not plans:
                break
            self._execute(plans)
            self.step += 1
            self.run.append("program_step", {"step": self.step, "lanes": [lane.tag for lane, _ in plans]})
            for lane, _ in plans:
                self._after_round(lane)
            self.run.commit()
        for lane in self.lanes:
            if not lane.done:
                self._finish(lane)
        self.run.commit()

    def _plan(self, lane: Lane) -> list[str]:
        """The lane's next batch (starting a tree if needed); [] when the lane is finished."""
        cfg = self.cfg
        while True:
            if lane.calls >= cfg.calls:
                self._close_tree(lane)
                self._finish(lane)
                return []
            if lane.otree is None:
                self._start_tree(lane)
            ot = lane.otree
            assert ot is not None
            room = min(cfg.W, cfg.calls - lane.calls, cfg.calls_per_round - len(ot.nodes))
            ot.view._set_legal(ot.legal_capacity(room))
            batch = (
                check_batch(ot.view, self._policy(lane).select_batch(ot.view, room), room)
                if ot.view.legal()
                else []
            )
            if batch:
                return batch
            if not ot.nodes:  # the policy stops before any attempt: nothing more will happen
                lane.otree = None
                self._finish(lane)
                return []
            self._close_tree(lane)

    def score_initial(self) -> dict[str, Any] | None:
        """Evaluate the initial program once per run (in the sandbox, like every node) and record it
        as an ``initial_program_scored`` event — the baseline every lane's best is compared with,
        never a tree node (a tree's root stays unscored). A resumed run reads it back instead."""
        if self.initial is not None or not any(lane.writes_programs for lane in self.lanes):
            return self.initial
        res = self._evaluate(self.seed_program)
        ev = res.evaluation
        self.initial = {
            "score": None if ev is None else ev.score,
            "valid": bool(res.valid),
            "fail_class": res.fail_class,
            "reason": "" if ev is None else ev.reason,
            "error": res.error,
            "seconds": round(res.seconds, 3),
            "program": self.run.artifacts.put_json(self.seed_program, name="initial_program.json"),
            **_evaluator_meta(res),
        }
        self.run.append("initial_program_scored", self.initial)
        self.run.commit()
        self.seed_score = _seed_score(self.initial)
        return self.initial

    def _root_line(self, lane: Lane) -> str:
        """What the prompt says about the root program: the lane's best so far, or the starting program."""
        if self.cfg.warm_start and lane.best[1]:
            return f"score {lane.best[0]:.6f}, valid: the best program so far ({lane.best[1]})"
        if self.seed_score is None:
            self.score_initial()
        return f"score {self.seed_score:.6f}, valid: the starting program"

    def _policy(self, lane: Lane) -> ExplorationPolicy:
        return baseline(lane.policy)

    def _start_tree(self, lane: Lane) -> None:
        t = len(lane.trees)
        grid = self._policy(lane).plan_grid(lane.trees)
        if lane.writes_programs:
            root = lane.states[lane.best[1]] if (self.cfg.warm_start and lane.best[1]) else self.seed_program
        else:
            root = lane.states[lane.best[1]] if (self.cfg.warm_start and lane.best[1]) else None
        sha = self.run.artifacts.put_json(root, name="root.json")
        lane.root_line = self._root_line(lane) if lane.uses_model else ""
        self.run.append(
            "tree_started",
            {
                **lane.tag,
                "tree": t,
                "grid_width": grid[0],
                "grid_depth": grid[1],
                "root_payload": sha,
                "root_node": lane.best[1],
                "root_line": lane.root_line,
                "policy": lane.policy,
            },
            cycle=t,
        )
        lane.otree = OnlineTree(index=t, grid=grid, root_state=root)

    def _execute(self, plans: list[tuple[Lane, list[str]]]) -> None:
        """Run one round of every planned lane: the program lanes' prompts in one model call."""
        jobs: list[tuple[Lane, str, int]] = []
        for lane, batch in plans:
            ot = lane.otree
            assert ot is not None
            jobs += [(lane, parent, len(ot.nodes) + j) for j, parent in enumerate(batch)]
        prog = [j for j in jobs if j[0].uses_model]
        results: dict[tuple[str, int, int], tuple[Any, dict[str, Any]]] = {}
        if prog:
            assert self.agent is not None
            asks = []
            for lane, parent, _ in prog:
                ot = lane.otree
                assert ot is not None
                view = AttemptView(ot.nodes, lane.trees, ot.index, lane.root_line)
                hint = history_hint(lane.trees) if lane.arm == "program_text_hint" else ""
                asks.append((view, parent, ot.state_of(parent), hint))
            t0 = time.perf_counter()
            try:
                out = self.agent.attempt_batch(asks, seed=self.step)
            except BudgetExceeded as e:  # a money (or token) budget is spent: the model lanes stop
                self._out_of_budget([lane for lane, _ in plans if lane.uses_model], str(e))
                jobs, prog, out = [j for j in jobs if not j[0].uses_model], [], []
            model_s = (time.perf_counter() - t0) / max(1, len(prog))
            for (lane, _, seq), (res, meta) in zip(prog, out):
                results[(lane.arm, lane.seed, seq)] = (
                    res,
                    {**meta, "batch": len(prog), "step_s": round(model_s, 2)},
                )
        for lane, parent, seq in jobs:
            ot = lane.otree
            assert ot is not None
            if not lane.uses_model:  # the SciPy agent or the evolve-block mutations: seeded, no model
                res = run_attempt(self.task, ot.state_of(parent), attempt_seed(lane.seed, ot.index, seq))
                results[(lane.arm, lane.seed, seq)] = (res, {})
            res, meta = results[(lane.arm, lane.seed, seq)]
            self._add_node(lane, parent, seq, res, meta)
        for lane, _ in plans:  # every node of a lane's batch was made in this round
            if lane.otree is not None:  # (None: the lane stopped, its budget spent)
                lane.otree.view.round += 1

    def _out_of_budget(self, lanes: list[Lane], why: str) -> None:
        """The model refused a call (its budget spent): each lane records its tree and finishes."""
        for lane in lanes:
            self.run.append("budget_exhausted", {**lane.tag, "calls": lane.calls, "reason": why})
            self._close_tree(lane)
            self._finish(lane, stopped=why)

    def _add_node(self, lane: Lane, parent: str, seq: int, res: Any, meta: dict[str, Any]) -> None:
        ot = lane.otree
        assert ot is not None
        ev = res.evaluation
        rnd = ot.view.round + 1
        node = Node(
            id=f"t{ot.index}n{seq}",
            parent=parent,
            created_seq=seq,
            round=rnd,
            score=None if ev is None else ev.score,
            valid=res.valid,
            fail_class=res.fail_class,
            error=res.error,
            payload=self.run.artifacts.put_json(res.state, name="candidate.json"),
            meta={
                "reason": "" if ev is None else ev.reason,
                "move": res.move,
                **meta,
                **_evaluator_meta(res),
            },
        )
        ot.add(node, res.state)
        lane.states[node.id] = res.state
        lane.calls += 1
        if node.valid and node.score is not None and node.score > lane.best[0]:
            lane.best = (node.score, node.id)
        self.run.append(
            "tree_node",
            {
                **lane.tag,
                "tree": ot.index,
                **{k: getattr(node, k) for k in _NODE_FIELDS},
                "depth": ot.view.depth_of(node.id),
                "reason": node.meta["reason"],
                "move": res.move,
                "seconds": round(res.seconds, 3),
                "calls": lane.calls,
                "best_so_far": None if lane.best[1] is None else lane.best[0],
                **meta,
                **_evaluator_meta(res),
                **({"artifacts": res.info["artifacts"]} if "artifacts" in res.info else {}),
            },
            cycle=ot.index,
        )

    def _after_round(self, lane: Lane) -> None:
        ot = lane.otree
        if ot is not None and (len(ot.nodes) >= self.cfg.calls_per_round or lane.calls >= self.cfg.calls):
            self._close_tree(lane)

    def _close_tree(self, lane: Lane) -> None:
        """Record the lane's current tree; the replay arm then deploys the replay-selected policy."""
        ot = lane.otree
        if ot is None:
            return
        lane.otree = None
        if not ot.nodes:
            return
        tree = ot.to_tree(
            name=f"{lane.arm}-s{lane.seed}-t{ot.index}",
            direction=self.task.direction,
            meta={"task": self.task.name, "W": self.cfg.W, "policy": lane.policy, "agent": lane.arm},
        )
        sha = self.run.artifacts.put_json(tree.to_json(), name=f"tree-{ot.index}.json")
        self.run.append(
            "tree_recorded",
            {**lane.tag, "tree": ot.index, "artifact": sha, **tree.summary(), "policy": lane.policy},
            cycle=ot.index,
        )
        lane.trees.append(tree)
        if lane.arm == "program_replay":
            self._select_policy(lane)

    def _select_policy(self, lane: Lane) -> None:
        """Replay every candidate policy on the lane's recorded trees; deploy the argmax of V^m."""
        cfg = self.cfg
        rows, keys = [], []
        for name in dict.fromkeys([lane.policy, *cfg.replay_candidates]):
            s = score_policy(lane.trees, baseline(name), cfg.W, cfg.beta1, cfg.beta2)
            rows.append({"policy": name, "V": s.V, "n_undefined": s.n_undefined})
            keys.append(s.key)
        best = max(range(len(rows)), key=lambda i: keys[i])  # the first (current policy) wins ties
        lane.policy = str(rows[best]["policy"])
        lane.selections += 1
        self.run.append(
            "policy_selected",
            {**lane.tag, "after_tree": len(lane.trees) - 1, "candidates": rows, "chosen": lane.policy},
        )

    def _finish(self, lane: Lane, stopped: str = "") -> None:
        if lane.done:
            return
        lane.done = True
        reach = None
        if self.target is not None:
            for e in self.run.events("tree_node"):
                p = e.payload
                if p["arm"] == lane.arm and p["seed"] == lane.seed and p["best_so_far"] is not None:
                    if p["best_so_far"] >= self.target:
                        reach = p["calls"]
                        break
        self.run.append(
            "lane_finished",
            {
                **lane.tag,
                "calls": lane.calls,
                "best": None if lane.best[1] is None else lane.best[0],
                "calls_to_target": reach,
                "target": self.target,
                "trees": len(lane.trees),
                "policy": lane.policy,
                **({"stopped": stopped} if stopped else {}),
            },
        )


def initial_record(run: Run) -> dict[str, Any] | None:
    """The run's ``initial_program_scored`` payload (``score``, ``valid``, ``fail_class``,
    ``reason``, ``error``, ...), else that of the older ``seed_program_scored`` event; None: not scored."""
    for kind in ("initial_program_scored", "seed_program_scored"):
        evs = run.events(kind)
        if evs:
            return dict(evs[0].payload)
    return None


def _seed_score(initial: dict[str, Any]) -> float:
    s = initial.get("score")
    return float(s) if initial.get("valid") and s is not None else float("nan")


#: what an OpenEvolve evaluation adds to a node's meta (metrics tagged: NaN/inf as {"$f": ...})
EVALUATOR_META = ("metrics", "stage", "stages", "mutations", "traceback", "compat")


def _evaluator_meta(res: Any) -> dict[str, Any]:
    return {k: res.info[k] for k in EVALUATOR_META if k in res.info}


__all__ = [
    "DEFAULT_ARMS",
    "EVALUATOR_META",
    "MODEL_FREE",
    "POLICIES",
    "Lane",
    "LaneSettings",
    "ProgramArm",
    "ProgramLanes",
    "initial_record",
]
