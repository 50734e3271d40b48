"""``rsi-workbench serve`` and ``rsi-workbench export``: share a run's dashboards live or as one HTML file.

``serve RUN`` is read-only for collaborators (no stepping, no training, no writes to the run);
``serve RUN --live`` is for the researcher who owns the run: it takes the run's single-writer
lock for as long as the server runs and enables stepping and background work.
``export RUN --html FILE`` writes a self-contained static report (figures and pre-computed slider
states; opens from a file with no server).
"""

from __future__ import annotations

import argparse
import secrets
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rsi_workbench.records import Run, RunError, RunLocked, has_events, open_log
from rsi_workbench.records.run import EVENTS_FILE
from rsi_workbench.widgets._app import check_run_dir


def run_kinds(run: Path) -> set[str]:
    """The event kinds present in a run (which dashboards apply depends on them)."""
    import json

    kinds: set[str] = set()
    with open_log(run / EVENTS_FILE) as f:  # plain or compacted
        for line in f:
            if line.endswith(b"\n"):
                kinds.add(json.loads(line)["kind"])
    return kinds


def dashboards_for(run: Path) -> dict[str, Any]:
    """Dashboard modules that apply to ``run``: name -> module with ``build(run, extra)`` and ``export_sections(run)``."""
    from rsi_workbench.widgets import run_events

    apps: dict[str, Any] = {}
    kinds = run_kinds(run)
    for mod in _engine_dashboards():
        if mod.applies(run, kinds):
            apps[mod.APP_NAME] = mod
    apps["events"] = run_events
    return apps


def _engine_dashboards() -> list[Any]:
    """Engine dashboards (each has ``APP_NAME``, ``applies(run, kinds)``, ``build``, ``export_sections``)."""
    from rsi_workbench.widgets import (
        cycle_stepper,
        gate_tuner,
        memory_browser,
        reaction_curves,
        replay_explorer,
        tree_inspector,
    )

    return [cycle_stepper, gate_tuner, replay_explorer, tree_inspector, reaction_curves, memory_browser]


# ---------------------------------------------------------------------------------------------
def cmd_serve(args: argparse.Namespace) -> int:
    import panel as pn

    run = check_run_dir(args.run)
    owner: Run | None = None
    if args.live:
        try:
            owner = Run.open(run, mode="a", exclusive=True)
        except RunLocked as e:
            raise RunLocked(
                f"{e}; serve it read-only (without --live) or stop the other writer first"
            ) from None
    apps = dashboards_for(run)
    extra = {"live": "1" if args.live else ""}
    # live objects (e.g. the loop to step) are made once, shared by every page of the owner's server
    live = {
        n: mod.open_live(run, owner)
        for n, mod in apps.items()
        if owner is not None and hasattr(mod, "open_live")
    }

    def session(name: str, mod: Any) -> Callable[[], Any]:
        def make() -> Any:
            pn.extension("plotly", "tabulator", notifications=True)
            view = mod.build(run, extra, live=live.get(name))
            return pn.Column(_banner(run, args.live, list(apps)), view, sizing_mode="stretch_width")

        return make

    routes = {name: session(name, mod) for name, mod in apps.items()}
    origin = [f"{args.address}:{args.port}", f"localhost:{args.port}", *args.allow_websocket_origin]
    kwargs: dict[str, Any] = {}
    if args.basic_auth:
        kwargs["basic_auth"] = args.basic_auth
        kwargs["cookie_secret"] = args.cookie_secret or secrets.token_hex(32)
    mode = "LIVE (owner: stepping and background work on; run locked)" if args.live else "read-only"
    print(f"serving {run} {mode} at http://{args.address}:{args.port}/  dashboards: {', '.join(routes)}")
    sys.stdout.flush()
    try:
        pn.serve(
            routes,
            port=args.port,
            address=args.address,
            websocket_origin=origin,
            show=args.show,
            title={name: f"{name} · {run.name}" for name in routes},
            **kwargs,
        )
    finally:
        if owner is not None:
            owner.close()
    return 0


def _banner(run: Path, live: bool, names: list[str]) -> Any:
    import panel as pn

    links = " · ".join(f"[{n}](/{n})" for n in names)
    mode = "**live** (you own this run: stepping and background work enabled)" if live else "**read-only**"
    iso = isolation_line(run)
    text = f"RSI Workbench · `{run.name}` · {mode} · {links}" + (f"  \n{iso}" if iso else "")
    return pn.pane.Markdown(text, css_classes=["rsi-banner"])


def isolation_line(run: Path) -> str | None:
    """The sandbox isolation the run's experiment executed untrusted code under (its
    ``experiment_started`` event, in the run or the experiment directory above it); None for runs
    that execute no untrusted code (reactions, the built-in discovery agents)."""
    from rsi_workbench.sandbox import describe_isolation

    for d in (run, run.parent, run.parent.parent):
        if not has_events(d) or not (d / "config.json").exists():
            continue
        try:
            started = Run.open(d).events("experiment_started")
        except RunError:
            continue
        if started and "sandbox" in started[0].payload:
            return describe_isolation(started[0].payload["sandbox"])
    return None


def cmd_export(args: argparse.Namespace) -> int:
    from rsi_workbench.viz.html import html_report

    run = check_run_dir(args.run)
    Run.open(run)  # validates the directory
    sections = []
    for mod in dashboards_for(run).values():
        sections.extend(mod.export_sections(run))
    out = Path(args.html)
    out.parent.mkdir(parents=True, exist_ok=True)
    cfg = Run.open(run).manifest
    text = html_report(
        f"RSI Workbench · {run.name}",
        sections,
        subtitle=f"run kind {cfg.get('kind', '?')} · created {cfg.get('created', '?')} · exported from {run}",
    )
    out.write_text(text, encoding="utf-8")
    print(
        f"wrote {out} ({len(text) / 1e6:.1f} MB, {len(sections)} sections; open it in any browser, no server needed)"
    )
    return 0


def register(subparsers: Any) -> None:
    """Add ``serve`` and ``export`` to the ``rsi-workbench`` command line."""
    s = subparsers.add_parser("serve", help="serve a run's dashboards (read-only unless --live)")
    s.add_argument("run", help="run directory")
    s.add_argument("--port", type=int, default=5006)
    s.add_argument(
        "--address", default="127.0.0.1", help="interface to listen on (0.0.0.0 = the whole network)"
    )
    s.add_argument(
        "--basic-auth",
        default=None,
        help="password, or a JSON file of {user: password}, asked of every visitor",
    )
    s.add_argument(
        "--cookie-secret", default=None, help="secret for auth cookies (default: random per start)"
    )
    s.add_argument(
        "--allow-websocket-origin", action="append", default=[], help="extra HOST:PORT allowed to connect"
    )
    s.add_argument(
        "--live",
        action="store_true",
        help="owner mode: take the run's writer lock; enable stepping/background work",
    )
    s.add_argument("--show", action="store_true", help="open a browser tab")
    s.set_defaults(func=cmd_serve)

    e = subparsers.add_parser("export", help="write a self-contained static HTML report of a run")
    e.add_argument("run", help="run directory")
    e.add_argument("--html", required=True, help="output file, e.g. report.html")
    e.set_defaults(func=cmd_export)


__all__ = ["RunError", "cmd_export", "cmd_serve", "dashboards_for", "register", "run_kinds"]
