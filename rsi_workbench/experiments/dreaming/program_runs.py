"""``program_agent`` experiment: the program-writing discovery agent against the SciPy agent, and
replay-selected policies against a text hint (the paper's Fig. 5 ablation), at equal agent calls.

Arms (each per seed, one *lane*):

- ``program`` — the language model writes programs (:class:`ProgramAgent`) under the fixed ``policy``;
- ``scipy`` — the built-in SciPy restart-and-perturb agent under the same policy, W and budget;
- ``program_replay`` — the program agent; after each tree the policy is the replay-selected one:
  every ``replay_candidates`` policy (``replay/policies.py``) is replayed on all of this lane's
  recorded trees and the argmax of V^m is deployed (ties keep the current policy);
- ``program_text_hint`` — the program agent under the fixed ``policy``, its prompts extended by a
  text summary of the lane's earlier trees (:func:`history_hint`) instead of a replay-selected policy;
- ``mutate`` — (OpenEvolve task directories only, ``task: {kind: openevolve, dir: PATH}``) the
  non-LLM baseline: seeded mutations of the parent's evolve block
  (:meth:`~rsi_workbench.domains.openevolve.OpenEvolveTask.attempt`), no model.

On an OpenEvolve task the program arms use :class:`OpenEvolveAgent` (the model rewrites the evolve
block only), every evaluation runs in the sandbox, and ``scipy`` is not available; the run records
an ``openevolve_task`` event (the directory, its files' sha256, the evaluator settings).

All lanes grow their trees round by round in lockstep; the W attempts of every program lane in one
round are one batched model call (their prompts differ), so a lane's samples depend on the batch it
shares (documented, deterministic for a given config). Trees are the same :class:`DiscoveryTree` as
imported OpenEvolve/ShinkaEvolve trees. Events (one run directory, rows tagged ``arm``, ``seed``):
``tree_started``, ``tree_node`` (with ``prompt_tokens``, ``completion_tokens`` per program call),
``tree_recorded``, ``policy_selected``, ``lane_finished``, plus the model's ``model_call`` events.
A resumed run rebuilds every lane from these events and continues.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from rsi_workbench.config import StrictModel
from rsi_workbench.domains.math import DiscoveryTask, run_attempt
from rsi_workbench.domains.math.programs import program_isolation, program_spec, run_program
from rsi_workbench.domains.openevolve import OpenEvolveTask
from rsi_workbench.experiments.dreaming.config import (
    AnyTaskConfig,
    OpenEvolveTaskConfig,
    TaskConfig,
    make_task,
    target_score,
)
from rsi_workbench.experiments.dreaming.online import OnlineTree, attempt_seed
from rsi_workbench.experiments.dreaming.openevolve_agent import OpenEvolveAgent
from rsi_workbench.experiments.dreaming.program_agent import AttemptView, ProgramAgent, history_hint
from rsi_workbench.models import ModelConfig, open_model
from rsi_workbench.records import Run
from rsi_workbench.replay.policies import ExplorationPolicy, baseline
from rsi_workbench.replay.simulator import check_batch, score_policy
from rsi_workbench.replay.tree import DiscoveryTree, Node

ProgramArm = Literal["program", "scipy", "program_replay", "program_text_hint", "mutate"]
MODEL_FREE = ("scipy", "mutate")  # arms that call no model
DEFAULT_ARMS: tuple[ProgramArm, ...] = ("program", "scipy")
POLICIES = ("portfolio", "independent_roots", "greedy_deepest_best", "breadth_first")
_NODE_FIELDS = ("id", "parent", "created_seq", "round", "score", "valid", "fail_class", "error", "payload")


class Config(StrictModel):
    """The ``program_agent`` experiment: which arms, seeds, budget, model and prompt slice."""

    experiment: Literal["program_agent"] = "program_agent"
    task: AnyTaskConfig = Field(default_factory=TaskConfig)
    model: ModelConfig = Field(default_factory=lambda: ModelConfig(cpu_threads=1))
    arms: list[ProgramArm] = Field(default_factory=lambda: list(DEFAULT_ARMS))
    seeds: list[int] = Field(default_factory=lambda: [0, 1, 2])
    W: int = Field(default=2, ge=1, le=16, description="attempts per round (parallel workers)")
    calls: int = Field(default=30, ge=1, description="agent calls per arm and seed")
    calls_per_round: int = Field(default=30, ge=1, description="attempts per online tree")
    policy: str = Field(default="portfolio", description=f"the fixed exploration policy: one of {POLICIES}")
    replay_candidates: list[str] = Field(default_factory=lambda: list(POLICIES))
    warm_start: bool = Field(default=True, description="a new tree's root is the lane's best program")
    max_tokens: int = Field(default=384, ge=16, le=4096)
    temperature: float = Field(default=0.8, ge=0)
    top_p: float = Field(default=0.95, gt=0, le=1)
    program_wall_s: float = Field(default=30.0, gt=0, description="sandbox wall clock per program")
    siblings_k: int = Field(default=4, ge=0, le=32)
    history_k: int = Field(default=3, ge=0, le=32)
    program_chars: int = Field(default=2500, ge=200)
    beta1: float = Field(default=2e-4, ge=0)
    beta2: float = Field(default=5e-4, ge=0)
    target_fraction: float = Field(default=0.999, gt=0, le=1)

    @field_validator("policy")
    @classmethod
    def _known_policy(cls, v: str) -> str:
        if v not in POLICIES:
            raise ValueError(f"unknown policy {v!r}; allowed: {list(POLICIES)}")
        return v

    @model_validator(mode="after")
    def _arms_fit_task(self) -> Config:
        oe = isinstance(self.task, OpenEvolveTaskConfig)
        bad = [a for a in self.arms if a == ("scipy" if oe else "mutate")]
        if bad:
            what = "an OpenEvolve task (no built-in SciPy agent)" if oe else "the built-in math tasks"
            raise ValueError(f"arms: {bad[0]!r} is not available for {what}")
        return self

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


class ProgramExperiment:
    """All lanes of one run, grown in lockstep; every step appends events, so a resume continues."""

    def __init__(self, cfg: Config, run: Run, llm: Any = None):
        self.cfg, self.run = cfg, run
        self.task: DiscoveryTask = make_task(cfg.task)
        oe = self.task if isinstance(self.task, OpenEvolveTask) else None
        self.seed_program = oe.seed_program if oe is not None else program_spec(self.task).seed_program
        self.target = target_score(self.task, cfg.target_fraction)
        self.seed_score: float | None = None
        self.llm = llm
        self.agent: ProgramAgent | None = None
        if any(a not in MODEL_FREE for a in cfg.arms):
            if self.llm is None:
                self.llm = open_model(cfg.model, run, role="discovery_agent")
            self.agent = (OpenEvolveAgent if oe is not None else ProgramAgent)(
                self.llm,
                self.task,  # type: ignore[arg-type]
                max_tokens=cfg.max_tokens,
                temperature=cfg.temperature,
                top_p=cfg.top_p,
                wall_s=cfg.program_wall_s,
                siblings_k=cfg.siblings_k,
                history_k=cfg.history_k,
                program_chars=cfg.program_chars,
            )
        self.lanes = [self._restore(arm, seed) for seed in cfg.seeds for arm in cfg.arms]
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
        """Steps until every lane has spent its budget (or its policy stops)."""
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

    def _root_line(self, lane: Lane) -> str:
        """What the prompt says about the root program: the lane's best so far, or the starting program."""
        if self.cfg.warm_start and lane.best[1]:
            return f"score {lane.best[0]:.6f}, valid: the best program so far ({lane.best[1]})"
        if self.seed_score is None:
            res = self._evaluate(self.seed_program)
            self.seed_score = res.score if res.valid else float("nan")
            self.run.append(
                "seed_program_scored", {"score": res.score, "valid": res.valid, "error": res.error}
            )
        return f"score {self.seed_score:.6f}, valid: the starting program"

    def _evaluate(self, program: str) -> Any:
        """One program's result: the OpenEvolve evaluator's, or the math task's program runner."""
        if isinstance(self.task, OpenEvolveTask):
            return self.task.evaluate_program(program)
        return run_program(self.task, program, wall_s=self.cfg.program_wall_s)

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
            out = self.agent.attempt_batch(asks, seed=self.step)
            model_s = (time.perf_counter() - t0) / len(prog)
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
            assert lane.otree is not None
            lane.otree.view.round += 1

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

    def _finish(self, lane: Lane) -> None:
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
            },
        )


#: what an OpenEvolve evaluation adds to a node's meta (metrics tagged: NaN/inf as {"$f": ...})
EVALUATOR_META = ("metrics", "stage", "stages", "mutations", "traceback", "compat")


def _evaluator_meta(res: Any) -> dict[str, Any]:
    return {k: res.info[k] for k in EVALUATOR_META if k in res.info}


def run_experiment(config: Config, out: Path, *, resume: bool = False, llm: Any = None) -> Path:
    """Run (or resume) every lane in ``out``; ``llm`` overrides the configured model (test doubles)."""
    # programs run only in the sandbox: a plan weaker than the mode is refused before the run exists
    task = make_task(config.task) if isinstance(config.task, OpenEvolveTaskConfig) else None
    if isinstance(task, OpenEvolveTask):
        grant: Any = task.isolation_grant()
    else:
        grant = program_isolation() if any(a != "scipy" for a in config.arms) else None
    run = Run.create(out, config, kind="program_agent", exist_ok=resume)
    with run:
        changed = grant is not None and grant.record_in(run)
        if isinstance(task, OpenEvolveTask) and not any(
            e.payload == task.record() for e in run.events("openevolve_task")
        ):
            run.append("openevolve_task", task.record())  # a resumed run whose directory changed adds one
            changed = True
        if changed:
            run.commit()
        t0 = time.perf_counter()
        ProgramExperiment(config, run, llm).run_all()
        run.append("experiment_session", {"wall_s": time.perf_counter() - t0})
        run.commit()
    return Path(out)


def report(path: str | Path) -> str:
    """The results table (see :mod:`.program_report`)."""
    from rsi_workbench.experiments.dreaming.program_report import program_report

    return program_report(path)


__all__ = ["Config", "Lane", "ProgramExperiment", "report", "run_experiment"]
