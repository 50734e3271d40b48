"""``gui`` experiment: RSI-Anything's GUI family (MiniWoB++ click-checkboxes) on the retained-pair engine.

Per experiment seed and method, ``generations`` protocol runs (:class:`~rsi_workbench.protocol.loop.Loop`)
follow each other, each over its own declared training and gate episodes (fresh instances): one
loop cycle is one step of every unfinished episode — θ proposes K actions, φ predicts their effect,
eq. 7 selects, the browser executes — followed by reliability (eq. 10), the triggers (eq. 9, 11),
the component and pair gates and retention (eq. 13–18); the generation and the pair are the GUI
domain's (:mod:`rsi_workbench.domains.gui.generation`). A generation starts
from the pair its predecessor retained; the pair retained after generation g is tier g (tier 0 is
the untrained pair, or with ``initial_pair`` the pair pretrained on another task,
:mod:`rsi_workbench.domains.gui.pretrain`). Every tier then plays the fixed test instances as whole episodes (capped at
``max_actions`` actions and ``wall_clock_s``), which never feed learning; test instances are
disjoint from every training and gate episode by content (utterance + initial DOM hash), asserted.

Methods: ``rsi`` (policy and world model updated and gated), ``world_based`` (the control:
world model updated, policy fixed), ``policy_only`` (policy updated, world model fixed: which of
the retained pair's two updates carries a gain) and ``oracle`` (as rsi, but θ's update labels
every candidate action of its states by its true worth: the best policy update the same episodes
allow). ``start_world: exact`` / ``start_policy: untrained`` make the policy the bottleneck (φ right
for the page from tier 0, θ poor). Everything is appended as events (the experiment
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

from rsi_workbench.domains.gui.binding import GuiStepEnvironment, PairAgent, episode_stats
from rsi_workbench.domains.gui.components import ActionScoringPolicy
from rsi_workbench.domains.gui.generation import (
    GenerationSettings,
    Method,
    StartPolicy,
    StartWorld,
    browser_content,
    initial_pair,
    load_pair,
    run_generation,
    starting_pair,
    store_pair,
)
from rsi_workbench.domains.gui.llm_policy import PolicySettings, open_llm_policy
from rsi_workbench.domains.gui.pretrain import InitialPair, pretrained_pair
from rsi_workbench.protocol.seeds import derive_seed
from rsi_workbench.protocol.splits import assert_disjoint
from rsi_workbench.records import Run, child_runs

CHILD_RUN_EVENTS = ("generation_finished", "initial_pair")  # events that finish child runs (records.children)

TEST_SALT = "gui-test-instance"


def _default_methods() -> list[Method]:
    return ["rsi", "world_based"]


class Config(GenerationSettings):
    """The ``gui`` experiment: a MiniWoB++ task, methods, seeds, episodes per generation, caps,
    thresholds (the generation's fields are the domain's :class:`GenerationSettings`)."""

    experiment: Literal["gui"] = "gui"
    methods: list[Method] = Field(default_factory=lambda: _default_methods())
    seeds: list[int] = Field(default_factory=lambda: [0], description="experiment seeds (runs per method)")
    test_instances: int = Field(default=100, ge=1, description="fixed test instances (same for every seed)")
    wall_clock_s: float = Field(
        default=120.0, gt=0, description="wall clock per test episode (the paper: 120 s)"
    )
    browsers: int = Field(default=1, ge=1, description="browsers playing test episodes")
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

    start_world: StartWorld = Field(
        default="initial",
        description="initial: tier 0's φ as built (untrained or initial_pair); exact: φ set to the "
        "checkbox rule, already right for the page (the policy becomes the bottleneck)",
    )
    start_policy: StartPolicy = Field(
        default="initial",
        description="initial: tier 0's θ as built; untrained: θ reset to zero weights (a poor policy)",
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

    if "oracle" in config.methods and config.uses_model():
        raise config_error(
            source, "methods", "the oracle method needs the built-in θ (policy: null or linear)"
        )
    if "oracle" in config.methods and not config.task.startswith("click-checkboxes"):
        raise config_error(source, "methods", "the oracle method reads click-checkboxes utterances only")
    if config.start_policy == "untrained" and config.uses_model():
        raise config_error(source, "start_policy", "untrained resets the built-in θ; policy must be linear")
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
    pol, world = load_pair(run, pair, load_policy)
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
            pretrained = pretrained_pair(config, config.initial_pair, run, out)
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
                pol, world = starting_pair(
                    config,
                    s,
                    initial_pair(config, s, llm_pol, pretrained),
                    world=config.start_world,
                    policy=config.start_policy,
                )
                pairs = [store_pair(run, pol, world)]
                for g in range(1, config.generations + 1):
                    if (s, m, g) in gens:
                        p = gens[(s, m, g)]
                        pol, world = load_pair(run, p, load_policy)
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
