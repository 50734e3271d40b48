"""A competent starting pair for the GUI experiment: (θ, φ) pretrained on another MiniWoB++ task.

``initial_pair: {pretrain: click-option, train_episodes: N, gate_episodes: M, generations: G, seed: S}``
in a ``gui`` config makes tier 0 — the pair every method of every seed starts from — the pair the
``rsi`` method retains after G protocol generations on the ``pretrain`` task (the experiment's own
loop, gates and retention, over N training + M gate episodes per generation, instances drawn from
``seed`` and distinct by content). It is built once per experiment directory, before any seed runs:
the generations are child protocol runs under ``<out>/pretrain/gen<g>``, and the ``initial_pair``
event records the settings, the episodes drawn, each generation's retained versions, the pair's
artifacts and the children's fingerprints, so the run's provenance holds where tier 0 came from and
a resumed run reloads it. Nothing is downloaded: the pretraining task is a page of the ``miniwob``
wheel played in the local Chromium.

:func:`dev_success` plays a pair on *development* instances of the experiment's task (their own
seed salt, disjoint by content from the fixed test instances, asserted), and ``python -m
rsi_workbench.experiments.gui.pretrain CONFIG --train-episodes 2,4,8`` sweeps the pretraining size
with it — how the size of a config's ``initial_pair`` is chosen without looking at test instances.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rsi_workbench.experiments.gui.binding import GuiStepEnvironment, PairAgent, episode_stats
from rsi_workbench.experiments.gui.components import ActionScoringPolicy, OutcomeWorldModel
from rsi_workbench.experiments.gui.experiment import (
    Config,
    InitialPair,
    browser_content,
    fixed_test_seeds,
    initial_pair,
    run_generation,
    store_pair,
)
from rsi_workbench.protocol.seeds import derive_seed
from rsi_workbench.records import Run, child_runs

DEV_SALT = "gui-dev-instance"
EVENT = "initial_pair"


def pretrain_config(config: Config) -> Config:
    """The experiment's settings on the pretraining task: its episodes, generations and seed, one method."""
    ip = config.initial_pair
    if ip is None:
        raise ValueError("the config declares no initial_pair")
    return config.model_copy(
        update={
            "task": ip.pretrain,
            "methods": ["rsi"],
            "seeds": [ip.seed],
            "generations": ip.generations,
            "train_episodes": ip.train_episodes,
            "gate_episodes": ip.gate_episodes,
            "initial_pair": None,
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


def load_pair(run: Run, payload: dict[str, Any]) -> tuple[ActionScoringPolicy, OutcomeWorldModel]:
    """The pair an ``initial_pair`` (or ``generation_finished``) event stored as artifacts."""
    pol = ActionScoringPolicy.from_bytes(run.artifacts.get(payload["policy_artifact"]))
    world = OutcomeWorldModel.from_bytes(run.artifacts.get(payload["predictor_artifact"]))
    return pol, world


def pretrained_pair(
    config: Config,
    run: Run,
    out: Path,
    env: Any = None,
    content: Callable[[int], str] | None = None,
) -> tuple[ActionScoringPolicy, OutcomeWorldModel]:
    """Tier 0 of a config with ``initial_pair``: reloaded from the run's ``initial_pair`` event, or
    pretrained now. ``env``: the pretraining task's environment (default a browser on it, a
    :class:`GuiStepEnvironment`); ``content``: an instance's content key by seed (default read from
    a fresh episode in ``env``)."""
    done = run.events(EVENT)
    if done:
        return load_pair(run, done[0].payload)
    ip = config.initial_pair
    if ip is None:
        raise ValueError("the config declares no initial_pair")
    pcfg = pretrain_config(config)
    with contextlib.ExitStack() as stack:
        if env is None:
            env = GuiStepEnvironment(ip.pretrain, max_retries=config.max_retries)
            stack.callback(env.close)
        episodes = draw_pretrain_episodes(ip, content or browser_content(env))
        pol, world = initial_pair(pcfg, ip.seed)
        gens, dirs = [], []
        for g in range(1, ip.generations + 1):
            rel = Path("pretrain") / f"gen{g}"
            pol, world, summ = run_generation(
                pcfg, env, "rsi", ip.seed, g, episodes[str(g)], (pol, world), out / rel
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


def dev_seeds(config: Config, n: int) -> list[int]:
    """``n`` development instance seeds of the experiment's task (not the test instances' salt)."""
    return [derive_seed(DEV_SALT, config.task, i) % 2**31 for i in range(n)]


def dev_success(
    config: Config, pair: tuple[Any, OutcomeWorldModel], n: int, content: Callable[[int], str]
) -> dict[str, Any]:
    """Play ``pair`` on ``n`` development instances of ``config.task`` (content-disjoint from the
    fixed test instances, asserted) and return their success rate and raw outcomes."""
    from rsi_workbench.domains.gui import BrowserPool, EpisodeLimits
    from rsi_workbench.protocol.splits import assert_disjoint

    seeds = dev_seeds(config, n)
    assert_disjoint(
        test=[("content", content(s)) for s in fixed_test_seeds(config)],
        dev=[("content", content(s)) for s in seeds],
    )
    agent = PairAgent(pair[0], pair[1], config.k, config.utility, DEV_SALT)
    limits = EpisodeLimits(config.max_actions, config.wall_clock_s, page_timer_s=config.wall_clock_s)
    with BrowserPool(config.task, config.browsers, limits=limits, max_retries=config.max_retries) as pool:
        results = pool.run(agent, seeds)
    ok = [r for r in results if not r.infrastructure_failure]
    succ = [episode_stats(r.actions, r.outcome == "done", r.raw_reward)["success"] for r in ok]
    return {
        "episodes": len(ok),
        "success": sum(succ) / len(ok) if ok else float("nan"),
        "mean_actions": sum(len(r.actions) for r in ok) / len(ok) if ok else float("nan"),
    }


def sweep(config: Config, sizes: Sequence[int], n_dev: int, out: Path) -> list[dict[str, Any]]:
    """For each pretraining size N (``initial_pair.train_episodes``): pretrain (a run under
    ``out/n<N>``, reused when it exists) and measure the pair's success on ``n_dev`` dev instances."""
    if config.initial_pair is None:
        raise ValueError("the config declares no initial_pair to sweep")
    rows = []
    target = GuiStepEnvironment(config.task, max_retries=config.max_retries)
    content = functools.lru_cache(maxsize=None)(browser_content(target))
    try:
        for size in sizes:
            ip = config.initial_pair.model_copy(update={"train_episodes": int(size)})
            cfg = config.model_copy(update={"initial_pair": ip})
            path = out / f"n{size}"
            with Run.create(
                path, {"sweep": ip.model_dump(mode="json")}, kind="gui_pretrain", exist_ok=True
            ) as run:
                pair = pretrained_pair(cfg, run, path)
            res = dev_success(cfg, pair, n_dev, content)
            rows.append(
                {"train_episodes": int(size), **res, "policy": pair[0].version, "world": pair[1].version}
            )
            print(
                f"pretrain {ip.pretrain} N={size}+{ip.gate_episodes} x{ip.generations} seed {ip.seed}: "
                f"{config.task} dev success {res['success']:.2f} over {res['episodes']} "
                f"(mean actions {res['mean_actions']:.2f}; {pair[0].version}, {pair[1].version})",
                flush=True,
            )
    finally:
        target.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    """CLI: sweep a config's ``initial_pair.train_episodes`` against development instances."""
    from rsi_workbench.config import config_error, read_config_file, validate_config
    from rsi_workbench.experiments.gui.experiment import check_config

    ap = argparse.ArgumentParser(description=sweep.__doc__)
    ap.add_argument("config")
    ap.add_argument("--train-episodes", default="2,4,8,16", help="comma-separated pretraining sizes N")
    ap.add_argument("--dev", type=int, default=40, help="development instances of the experiment's task")
    ap.add_argument("--out", required=True, help="folder for the pretraining runs")
    args = ap.parse_args(argv)
    data = read_config_file(args.config)
    if data.get("experiment") != "gui":
        raise config_error(args.config, "experiment", f"expected gui, got {data.get('experiment')!r}")
    cfg: Config = validate_config(data, Config, source=args.config, base_dir=Path(args.config).parent)
    check_config(cfg, args.config)
    if cfg.initial_pair is None:
        raise config_error(args.config, "initial_pair", "missing: the sweep varies its train_episodes")
    sweep(cfg, [int(x) for x in args.train_episodes.split(",")], args.dev, Path(args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
