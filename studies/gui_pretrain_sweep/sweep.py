"""How large should a ``gui`` config's ``initial_pair`` be? A sweep of the pretraining size against
*development* instances of the experiment's task, never its test instances.

:func:`dev_success` plays a pair on development instances of the experiment's task (their own seed
salt, disjoint by content from the fixed test instances, asserted), and ``python
studies/gui_pretrain_sweep/sweep.py CONFIG --train-episodes 2,4,8 --dev 40 --out DIR`` sweeps the
pretraining size (``initial_pair.train_episodes``) with it: each size is pretrained once
(:func:`rsi_workbench.domains.gui.pretrain.pretrained_pair`, a run under ``DIR/n<N>``, reused when
it exists) and its pair's development success printed.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rsi_workbench.domains.gui.binding import GuiStepEnvironment, PairAgent, episode_stats
from rsi_workbench.domains.gui.components import OutcomeWorldModel
from rsi_workbench.domains.gui.generation import browser_content
from rsi_workbench.domains.gui.pretrain import pretrained_pair
from rsi_workbench.experiments.gui.experiment import Config, check_config, fixed_test_seeds
from rsi_workbench.protocol.seeds import derive_seed
from rsi_workbench.records import Run

DEV_SALT = "gui-dev-instance"


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
                pair = pretrained_pair(cfg, ip, run, path)
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
