"""``rsi-workbench tasks pools`` and ``tasks rank-pools`` (docs/code-ranker.md).

Added to the ``tasks`` command of :mod:`rsi_workbench.domains.code_repair.commands` (the domain
layer cannot import the experiment code these commands run).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def _model_block(value: str | None, cpu_threads: int | None) -> Any:
    """A ``model:`` block from ``--model``: a YAML/JSON file (its ``model:`` block, or the whole
    file) or a model name (``default``, a checkpoint directory, a ``.gguf`` file)."""
    if value is None:
        return None
    from rsi_workbench.config import read_config_file
    from rsi_workbench.models.config import ModelConfig

    p = Path(value)
    if p.is_file() and p.suffix in (".yaml", ".yml", ".json"):
        data = read_config_file(p)
        block = dict(data.get("model", data))
    else:
        block = {"name": value}
    if cpu_threads is not None:
        block["cpu_threads"] = cpu_threads
    return ModelConfig.model_validate(block)


def _coder_block(value: str | None) -> Any:
    """A ``coder:`` block from ``--coder FILE`` (its ``coder:`` block, or the whole file)."""
    if value is None:
        return None
    from rsi_workbench.config import read_config_file, validate_config
    from rsi_workbench.domains.code_repair.coder_settings import CoderSettings

    data = read_config_file(value)
    return validate_config(
        dict(data.get("coder", data)), CoderSettings, source=value, base_dir=Path(value).parent
    )


def cmd_pools(args: argparse.Namespace) -> int:
    """Build (or resume) pools that contain a fix and print what they hold."""
    from rsi_workbench.domains.code_repair.pools import PoolsError, build_pools, pools_line
    from rsi_workbench.domains.code_repair.tasks import TaskFileError

    def progress(row: dict[str, Any]) -> None:
        fixes = sum(c["fix"] for c in row["candidates"])
        print(f"  {row['task_id']}: {len(row['candidates'])} candidates, {fixes} fix(es)", flush=True)

    from rsi_workbench.config import ConfigError

    try:
        coder = _coder_block(args.coder)
        data = build_pools(
            args.tasks,
            args.out,
            n=args.n,
            pools_per_task=args.pools_per_task,
            seed=args.seed,
            limit=args.limit or None,
            workers=args.workers,
            on_task=None if args.quiet else progress,
            coder=coder,
        )
    except (PoolsError, TaskFileError, ConfigError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{args.out}: {pools_line(data)}")
    return 0


def cmd_rank_pools(args: argparse.Namespace) -> int:
    """Rank pools with one ranker and print ``top1_recall: <value> [<lo>, <hi>]`` and AUROC."""
    from rsi_workbench.domains.code_repair.pools import PoolsError
    from rsi_workbench.domains.code_repair.rank_pools import run_rank_pools, save_summary
    from rsi_workbench.domains.code_repair.tasks import TaskFileError
    from rsi_workbench.models.interface import Unsupported

    model = None
    if args.ranker in ("lm", "lm_readout"):
        model = _model_block(args.model or "default", args.cpu_threads)
    try:
        text, res = run_rank_pools(
            args.source,
            args.ranker,
            pools_dir=args.pools_dir,
            model=model,
            seed=args.seed,
            n=args.n,
            pools_per_task=args.pools_per_task,
            pools_seed=args.pools_seed,
            limit=args.limit or None,
            workers=args.workers,
            world=json.loads(args.world) if args.world else None,
        )
    except (PoolsError, TaskFileError, NotImplementedError, Unsupported, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(text)
    if args.save:
        save_summary(args.save, res)
    return 0


def cmd_rank_table(args: argparse.Namespace) -> int:
    """Run a rank-table config's rankers on its pools and print the pre-registered verdict."""
    from rsi_workbench.config import ConfigError
    from rsi_workbench.domains.code_repair.pools import PoolsError
    from rsi_workbench.domains.code_repair.rank_table import run_table, save_table
    from rsi_workbench.domains.code_repair.tasks import TaskFileError
    from rsi_workbench.models.interface import Unsupported

    try:
        text, summary = run_table(args.config, rankers=args.ranker or None, limit=args.limit or None)
    except (ConfigError, PoolsError, TaskFileError, NotImplementedError, Unsupported, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(text)
    if args.save:
        save_table(args.save, summary)
    return 0


def _task_source(p: argparse.ArgumentParser) -> None:
    p.add_argument("--n", type=int, default=16, help="candidates per state at most (default 16)")
    p.add_argument("--pools-per-task", type=int, default=4, help="pools per fixable task at most (default 4)")
    p.add_argument("--limit", type=int, default=0, help="only the first N tasks")
    p.add_argument("--workers", type=int, default=1, help="sandbox processes (default 1)")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``pools`` and ``rank-pools`` to the ``tasks`` command (registered before this)."""
    tasks = subparsers.choices["tasks"]
    sub = next(a for a in tasks._actions if isinstance(a, argparse._SubParsersAction))
    p = sub.add_parser(
        "pools", help="pools of 4 candidates holding exactly one fix (resumable; docs/code-ranker.md)"
    )
    p.add_argument("tasks", help="a task file, or 'humanevalfix' for the built-in tasks")
    p.add_argument("--out", required=True, help="pools directory (re-running the same command resumes it)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quiet", action="store_true", help="no line per finished task")
    p.add_argument(
        "--coder", help="a YAML file with a coder: block (llm | hybrid; default: the mutation coder)"
    )
    _task_source(p)
    p.set_defaults(func=cmd_pools)
    r = sub.add_parser("rank-pools", help="top-1 recall of a ranker on pools that contain a fix")
    r.add_argument(
        "source", help="a pools directory, a task file, or 'humanevalfix' (pools built and cached)"
    )
    r.add_argument(
        "--ranker",
        required=True,
        choices=["lm", "lm_readout", "features_readout", "minilm_verifier", "minilm_world", "random"],
    )
    r.add_argument(
        "--model", help="model name (default: SmolLM2), checkpoint, .gguf, or a YAML file with a model: block"
    )
    r.add_argument("--cpu-threads", type=int, default=None, help="torch threads of a CPU model")
    r.add_argument(
        "--pools-dir", help="where a task file's pools are built (default runs/code_ranker/pools-<sha>-...)"
    )
    r.add_argument("--pools-seed", type=int, default=0, help="seed of pools built here")
    r.add_argument(
        "--seed", type=int, default=0, help="seed of the random ranker, the folds and the bootstrap"
    )
    r.add_argument(
        "--world", help='minilm rankers: the experiment\'s world: block as JSON, e.g. \'{"encoder": "tiny"}\''
    )
    r.add_argument("--save", help="write the summary as JSON here")
    _task_source(r)
    r.set_defaults(func=cmd_rank_pools)
    t = sub.add_parser("rank-table", help="every ranker of a rank-table config on its pools, and the verdict")
    t.add_argument("config", help="e.g. benchmarks/data/code_ranker/rank_pools.yaml (its header: the rule)")
    t.add_argument("--ranker", action="append", help="only this ranker (repeatable; default: the config's)")
    t.add_argument("--limit", type=int, default=0, help="only the first N tasks (a pilot)")
    t.add_argument("--save", help="write the summary as JSON here")
    t.set_defaults(func=cmd_rank_table)
