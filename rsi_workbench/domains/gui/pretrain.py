"""A competent starting pair: (θ, φ) pretrained on another MiniWoB++ task.

:class:`InitialPair` (``initial_pair: {pretrain: click-option, train_episodes: N, gate_episodes: M,
generations: G, seed: S}`` in a ``gui`` config) makes tier 0 — the pair every method of every seed
starts from — the pair the ``rsi`` method retains after G protocol generations on the ``pretrain``
task (the generation of :mod:`.generation`: the same loop, gates and retention, over N training + M
gate episodes per generation, instances drawn from ``seed`` and distinct by content). It is built
once per experiment directory, before any seed runs: the generations are child protocol runs under
``<out>/pretrain/gen<g>``, and the ``initial_pair`` event records the settings, the episodes drawn,
each generation's retained versions, the pair's artifacts and the children's fingerprints, so the
run's provenance holds where tier 0 came from and a resumed run reloads it. Nothing is downloaded:
the pretraining task is a page of the ``miniwob`` wheel played in the local Chromium.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import Field

from rsi_workbench.config import StrictModel
from rsi_workbench.domains.gui.binding import GuiStepEnvironment
from rsi_workbench.domains.gui.components import ActionScoringPolicy, OutcomeWorldModel
from rsi_workbench.domains.gui.generation import (
    GenerationSettings,
    browser_content,
    initial_pair,
    load_pair,
    run_generation,
    store_pair,
)
from rsi_workbench.protocol.seeds import derive_seed
from rsi_workbench.records import Run, child_runs

EVENT = "initial_pair"


class InitialPair(StrictModel):
    """Tier 0 pretrained on another MiniWoB++ task: the pair the ``rsi`` method retains after
    ``generations`` protocol runs of ``train_episodes`` + ``gate_episodes`` each."""

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


def pretrain_settings(s: GenerationSettings, ip: InitialPair) -> GenerationSettings:
    """The generation settings on the pretraining task: its episodes and generations."""
    return s.model_copy(
        update={
            "task": ip.pretrain,
            "generations": ip.generations,
            "train_episodes": ip.train_episodes,
            "gate_episodes": ip.gate_episodes,
        }
    )


def draw_pretrain_episodes(ip: InitialPair, content: Callable[[int], str]) -> dict[str, list[list[Any]]]:
    """{generation: [[episode seed, content key], ...]}: N + M instances per generation of the
    pretraining task, from ``ip.seed``, each distinct by content from every earlier one."""
    n = ip.train_episodes + ip.gate_episodes
    seen: set[str] = set()
    out: dict[str, list[list[Any]]] = {}
    for g in range(1, ip.generations + 1):
        rows: list[list[Any]] = []
        j = 0
        while len(rows) < n:
            if j >= 20 * n:
                raise RuntimeError(f"{ip.pretrain}: {j} draws gave only {len(rows)} distinct new instances")
            es = derive_seed("gui-pretrain", ip.pretrain, ip.seed, g, j) % 2**31
            j += 1
            key = content(es)
            if key not in seen:
                seen.add(key)
                rows.append([es, key])
        out[str(g)] = rows
    return out


def pretrained_pair(
    s: GenerationSettings,
    ip: InitialPair,
    run: Run,
    out: Path,
    env: Any = None,
    content: Callable[[int], str] | None = None,
) -> tuple[ActionScoringPolicy, OutcomeWorldModel]:
    """Tier 0 pretrained as ``ip`` declares: reloaded from the run's ``initial_pair`` event, or
    pretrained now. ``env``: the pretraining task's environment (default a browser on it, a
    :class:`GuiStepEnvironment`); ``content``: an instance's content key by seed (default read from
    a fresh episode in ``env``)."""
    done = run.events(EVENT)
    if done:
        return load_pair(run, done[0].payload)
    ps = pretrain_settings(s, ip)
    with contextlib.ExitStack() as stack:
        if env is None:
            env = GuiStepEnvironment(ip.pretrain, max_retries=s.max_retries)
            stack.callback(env.close)
        episodes = draw_pretrain_episodes(ip, content or browser_content(env))
        pol, world = initial_pair(ps, ip.seed)
        gens, dirs = [], []
        for g in range(1, ip.generations + 1):
            rel = Path("pretrain") / f"gen{g}"
            pol, world, summ = run_generation(
                ps, env, "rsi", ip.seed, g, episodes[str(g)], (pol, world), out / rel
            )
            solved = sum(bool(e.get("success")) for e in summ["episodes"])
            gens.append(
                {
                    "generation": g,
                    "run_dir": str(rel),
                    "policy_version": summ["policy_version"],
                    "predictor_version": summ["predictor_version"],
                    "episodes_solved": solved,
                    "episodes": len(summ["episodes"]),
                }
            )
            dirs.append(out / rel)
    pair = store_pair(run, pol, world)
    run.append(
        EVENT,
        {
            "settings": ip.model_dump(mode="json"),
            "task": ip.pretrain,
            "instances": episodes,
            "generations": gens,
            **pair,
            **child_runs(out, *dirs),
        },
    )
    run.commit()
    return pol, world
