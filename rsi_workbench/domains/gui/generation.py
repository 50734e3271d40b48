"""One generation of the retained (θ, φ) pair on a MiniWoB++ task: a protocol run of the
:class:`~rsi_workbench.protocol.loop.Loop` over declared training and gate episodes.

:class:`GenerationSettings` is the block these functions read (the ``gui`` experiment's config
composes it, field for field): the task, the episodes per generation, θ's and φ's knobs and the
protocol's criteria. One loop cycle is one step of every unfinished episode — θ proposes K actions,
φ predicts their effect, eq. 7 selects, the browser executes (:mod:`.binding`) — followed by
reliability (eq. 10), the triggers (eq. 9, 11), the component and pair gates and retention
(eq. 13–18). :func:`run_generation` starts from a pair and returns the pair it retained.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from rsi_workbench.budget import EXTERNAL_FEEDBACK, UPDATE_COMPUTE
from rsi_workbench.config import StrictModel
from rsi_workbench.domains.gui.binding import GuiStepEnvironment, GuiVerifier
from rsi_workbench.domains.gui.components import (
    ActionScoringPolicy,
    OutcomeWorldModel,
    exact_checkbox_world,
)
from rsi_workbench.domains.gui.features import content_key, element_json
from rsi_workbench.protocol.gates import PairGateCriteria
from rsi_workbench.protocol.loop import GateSettings, Loop, ProtocolSettings
from rsi_workbench.protocol.reliability import ReliabilityCriteria
from rsi_workbench.protocol.seeds import derive_seed
from rsi_workbench.protocol.selection import UtilitySpec
from rsi_workbench.protocol.spec import TaskSpec
from rsi_workbench.protocol.splits import assert_disjoint
from rsi_workbench.records import Run

Method = Literal["rsi", "world_based", "policy_only", "oracle"]
"""rsi: θ and φ updated and gated; world_based: φ only; policy_only: θ only; oracle: as rsi, but θ's
update labels every candidate of the update states by its true worth (the best policy update the
same episodes allow; click-checkboxes pages only)."""
StartWorld = Literal["initial", "exact"]
StartPolicy = Literal["initial", "untrained"]


def _default_gates() -> GateSettings:
    return GateSettings(pair=PairGateCriteria(max_brier_increase=0.1))


def _default_utility() -> UtilitySpec:
    return UtilitySpec(weights={"p_success": 1.0, "submit_score": 0.5, "ends_success": 0.5})


class GenerationSettings(StrictModel):
    """A generation of the pair on one task: its episodes, θ's and φ's knobs, the protocol's criteria."""

    task: str = Field(default="click-checkboxes", description="a MiniWoB++ task name")
    generations: int = Field(
        default=2, ge=1, description="protocol runs in sequence; tiers = generations + 1"
    )
    train_episodes: int = Field(default=16, ge=1, description="update-split episodes per generation")
    gate_episodes: int = Field(default=6, ge=1, description="gate-split episodes per generation")
    max_actions: int = Field(default=8, ge=1, description="actions per episode (the paper: 8)")
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
    max_retries: int = Field(default=2, ge=0, description="retries of a step/episode on a fresh browser")


def protocol_settings(s: GenerationSettings, method: str, generation: int) -> ProtocolSettings:
    """The protocol's settings of one generation of ``method`` (which of θ and φ it updates)."""
    n = s.train_episodes + s.gate_episodes
    return ProtocolSettings.model_validate(
        {
            "k": s.k,
            "max_rounds": s.max_actions,
            "batch_size": 1,
            "rule": "utility_argmax",
            "utility": s.utility.model_dump(),
            "reliability": s.reliability.model_dump(),
            "adaptation": {"enabled": method != "policy_only", "min_examples": s.min_adapt_examples},
            "policy_update": {
                "enabled": method in ("rsi", "policy_only", "oracle"),
                "min_records": s.min_policy_records,
            },
            "gates": s.gates.model_dump(),
            "gate_fraction": s.gate_episodes / n,
            "initial_design": s.explore_cycles if generation == 1 else 0,
            "audit": False,
        }
    )


def browser_content(env: GuiStepEnvironment) -> Callable[[int], str]:
    """An instance's content key (utterance + initial DOM hash), read from a fresh episode of its seed."""

    def content(seed: int) -> str:
        obs, _ = env._retrying(lambda e: e.reset(seed))
        return content_key(obs.utterance, [element_json(e) for e in obs.elements])

    return content


def task_spec(s: GenerationSettings, env: Any, tasks: list[str], policy: Any, world: Any) -> TaskSpec:
    """The engine's task spec T_d of one generation: its episodes, the pair, the verifier, budgets."""
    n = len(tasks)
    loader = policy.loader() if hasattr(policy, "loader") else ActionScoringPolicy.from_bytes
    return TaskSpec(
        name=f"gui/{s.task}",
        tasks=tasks,
        environment=env,
        policy=policy,
        predictor=world,
        load_policy=loader,
        load_predictor=OutcomeWorldModel.from_bytes,
        verifier=GuiVerifier(),
        budgets={EXTERNAL_FEEDBACK: float(n * s.max_actions), UPDATE_COMPUTE: s.update_budget},
    )


def initial_pair(
    s: GenerationSettings, seed: int, llm_policy: Any = None, pretrained: tuple[Any, Any] | None = None
) -> tuple[Any, OutcomeWorldModel]:
    """Tier 0, the same for every method of a seed: ``pretrained`` when given, else the untrained
    pair (zero weights; θ = ``llm_policy`` when θ is a language model)."""
    if pretrained is not None:
        return pretrained[0], pretrained[1]
    world = OutcomeWorldModel(seed=seed, steps=s.world_steps)
    if llm_policy is not None:
        return llm_policy, world
    pol = ActionScoringPolicy(
        utility=s.utility.weights,
        seed=seed,
        temperature=s.temperature,
        max_actions=s.max_actions,
        ridge=s.ridge,
        always_submit=s.always_submit,
    )
    return pol, world


def starting_pair(
    s: GenerationSettings,
    seed: int,
    pair: tuple[Any, OutcomeWorldModel],
    *,
    world: StartWorld = "initial",
    policy: StartPolicy = "initial",
) -> tuple[Any, OutcomeWorldModel]:
    """Tier 0 with the experiment's start overrides: ``world: exact`` replaces φ by the checkbox rule
    (:func:`exact_checkbox_world`), ``policy: untrained`` replaces θ by zero weights; ``initial``
    keeps ``pair`` (the untrained or pretrained pair)."""
    pol, wm = pair
    if world == "exact":
        wm = exact_checkbox_world(seed, steps=s.world_steps)
    if policy == "untrained":
        pol, _ = initial_pair(s, seed)
    return pol, wm


def run_generation(
    s: GenerationSettings,
    env: Any,
    method: str,
    seed: int,
    g: int,
    rows: list[list[Any]],
    pair: tuple[Any, Any],
    path: Path,
) -> tuple[Any, Any, dict[str, Any]]:
    """One protocol run (generation ``g``, episodes ``rows`` = [[seed, content key], ...]) from
    ``pair`` into ``path``; returns the retained pair and a summary."""
    tasks = [f"s{seed}-g{g}-e{j}" for j in range(len(rows))]
    if method == "oracle":
        if not isinstance(pair[0], ActionScoringPolicy):
            raise ValueError("the oracle method needs the built-in θ (policy: null or kind linear)")
        pair = (pair[0].as_oracle(), pair[1])
    env.seeds.update({t: int(r[0]) for t, r in zip(tasks, rows)})
    settings = protocol_settings(s, method, g)
    spec = task_spec(s, env, tasks, pair[0], pair[1])
    run_cfg = {
        "task": s.task,
        "method": method,
        "seed": seed,
        "generation": g,
        "protocol": settings.model_dump(mode="json"),
    }
    with Run.create(path, run_cfg, kind="protocol", exist_ok=True) as run:
        loop = Loop.open(spec, run, settings, seed=derive_seed("gui-loop", seed, g) % 2**31)
        if len(loop.splits["gate"]) != s.gate_episodes:
            raise AssertionError(
                f"gate split holds {len(loop.splits['gate'])} episodes, declared {s.gate_episodes}"
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


def load_pair(
    run: Run, payload: dict[str, Any], load_policy: Callable[[bytes], Any] = ActionScoringPolicy.from_bytes
) -> tuple[Any, OutcomeWorldModel]:
    """The pair an event (``initial_pair``, ``generation_finished``, ``tier``) stored as artifacts."""
    pol = load_policy(run.artifacts.get(payload["policy_artifact"]))
    world = OutcomeWorldModel.from_bytes(run.artifacts.get(payload["predictor_artifact"]))
    return pol, world
