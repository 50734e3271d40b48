"""``gui`` experiment: RSI-Anything's GUI family (MiniWoB++ click-checkboxes) on the retained-pair engine.

Per experiment seed and method, ``generations`` protocol runs (:class:`~rsi_workbench.protocol.loop.Loop`)
follow each other, each over its own declared training and gate episodes (fresh instances): one
loop cycle is one step of every unfinished episode — θ proposes K actions, φ predicts their effect,
eq. 7 selects, the browser executes (:mod:`.binding`) — followed by reliability (eq. 10), the
triggers (eq. 9, 11), the component and pair gates and retention (eq. 13–18). A generation starts
from the pair its predecessor retained; the pair retained after generation g is tier g (tier 0 is
the untrained pair, or with ``initial_pair`` the pair pretrained on another task, :mod:`.pretrain`). Every tier then plays the fixed test instances as whole episodes (capped at
``max_actions`` actions and ``wall_clock_s``), which never feed learning; test instances are
disjoint from every training and gate episode by content (utterance + initial DOM hash), asserted.

Methods: ``rsi`` (policy and world model updated and gated), ``world_based`` (the control the
issue defines: world model updated, policy fixed) and ``policy_only`` (policy updated, world model
fixed: which of the retained pair's two updates carries a gain). Everything is appended as events (the experiment
log, plus one protocol run directory per generation), so a killed run resumes where it stopped.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from rsi_workbench.budget import EXTERNAL_FEEDBACK, UPDATE_COMPUTE
from rsi_workbench.config import StrictModel
from rsi_workbench.experiments.gui.binding import GuiStepEnvironment, GuiVerifier, PairAgent, episode_stats
from rsi_workbench.experiments.gui.components import ActionScoringPolicy, OutcomeWorldModel
from rsi_workbench.experiments.gui.features import content_key, element_json
from rsi_workbench.experiments.gui.llm_policy import PolicySettings, open_llm_policy
from rsi_workbench.protocol.gates import PairGateCriteria
from rsi_workbench.protocol.loop import GateSettings, Loop, ProtocolSettings
from rsi_workbench.protocol.reliability import ReliabilityCriteria
from rsi_workbench.protocol.seeds import derive_seed
from rsi_workbench.protocol.selection import UtilitySpec
from rsi_workbench.protocol.spec import TaskSpec
from rsi_workbench.protocol.splits import assert_disjoint
from rsi_workbench.records import Run, child_runs

CHILD_RUN_EVENTS = ("generation_finished", "initial_pair")  # events that finish child runs (records.children)

Method = Literal["rsi", "world_based", "policy_only"]
TEST_SALT = "gui-test-instance"


def _default_methods() -> list[Method]:
    return ["rsi", "world_based"]


def _default_gates() -> GateSettings:
    return GateSettings(pair=PairGateCriteria(max_brier_increase=0.1))


def _default_utility() -> UtilitySpec:
    return UtilitySpec(weights={"p_success": 1.0, "submit_score": 0.5, "ends_success": 0.5})


class InitialPair(StrictModel):
    """Tier 0 pretrained on another MiniWoB++ task (:mod:`.pretrain`): the pair the ``rsi`` method
    retains after ``generations`` protocol runs of ``train_episodes`` + ``gate_episodes`` each."""

    pretrain: str = Field(
        description="the MiniWoB++ task the starting pair is pretrained on, e.g. click-option"
    )
    train_episodes: int = Field(
        default=16, ge=1, description="update-split episodes per pretraining generation"
    )
    gate_episodes: int = Field(default=6, ge=1, description="gate-split episodes per pretraining generation")
    generations: int = Field(default=1, ge=1, description="pretraining protocol runs in sequence")
    seed: int = Field(
        default=0, description="the pretraining seed (instances and loop); one pair for every seed"
    )


class Config(StrictModel):
    """The ``gui`` experiment: a MiniWoB++ task, methods, seeds, episodes per generation, caps, thresholds."""

    experiment: Literal["gui"] = "gui"
    task: str = Field(default="click-checkboxes", description="a MiniWoB++ task name")
    methods: list[Method] = Field(default_factory=lambda: _default_methods())
    seeds: list[int] = Field(default_factory=lambda: [0], description="experiment seeds (runs per method)")
    generations: int = Field(
        default=2, ge=1, description="protocol runs in sequence; tiers = generations + 1"
    )
    train_episodes: int = Field(default=16, ge=1, description="update-split episodes per generation")
    gate_episodes: int = Field(default=6, ge=1, description="gate-split episodes per generation")
    test_instances: int = Field(default=100, ge=1, description="fixed test instances (same for every seed)")
    max_actions: int = Field(default=8, ge=1, description="actions per episode (the paper: 8)")
    wall_clock_s: float = Field(
        default=120.0, gt=0, description="wall clock per test episode (the paper: 120 s)"
    )
    k: int = Field(default=4, ge=1, description="candidate actions θ proposes per step")
    explore_cycles: int = Field(
        default=3,
        ge=0,
        description="first generation: its first N cycles select uniformly among the proposals",
    )
    temperature: float = Field(default=0.5, ge=0.0, description="θ's Gumbel temperature while training")
    ridge: float = Field(default=1.0, gt=0, description="θ's ridge penalty")
    always_submit: bool = Field(
        default=True,
        description="θ proposes its K best clicks plus the submit action (the terminal action is always "
        "a candidate, so eq. 7 decides when to submit); off: submit competes for the K slots",
    )
    world_steps: int = Field(default=300, ge=1, description="Adam steps per world-model fit")
    utility: UtilitySpec = Field(default_factory=_default_utility)
    reliability: ReliabilityCriteria = Field(default_factory=lambda: ReliabilityCriteria(max_brier=0.1))
    min_adapt_examples: int = Field(default=20, ge=1)
    min_policy_records: int = Field(default=8, ge=1)
    gates: GateSettings = Field(
        default_factory=lambda: _default_gates(),
        description="component and pair gate criteria; the pair gate lets the predictor's Brier on the "
        "assembled pair's own proposals rise by 0.1 (a new policy proposes other actions, e.g. submits)",
    )
    update_budget: float = Field(default=100000.0, ge=0)
    browsers: int = Field(default=1, ge=1, description="browsers playing test episodes")
    max_retries: int = Field(default=2, ge=0, description="retries of a step/episode on a fresh browser")
    bootstrap: int = Field(default=2000, ge=10, description="bootstrap resamples for 95% intervals")
    threads: int = Field(default=1, ge=1, description="torch threads")
    policy: PolicySettings | None = Field(
        default=None,
        description="θ: null or kind linear = the built-in action scorer; kind llm = a language model "
        "proposing action lines (model:, temperature, max_tokens), parsed and validated by the host",
    )
    initial_pair: InitialPair | None = Field(
        default=None,
        description="null: tier 0 is the untrained pair; {pretrain: TASK, train_episodes, gate_episodes, "
        "generations, seed}: tier 0 is the pair pretrained on TASK (built once per run, recorded)",
    )

    def uses_model(self) -> bool:
        return self.policy is not None and self.policy.kind == "llm"

    def run_config(self) -> dict[str, Any]:
        """The frozen config (without ``policy`` / ``initial_pair`` when unset, so runs made before
        they existed resume)."""
        d = self.model_dump(mode="json")
        for key in ("policy", "initial_pair"):
            if d.get(key) is None:
                d.pop(key, None)
        return d


def check_config(config: Config, source: str) -> None:
    """The checks a ``gui`` config needs beyond its schema (``rsi-workbench run`` makes them before
    anything is written): ``initial_pair.pretrain`` is a known MiniWoB++ task other than ``task``,
    and a pretrained pair needs the built-in (linear) θ."""
    from rsi_workbench.config import config_error
    from rsi_workbench.domains.gui.tasks import UnknownTaskError, resolve_task

    ip = config.initial_pair
    if ip is None:
        return
    try:
        resolve_task(ip.pretrain)
    except UnknownTaskError as e:
        raise config_error(source, "initial_pair.pretrain", str(e)) from None
    if resolve_task(ip.pretrain) == resolve_task(config.task):
        raise config_error(
            source,
            "initial_pair.pretrain",
            f"{ip.pretrain!r} is the experiment's own task; pretrain on another task (e.g. click-option)",
        )
    if config.uses_model():
        raise config_error(
            source, "initial_pair", "a pretrained pair needs the built-in θ (policy: null or kind linear)"
        )


def fixed_test_seeds(config: Config) -> list[int]:
    """The fixed test instances' seeds (independent of the experiment seed)."""
    return [derive_seed(TEST_SALT, config.task, i) % 2**31 for i in range(config.test_instances)]


def episode_seed(config: Config, seed: int, generation: int, j: int) -> int:
    return derive_seed("gui-episode", config.task, seed, generation, j) % 2**31


def protocol_settings(config: Config, method: str, generation: int) -> ProtocolSettings:
    n = config.train_episodes + config.gate_episodes
    return ProtocolSettings.model_validate(
        {
            "k": config.k,
            "max_rounds": config.max_actions,
            "batch_size": 1,
            "rule": "utility_argmax",
            "utility": config.utility.model_dump(),
            "reliability": config.reliability.model_dump(),
            "adaptation": {"enabled": method != "policy_only", "min_examples": config.min_adapt_examples},
            "policy_update": {
                "enabled": method in ("rsi", "policy_only"),
                "min_records": config.min_policy_records,
            },
            "gates": config.gates.model_dump(),
            "gate_fraction": config.gate_episodes / n,
            "initial_design": config.explore_cycles if generation == 1 else 0,
            "audit": False,
        }
    )


def browser_content(env: GuiStepEnvironment) -> Callable[[int], str]:
    """An instance's content key (utterance + initial DOM hash), read from a fresh episode of its seed."""

    def content(seed: int) -> str:
        obs, _ = env._retrying(lambda e: e.reset(seed))
        return content_key(obs.utterance, [element_json(e) for e in obs.elements])

    return content


def draw_instances(config: Config, content: Callable[[int], str]) -> dict[str, Any]:
    """Test instances and every generation's episodes; an episode whose content equals a test
    instance's (or an earlier episode's) is skipped and recorded, so training/gate episodes and test
    instances are disjoint by content (asserted)."""
    test = {s: content(s) for s in fixed_test_seeds(config)}
    test_keys = set(test.values())
    episodes: dict[str, list[list[Any]]] = {}
    skipped = []
    seen: set[str] = set()
    n = config.train_episodes + config.gate_episodes
    for s in config.seeds:
        for g in range(1, config.generations + 1):
            rows: list[list[Any]] = []
            j = 0
            while len(rows) < n:
                if j >= 20 * n:
                    raise RuntimeError(
                        f"{config.task}: {j} draws gave only {len(rows)} distinct new instances"
                    )
                es = episode_seed(config, s, g, j)
                j += 1
                key = content(es)
                if key in test_keys or key in seen:
                    skipped.append([s, g, es, key])
                    continue
                seen.add(key)
                rows.append([es, key])
            episodes[f"{s}/{g}"] = rows
    assert_test_disjoint({"test": [[s, k] for s, k in test.items()], "episodes": episodes})
    return {"test": [[s, k] for s, k in test.items()], "episodes": episodes, "skipped": skipped}


def assert_test_disjoint(instances: dict[str, Any]) -> None:
    """Test instances share no content key with any training or gate episode (SplitOverlap if they do)."""
    train_keys = [r[1] for rows in instances["episodes"].values() for r in rows]
    assert_disjoint(
        test=[("content", k) for _, k in instances["test"]], episodes=[("content", k) for k in train_keys]
    )


def _spec(config: Config, env: GuiStepEnvironment, tasks: list[str], policy: Any, world: Any) -> TaskSpec:
    n = len(tasks)
    loader = policy.loader() if hasattr(policy, "loader") else ActionScoringPolicy.from_bytes
    return TaskSpec(
        name=f"gui/{config.task}",
        tasks=tasks,
        environment=env,
        policy=policy,
        predictor=world,
        load_policy=loader,
        load_predictor=OutcomeWorldModel.from_bytes,
        verifier=GuiVerifier(),
        budgets={EXTERNAL_FEEDBACK: float(n * config.max_actions), UPDATE_COMPUTE: config.update_budget},
    )


def initial_pair(
    config: Config, seed: int, llm_policy: Any = None, pretrained: tuple[Any, Any] | None = None
) -> tuple[Any, OutcomeWorldModel]:
    """Tier 0, the same for every method of a seed: ``pretrained`` (the config's ``initial_pair``)
    when given, else the untrained pair (zero weights; θ = ``llm_policy`` when the config's policy is
    a language model)."""
    if pretrained is not None:
        return pretrained[0], pretrained[1]
    world = OutcomeWorldModel(seed=seed, steps=config.world_steps)
    if llm_policy is not None:
        return llm_policy, world
    pol = ActionScoringPolicy(
        utility=config.utility.weights,
        seed=seed,
        temperature=config.temperature,
        max_actions=config.max_actions,
        ridge=config.ridge,
        always_submit=config.always_submit,
    )
    return pol, world


def run_generation(
    config: Config,
    env: GuiStepEnvironment,
    method: str,
    seed: int,
    g: int,
    rows: list[list[Any]],
    pair: tuple[Any, Any],
    path: Path,
) -> tuple[Any, Any, dict[str, Any]]:
    """One protocol run (generation ``g``) from ``pair``; returns the retained pair and a summary."""
    tasks = [f"s{seed}-g{g}-e{j}" for j in range(len(rows))]
    env.seeds.update({t: int(r[0]) for t, r in zip(tasks, rows)})
    settings = protocol_settings(config, method, g)
    spec = _spec(config, env, tasks, pair[0], pair[1])
    run_cfg = {
        "task": config.task,
        "method": method,
        "seed": seed,
        "generation": g,
        "protocol": settings.model_dump(mode="json"),
    }
    with Run.create(path, run_cfg, kind="protocol", exist_ok=True) as run:
        loop = Loop.open(spec, run, settings, seed=derive_seed("gui-loop", seed, g) % 2**31)
        if len(loop.splits["gate"]) != config.gate_episodes:
            raise AssertionError(
                f"gate split holds {len(loop.splits['gate'])} episodes, declared {config.gate_episodes}"
            )
        keys = {t: r[1] for t, r in zip(tasks, rows)}
        assert_disjoint(
            update=[keys[t] for t in loop.splits["update"]], gate=[keys[t] for t in loop.splits["gate"]]
        )
        loop.run()
        audits = [e.payload for e in run.events("final_audit")]
        assert loop.predictor is not None
        summary = {
            "splits": loop.splits,
            "policy_version": loop.policy.version,
            "predictor_version": loop.predictor.version,
            "episodes": audits[-len(tasks) :],
        }
        return loop.policy, loop.predictor, summary


def store_pair(run: Run, pol: Any, world: Any) -> dict[str, str]:
    """Store a pair as the run's artifacts; its artifact ids and versions."""
    return {
        "policy_artifact": run.artifacts.put(pol.to_bytes(), name=f"policy-{pol.version}"),
        "predictor_artifact": run.artifacts.put(world.to_bytes(), name=f"world-{world.version}"),
        "policy_version": pol.version,
        "predictor_version": world.version,
    }


def _evaluate_tier(
    config: Config,
    run: Run,
    pool_box: list[Any],
    pair: dict[str, str],
    done: set[tuple[str, int]],
    load_policy: Callable[[bytes], Any] = ActionScoringPolicy.from_bytes,
) -> None:
    """Play every test instance not yet played with this pair; one event per episode."""
    from rsi_workbench.domains.gui import BrowserPool, EpisodeLimits

    key = f"{pair['policy_artifact'][:16]}:{pair['predictor_artifact'][:16]}"
    todo = [s for s in fixed_test_seeds(config) if (key, s) not in done]
    if not todo:
        return
    if not pool_box:
        limits = EpisodeLimits(config.max_actions, config.wall_clock_s, page_timer_s=config.wall_clock_s)
        pool_box.append(
            BrowserPool(config.task, config.browsers, limits=limits, max_retries=config.max_retries).start()
        )
    pol = load_policy(run.artifacts.get(pair["policy_artifact"]))
    world = OutcomeWorldModel.from_bytes(run.artifacts.get(pair["predictor_artifact"]))
    agent = PairAgent(pol, world, config.k, config.utility, TEST_SALT)

    def record(res: Any) -> None:
        stats = episode_stats(res.actions, res.outcome == "done", res.raw_reward)
        run.append(
            "test_episode",
            {
                "pair": key,
                "test_seed": res.seed,
                "outcome": res.outcome,
                "utterance": res.utterance,
                "actions": res.actions,
                "invalid_actions": res.invalid_actions,
                "elapsed_s": res.elapsed_s,
                "attempts": res.attempts,
                "infra_errors": res.infra_errors,
                "infra_failure": res.infrastructure_failure,
                "evidence": res.evidence,
                **stats,
            },
        )
        done.add((key, res.seed))

    pool_box[0].run(agent, todo, on_result=record)
    run.commit()


def run_experiment(config: Config, out: Path, *, resume: bool = False) -> Path:
    """Run every (seed, method, generation) and every tier's test episodes not yet recorded in ``out``."""
    import torch

    torch.set_num_threads(config.threads)
    out = Path(out)
    run = Run.create(out, config.run_config(), kind="gui", exist_ok=resume)
    env = GuiStepEnvironment(config.task, max_retries=config.max_retries)
    pool_box: list[Any] = []
    with run, contextlib.ExitStack() as stack:
        stack.callback(env.close)
        stack.callback(lambda: [p.close() for p in pool_box])
        inst = run.events("instances")
        if not inst:
            run.append("experiment_started", {"task": config.task, "pid": os.getpid()})
            run.append("instances", draw_instances(config, browser_content(env)))
            run.commit()
            inst = run.events("instances")
        instances = inst[0].payload
        assert_test_disjoint(instances)
        gens = {
            (e.payload["seed"], e.payload["method"], e.payload["generation"]): e.payload
            for e in run.events("generation_finished")
        }
        tiers = {(e.payload["seed"], e.payload["method"], e.payload["tier"]) for e in run.events("tier")}
        pretrained = None
        if config.initial_pair is not None:
            from rsi_workbench.experiments.gui.pretrain import pretrained_pair

            pretrained = pretrained_pair(config, run, out)
        done = {(e.payload["pair"], e.payload["test_seed"]) for e in run.events("test_episode")}
        for s in config.seeds:
            llm_pol = None
            policy_runs: list[Run] = []
            if config.uses_model():
                assert config.policy is not None
                llm_pol, policy_run = open_llm_policy(
                    config.policy, out, s, always_submit=config.always_submit
                )
                stack.callback(policy_run.close)
                policy_runs = [policy_run]  # the seed's model calls: it grows with each generation
            load_policy = llm_pol.loader() if llm_pol is not None else ActionScoringPolicy.from_bytes
            for m in config.methods:
                pol, world = initial_pair(config, s, llm_pol, pretrained)
                pairs = [store_pair(run, pol, world)]
                for g in range(1, config.generations + 1):
                    if (s, m, g) in gens:
                        p = gens[(s, m, g)]
                        pol = load_policy(run.artifacts.get(p["policy_artifact"]))
                        world = OutcomeWorldModel.from_bytes(run.artifacts.get(p["predictor_artifact"]))
                        pairs.append({k: p[k] for k in pairs[0]})
                        continue
                    t0 = time.perf_counter()
                    rel = Path("runs") / f"{m}-seed{s}" / f"gen{g}"
                    pol, world, summ = run_generation(
                        config, env, m, s, g, instances["episodes"][f"{s}/{g}"], (pol, world), out / rel
                    )
                    pair = store_pair(run, pol, world)
                    pairs.append(pair)
                    run.append(
                        "generation_finished",
                        {
                            "seed": s,
                            "method": m,
                            "generation": g,
                            "run_dir": str(rel),
                            "wall_s": time.perf_counter() - t0,
                            **pair,
                            **summ,
                            **child_runs(out, out / rel, grows=policy_runs),
                        },
                    )
                    run.commit()
                for tier, pair in enumerate(pairs):
                    _evaluate_tier(config, run, pool_box, pair, done, load_policy)
                    if (s, m, tier) not in tiers:
                        key = f"{pair['policy_artifact'][:16]}:{pair['predictor_artifact'][:16]}"
                        run.append("tier", {"seed": s, "method": m, "tier": tier, "pair": key, **pair})
                        run.commit()
        if not run.events("experiment_finished"):
            run.append("experiment_finished", {"browser_replacements": env.replacements})
            run.commit()
    return out
