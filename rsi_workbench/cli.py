"""``rsi-workbench`` command line: run configs, resume, report, list and query runs, datasets.

``run CONFIG`` dispatches on the config's ``experiment:`` field. Each experiment kind lives in its
own module (listed in :data:`EXPERIMENT_KINDS`) exposing ``Config`` (a pydantic model with an
``experiment: Literal[...]`` field), ``run_experiment(config, out, *, resume) -> Path`` and
``report(path) -> str`` (pure: it prints, never writes); engines add their kind with one line here
and touch nothing else. Any other ``experiment:`` is an experiment of one's own, named by an entry
point of the ``rsi_workbench.experiments`` group or an import path
(:mod:`rsi_workbench.experiments.custom`); ``experiment: protocol`` runs a protocol domain of one's
own (docs/extending-protocol.md). ``run`` and ``resume`` save the printed table as ``<dir>/report.txt`` (so does
``report --save``). A kind whose ``run_experiment`` takes ``extend`` grows with ``run --extend``; one
with ``stored_config(path)`` is resumed with that (its config as extended) instead of ``config.json``.
``report``, ``resume`` and ``run --resume/--extend`` first verify the finished child runs a directory
records (:func:`rsi_workbench.records.verify_children`; a kind's ``CHILD_RUN_EVENTS`` names its events
that finish one, for the note on children recorded before fingerprints existed): see docs/runs.md.
Other areas add sub-commands through a module with ``register(subparsers)`` listed in
:func:`command_modules`.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

# experiment kind -> module implementing it
EXPERIMENT_KINDS: dict[str, str] = {
    "records_smoke": "rsi_workbench.experiments.records_smoke",
    "discovery": "rsi_workbench.experiments.discovery.campaign",
    "discovery_round": "rsi_workbench.experiments.discovery.round",
    "discovery_rounds": "rsi_workbench.experiments.discovery.rounds",
    "discovery_credit": "rsi_workbench.experiments.discovery.credit_info",
    "dreaming": "rsi_workbench.experiments.dreaming.experiment",
    "program_agent": "rsi_workbench.experiments.dreaming.program_runs",
    "code_repair": "rsi_workbench.experiments.code_repair",
    "reactions": "rsi_workbench.experiments.reactions.experiment",
    "gui": "rsi_workbench.experiments.gui",
    "rsiagent": "rsi_workbench.experiments.rsiagent",
    "protocol": "rsi_workbench.experiments.protocol_plugin",
}
# experiment kind -> module with ``diagnostics(path) -> str`` (``report --diagnostics``)
DIAGNOSTICS: dict[str, str] = {
    "reactions": "rsi_workbench.experiments.reactions.diagnostics",
    "dreaming": "rsi_workbench.experiments.dreaming.diagnostics",
}


def command_modules() -> tuple[ModuleType, ...]:
    """Modules contributing sub-commands, each with ``register(subparsers)``; imported plainly (not by
    name) so the import-linter layer contracts see these edges."""
    from rsi_workbench.domains.code_repair import commands as code_repair_commands
    from rsi_workbench.domains.code_repair import pool_commands
    from rsi_workbench.domains.math import verify as verify_commands
    from rsi_workbench.domains.openevolve import compare as openevolve_compare
    from rsi_workbench.models import commands as model_commands
    from rsi_workbench.replay import commands as replay_commands
    from rsi_workbench.widgets import commands as widget_commands

    # pool_commands adds to code_repair_commands' `tasks` command: it comes after it
    return (
        widget_commands,
        replay_commands,
        code_repair_commands,
        pool_commands,
        model_commands,
        verify_commands,
        openevolve_compare,
    )


class CLIError(RuntimeError):
    """A user-facing error: printed without a traceback, exit status 2."""


def experiment_module(kind: str) -> ModuleType:
    """The module of a built-in kind, else an experiment of one's own: an entry point of the
    ``rsi_workbench.experiments`` group or an import path (:mod:`rsi_workbench.experiments.custom`)."""
    if kind in EXPERIMENT_KINDS:
        return importlib.import_module(EXPERIMENT_KINDS[kind])
    from rsi_workbench.experiments.custom import find_experiment
    from rsi_workbench.plugins import PluginError

    try:
        return find_experiment(kind, sorted(EXPERIMENT_KINDS))  # type: ignore[no-any-return]
    except PluginError as e:
        raise CLIError(f"experiment: {e}") from None


def load_experiment_config(path: str | Path, *, check: bool = True) -> Any:
    """Read a config file, pick its experiment kind, and validate it against that kind's model; input
    paths resolve against the file's folder. ``check``: also make the checks that need the config's
    inputs (:func:`rsi_workbench.experiments.preflight.preflight`: task ids, programs that compile,
    enough problems for the folds, grids, model blocks), so a run fails before it creates anything."""
    from rsi_workbench.config import ConfigError, read_config_file, validate_config

    data = read_config_file(path)
    kind = data.get("experiment")
    if kind is None:
        raise ConfigError(
            f"{path}: experiment: required field is missing (allowed: {sorted(EXPERIMENT_KINDS)})",
            file=str(path),
        )
    try:
        mod = experiment_module(str(kind))
    except CLIError as e:
        raise ConfigError(f"{path}: {e}", file=str(path)) from None
    cfg = validate_config(data, mod.Config, source=str(path), base_dir=Path(path).parent)
    if check:
        from rsi_workbench.experiments.preflight import preflight

        preflight(cfg, str(path))
        if callable(getattr(mod, "check_config", None)):  # the kind's own input checks
            mod.check_config(cfg, str(path))
    return cfg


# ---------------------------------------------------------------------------------------------
def save_report(path: str | Path, text: str) -> Path:
    """Write the printed results table as ``<path>/report.txt`` (by a run, a resume or ``report --save``)."""
    out = Path(path) / "report.txt"
    out.write_text(text + "\n")
    return out


def cmd_run(args: argparse.Namespace) -> int:
    import inspect

    from rsi_workbench.records import default_runs_dir, new_run_id

    cfg = load_experiment_config(args.config)
    mod = experiment_module(cfg.experiment)
    if args.extend:
        if not args.out:
            raise CLIError("--extend needs --out: the finished experiment directory to grow")
        if "extend" not in inspect.signature(mod.run_experiment).parameters:
            raise CLIError(f"experiment kind {cfg.experiment!r} cannot be extended (only resumed)")
    prefix = "".join(c if c.isalnum() or c in "_-" else "_" for c in str(cfg.experiment))
    out = Path(args.out) if args.out else default_runs_dir() / new_run_id(prefix)
    if args.resume or args.extend:  # continuing a directory: its finished children must be intact
        verify_finished_children(out, mod)
    kw = {"extend": True} if args.extend else {}
    fresh = not out.exists()
    try:
        path = mod.run_experiment(cfg, out, resume=args.resume, **kw)
    except Exception as e:
        if fresh and out.exists() and _user_error(e):  # a setup error: leave nothing that blocks a re-run
            import shutil

            shutil.rmtree(out)
            print(f"note: removed {out} (the run failed while setting up)", file=sys.stderr)
        raise
    text = mod.report(path)
    save_report(path, text)
    print(text)
    print(
        f"\nrun written to {path}\n  inspect: rsi-workbench report {path}\n  query:   rsi-workbench query "
        f'"SELECT kind, count(*) FROM events GROUP BY kind" --root {Path(path).parent}'
    )
    return 0


def _kind_of(path: Path) -> str:
    cfg_file = path / "config.json"
    if not cfg_file.exists():
        raise CLIError(f"{path} is not a run or experiment directory (no config.json)")
    kind = json.loads(cfg_file.read_text()).get("experiment")
    if kind is None:
        from rsi_workbench.records import Run

        if Run.open(path).events("loop_opened"):  # a protocol run made without an experiment config
            return "protocol"
        raise CLIError(f"{cfg_file} names no experiment kind")
    return str(kind)


def run_module(path: Path, kind: str, trusted: Sequence[str] = ()) -> ModuleType:
    """The module of the experiment kind a run's ``config.json`` names, for ``report`` and
    ``resume``: a built-in kind or an installed entry point of ``rsi_workbench.experiments``; an
    import path only when the user named it (``--trust-plugin``), else a CLIError naming path and flag."""
    if kind in EXPERIMENT_KINDS:
        return importlib.import_module(EXPERIMENT_KINDS[kind])
    from rsi_workbench.experiments.custom import ENTRY_POINT_GROUP
    from rsi_workbench.plugins import (
        PluginError,
        entry_point_names,
        is_import_path,
        is_trusted,
        load_entry_point,
        untrusted_message,
    )

    try:
        installed = load_entry_point(ENTRY_POINT_GROUP, kind) is not None
    except PluginError as e:
        raise CLIError(f"experiment: {e}") from None
    if not installed and not is_trusted(kind, trusted):
        where = f"{path / 'config.json'}: experiment"
        if is_import_path(kind):
            raise CLIError(untrusted_message(kind, where))
        raise CLIError(
            f"{where}: unknown kind {kind!r} (allowed: a built-in kind ({', '.join(sorted(EXPERIMENT_KINDS))}), "
            f"an entry point of {ENTRY_POINT_GROUP} (installed: "
            f"{', '.join(entry_point_names(ENTRY_POINT_GROUP)) or 'none'}) or, with --trust-plugin, an import path)"
        )
    return experiment_module(kind)


def config_import_paths(cfg: Any) -> list[tuple[str, str]]:
    """``(field, import path)`` of every import path a validated config names besides its kind: the
    ``protocol`` kind's component targets and selection rules written as ``pkg.mod:Name``."""
    from pydantic import BaseModel

    from rsi_workbench.experiments.protocol_plugin import Component
    from rsi_workbench.protocol.settings import ProtocolSettings

    out: list[tuple[str, str]] = []

    def walk(obj: Any, field: str) -> None:
        if isinstance(obj, Component):
            out.append((f"{field}.target", obj.target))
        elif isinstance(obj, ProtocolSettings) and ":" in obj.rule:
            out.append((f"{field}.rule", obj.rule))
        if isinstance(obj, BaseModel):
            for name in type(obj).model_fields:
                walk(getattr(obj, name), f"{field}.{name}" if field else name)
        elif isinstance(obj, list | tuple):
            for i, v in enumerate(obj):
                walk(v, f"{field}.{i}")
        elif isinstance(obj, dict):
            for k, v in obj.items():
                walk(v, f"{field}.{k}")

    walk(cfg, "")
    return out


def refuse_untrusted(path: Path, cfg: Any, trusted: Sequence[str]) -> None:
    """A CLIError (before anything runs) for the first import path the run's config names that the
    user did not name with ``--trust-plugin``; the folders it would be imported from are shown."""
    from rsi_workbench.plugins import is_trusted, untrusted_message

    for field, target in config_import_paths(cfg):
        if not is_trusted(target, trusted):
            msg = untrusted_message(target, f"{path / 'config.json'}: {field}")
            folders = [str(d) for d in getattr(cfg, "python_path", None) or []]
            if folders:
                msg += f" (it would be imported with python_path {folders} in front of the search path)"
            raise CLIError(msg)


def verify_finished_children(path: Path, mod: ModuleType) -> None:
    """Refuse (``ChildRunChanged``, exit 2) an experiment whose finished child runs' logs no longer
    match the fingerprints it recorded (docs/runs.md); note on stderr the finished children recorded
    before fingerprints existed (the kind's ``CHILD_RUN_EVENTS``), which open unverified."""
    from rsi_workbench.records import has_events, verify_children

    if not has_events(path):
        return
    check = verify_children(path, getattr(mod, "CHILD_RUN_EVENTS", ()))
    if check.unverified:
        print(
            f"note: {path}: {len(check.unverified)} finished child run(s) were recorded before child "
            f"fingerprints existed, so their logs are not verified (first: {check.unverified[0]})",
            file=sys.stderr,
        )


def cmd_resume(args: argparse.Namespace) -> int:
    """Continue a run; code its files name (an import path) is imported only with ``--trust-plugin``."""
    from rsi_workbench.plugins import UntrustedImport, only_trusted

    trusted = tuple(getattr(args, "trust_plugin", None) or ())
    try:
        with only_trusted(trusted):
            return _resume(args, trusted)
    except UntrustedImport as e:
        raise CLIError(str(e)) from None


def _resume(args: argparse.Namespace, trusted: Sequence[str]) -> int:
    from rsi_workbench.config import validate_config
    from rsi_workbench.records import pin_config_additions

    path = Path(args.run)
    kind = _kind_of(path)
    mod = run_module(path, kind, trusted)
    verify_finished_children(path, mod)
    if hasattr(mod, "stored_config"):  # the config as extended since (its events), not only config.json
        cfg = mod.stored_config(path)
    else:  # fields added since the run was made keep the value it was made with (records.CONFIG_ADDITIONS)
        stored = pin_config_additions(json.loads((path / "config.json").read_text()), mod.Config)
        cfg = validate_config(stored, mod.Config, source=str(path / "config.json"))
    refuse_untrusted(path, cfg, trusted)
    if args.executor:  # where the rest runs (e.g. locally once the cluster is gone), not what it computes
        from rsi_workbench.execute import ExecutorConfig

        if "executor" not in type(cfg).model_fields:
            raise CLIError(f"experiment kind {kind!r} has no executor to override")
        cfg = cfg.model_copy(update={"executor": ExecutorConfig(kind=args.executor)})
    out = mod.run_experiment(cfg, path, resume=True)
    text = mod.report(out)
    save_report(out, text)
    print(text)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """Print a run's table; viewing never changes the run (``--save`` writes ``report.txt``) and
    imports no code the run's files name unless the user names it too (``--trust-plugin``)."""
    from rsi_workbench.plugins import UntrustedImport, only_trusted

    trusted = tuple(getattr(args, "trust_plugin", None) or ())
    try:
        with only_trusted(trusted):
            return _report(args, trusted)
    except UntrustedImport as e:
        raise CLIError(str(e)) from None


def _report(args: argparse.Namespace, trusted: Sequence[str]) -> int:
    path = Path(args.run)
    kind = _kind_of(path)
    mod = run_module(path, kind, trusted)
    verify_finished_children(path, mod)
    if getattr(args, "diagnostics", False):
        if kind not in DIAGNOSTICS:
            raise CLIError(
                f"no diagnostics for experiment kind {kind!r}; available: {', '.join(DIAGNOSTICS)}"
            )
        print(importlib.import_module(DIAGNOSTICS[kind]).diagnostics(path))
        return 0
    text = mod.report(path)
    if args.save:
        save_report(path, text)
    print(text)
    return 0


def cmd_runs_list(args: argparse.Namespace) -> int:
    from rsi_workbench.records import Run, list_runs, log_bytes

    runs = list_runs(args.root)
    if not runs:
        print(f"no runs under {args.root or 'runs'}")
        return 0
    print(f"{'run':<60} {'kind':<16} {'events':>8}  created")
    for p in runs:
        r = Run.open(p)
        n = log_bytes(p / "events.jsonl").count(b"\n")  # plain or compacted (events.jsonl.gz)
        print(f"{str(p):<60} {str(r.manifest.get('kind', '?')):<16} {n:>8}  {r.manifest.get('created', '?')}")
    return 0


def cmd_runs_show(args: argparse.Namespace) -> int:
    from rsi_workbench.records import Run, load_events

    r = Run.open(args.run)
    print(f"run {r.path}")
    print(json.dumps({"manifest": r.manifest, "config": r.config}, indent=2, default=str))
    df = load_events(r, flatten=False)
    if len(df):
        print("\nevents by kind:")
        print(df.groupby("kind").size().to_string())
        print(f"\ncycles: {df['cycle'].dropna().nunique()}  artifacts: {len(r.artifacts.list())}")
    return 0


def cmd_query(args: argparse.Namespace) -> int:
    import pandas as pd

    from rsi_workbench.records import query

    df = query(args.sql, args.root)
    with pd.option_context(
        "display.max_rows", args.max_rows, "display.max_columns", 50, "display.width", 200
    ):
        print(df.to_string(index=False) if len(df) else "(no rows)")
    return 0


def cmd_datasets_list(args: argparse.Namespace) -> int:
    from rsi_workbench.datasets import registry

    for name, s in sorted(registry().items()):
        print(f"{name:<30} {s.source_kind:<8} {str(s.rows or ''):>6}  {s.licence:<24} {s.url}")
    return 0


def cmd_datasets_verify(args: argparse.Namespace) -> int:
    from rsi_workbench.datasets import registry, verify

    names = args.names or sorted(registry())
    bad = 0
    for n in names:
        ok, detail = verify(n)
        bad += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {n:<30} {detail}")
    return 1 if bad else 0


def cmd_datasets_fetch(args: argparse.Namespace) -> int:
    from rsi_workbench.datasets import registry, resolve

    for n in args.names or [k for k, s in sorted(registry().items()) if s.source_kind == "file"]:
        print(f"{n}: {resolve(n)}")
    return 0


def add_trust_plugin(parser: argparse.ArgumentParser) -> None:
    """``--trust-plugin pkg.mod:Name`` (repeatable): code the run's files name that may be imported."""
    parser.add_argument(
        "--trust-plugin",
        action="append",
        default=[],
        metavar="IMPORT_PATH",
        help="import this path the run's config.json names (an experiment, a protocol component or "
        "selection rule of one's own; pkg.mod trusts all of pkg.mod's names); repeatable. Without it "
        "no code a run names is imported",
    )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rsi-workbench", description="RSI Workbench: run, resume and inspect RSI loops."
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    r = sub.add_parser("run", help="run an experiment config (dispatches on its `experiment:` field)")
    r.add_argument("config", help="YAML or JSON config file")
    r.add_argument("--out", help="run/experiment directory (default: runs/<kind>-<time>-<id>)")
    r.add_argument("--resume", action="store_true", help="continue an existing --out directory")
    r.add_argument(
        "--extend",
        action="store_true",
        help="grow the finished experiment in --out with the config's added seeds or methods (code_repair)",
    )
    r.set_defaults(func=cmd_run)

    rs = sub.add_parser("resume", help="continue an interrupted run or experiment from its events")
    rs.add_argument("run", help="run or experiment directory")
    rs.add_argument(
        "--executor",
        choices=["serial", "process", "ray"],
        help="resume on this executor instead of the stored one (code_repair; e.g. locally when the "
        "Ray cluster is unreachable)",
    )
    add_trust_plugin(rs)
    rs.set_defaults(func=cmd_resume)

    rp = sub.add_parser("report", help="print the results table of a run or experiment (never writes)")
    rp.add_argument("run", help="run or experiment directory")
    rp.add_argument("--save", action="store_true", help="also write it as <run>/report.txt")
    rp.add_argument(
        "--diagnostics", action="store_true", help="print the experiment's diagnostics (reactions, dreaming)"
    )
    add_trust_plugin(rp)
    rp.set_defaults(func=cmd_report)

    runs = sub.add_parser("runs", help="list runs (bare `runs` is `runs list`), show or compact them")
    runs_root_help = "folder holding runs (default: $RSI_WORKBENCH_RUNS or ./runs)"
    runs.add_argument("--root", default=None, help=runs_root_help)
    runs.set_defaults(func=cmd_runs_list)  # `rsi-workbench runs` with no sub-command lists them
    rsub = runs.add_subparsers(dest="runs_command", required=False, metavar="SUBCOMMAND")
    rl = rsub.add_parser("list", help="list run directories")
    rl.add_argument("--root", default=argparse.SUPPRESS, help=runs_root_help)  # keeps `runs --root X`
    rl.set_defaults(func=cmd_runs_list)
    rsh = rsub.add_parser("show", help="show one run's manifest, config and event counts")
    rsh.add_argument("run")
    rsh.set_defaults(func=cmd_runs_show)
    from rsi_workbench.records.compact import add_compact_parser

    add_compact_parser(rsub)  # runs compact DIR...: store finished runs compactly

    q = sub.add_parser("query", help="SQL over all runs' events with DuckDB (view `events`)")
    q.add_argument("sql", help='e.g. "SELECT run, kind, count(*) FROM events GROUP BY ALL"')
    q.add_argument(
        "--root", default=None, help="folder holding runs (default: $RSI_WORKBENCH_RUNS or ./runs)"
    )
    q.add_argument("--max-rows", type=int, default=200)
    q.set_defaults(func=cmd_query)

    d = sub.add_parser("datasets", help="list, fetch or verify registered datasets")
    dsub = d.add_subparsers(dest="datasets_command", required=True, metavar="SUBCOMMAND")
    dl = dsub.add_parser("list", help="registered datasets with source and licence")
    dl.set_defaults(func=cmd_datasets_list)
    dv = dsub.add_parser("verify", help="check availability and sha256 (no download)")
    dv.add_argument("names", nargs="*")
    dv.set_defaults(func=cmd_datasets_verify)
    df = dsub.add_parser("fetch", help="resolve (mirror, cache, or download) and verify")
    df.add_argument("names", nargs="*")
    df.set_defaults(func=cmd_datasets_fetch)

    for mod in command_modules():
        mod.register(sub)
    return p


# loaders' own errors, shown as ``error: <message>`` with exit status 2 (module, class)
LOADER_ERRORS: tuple[tuple[str, str], ...] = (
    ("rsi_workbench.config", "ConfigError"),
    ("rsi_workbench.datasets", "DatasetError"),
    ("rsi_workbench.records.run", "RunError"),
    ("rsi_workbench.domains.code_repair.tasks", "TaskFileError"),
    ("rsi_workbench.domains.reactions.grid", "GridError"),
    ("rsi_workbench.replay.tree", "TreeError"),
    ("rsi_workbench.replay.importers", "TreeImportError"),
)


def _user_error(e: BaseException) -> bool:
    """A CLIError or a loader error (only modules already imported can have raised one: none is
    imported here just to check)."""
    if isinstance(e, CLIError):
        return True
    for mod, name in LOADER_ERRORS:
        cls = getattr(sys.modules.get(mod), name, None)
        if isinstance(cls, type) and isinstance(e, cls):
            return True
    return False


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (
        BrokenPipeError
    ):  # the reader went away (`rsi-workbench runs | head`): stop quietly, as Unix tools do
        import os

        try:  # no second error when the interpreter flushes stdout at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 141
    except Exception as e:
        if not _user_error(e):
            raise
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
