"""``rsi-workbench serve`` and ``rsi-workbench export``: share a run's dashboards live or as one HTML file.

``serve RUN`` is read-only for collaborators (no stepping, no training, no writes to the run);
``serve RUN --live`` is for the researcher who owns the run: it takes the run's single-writer
lock for as long as the server runs and enables stepping and background work (a run whose
``config.json`` names code of one's own, e.g. ``experiment: protocol``, steps only when the user
names that code with ``--trust-plugin``). Neither imports code nor unpickles bytes a run's files name.
``export RUN --html FILE`` writes a self-contained static report (figures and pre-computed slider
states; opens from a file with no server).
Sharing (docs/sharing.md): passwords come from ``$RSI_WORKBENCH_BASIC_AUTH`` or ``--basic-auth-file``,
never argv; every Panel route sits behind :mod:`rsi_workbench.widgets.serve_guard`; a network
address without TLS warns.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import Any

from rsi_workbench.records import Run, RunError, RunLocked, has_events, open_log
from rsi_workbench.records.run import EVENTS_FILE
from rsi_workbench.widgets.dashboard import Dashboard


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
    """Dashboards that apply to ``run``: name -> a :class:`~rsi_workbench.widgets.dashboard.Dashboard`
    (the engines' own, then those of the ``rsi_workbench.dashboards`` entry-point group); the events
    dashboard always."""
    from rsi_workbench.widgets import run_events
    from rsi_workbench.widgets.dashboard import registered_dashboards
    from rsi_workbench.widgets.tree_file import is_tree_file, tree_file_dashboards

    if is_tree_file(run):  # a standalone discovery tree file: the tree inspector and replay explorer
        return tree_file_dashboards()

    apps: dict[str, Any] = {}
    kinds = run_kinds(run)
    builtin = _engine_dashboards()
    for mod in builtin + registered_dashboards({m.APP_NAME for m in builtin} | {"events"}):
        if mod.applies(run, kinds):
            apps[mod.APP_NAME] = mod
    apps["events"] = run_events
    return apps


def _engine_dashboards() -> list[Dashboard]:
    """Engine dashboards (each a :class:`~rsi_workbench.widgets.dashboard.Dashboard` module)."""
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
    from rsi_workbench.widgets.serve_guard import ServeSetupError

    try:
        setup = _serve_setup(args, os.environ)
    except ServeSetupError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for w in setup.pop("warnings"):
        print(f"warning: {w}", file=sys.stderr)
    sys.stderr.flush()
    from rsi_workbench.plugins import UntrustedImport, only_trusted

    try:  # code the run's files name (serve --live of a protocol run) only with --trust-plugin
        with only_trusted(tuple(getattr(args, "trust_plugin", None) or ())):
            return _serve(args, setup)
    except UntrustedImport as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def _serve_setup(args: argparse.Namespace, environ: MutableMapping[str, str]) -> dict[str, Any]:
    """``pn.serve`` keyword arguments for auth and TLS, and ``warnings``, from the options and the
    environment; a :class:`ServeSetupError` for a secret in argv or unusable credentials."""
    from rsi_workbench.widgets import serve_guard as g

    if isinstance(args.basic_auth, str):
        raise g.refuse_secret_in_argv("--basic-auth", g.ENV_BASIC_AUTH)
    if args.cookie_secret is not None:
        raise g.refuse_secret_in_argv("--cookie-secret", g.ENV_COOKIE_SECRET)
    if args.ssl_keyfile and not args.ssl_certfile:
        raise g.ServeSetupError("--ssl-keyfile needs --ssl-certfile (the certificate it belongs to)")
    for opt, path in (("--ssl-certfile", args.ssl_certfile), ("--ssl-keyfile", args.ssl_keyfile)):
        if path and not Path(path).is_file():
            raise g.ServeSetupError(f"{opt} {path}: no such file")
    creds, warnings = g.load_credentials(bool(args.basic_auth), args.basic_auth_file, environ)
    setup: dict[str, Any] = {"warnings": warnings, "auth_source": None}
    if creds is not None:
        setup["basic_auth"] = creds.for_panel()
        setup["cookie_secret"] = g.cookie_secret(environ)
        setup["auth_source"] = creds.source
        setup["login_template"] = str(g.LOGIN_TEMPLATE)  # they load nothing from outside the server
        setup["logout_template"] = str(g.LOGOUT_TEMPLATE)
    if args.ssl_certfile:
        setup["ssl_certfile"] = args.ssl_certfile
        setup["ssl_keyfile"] = args.ssl_keyfile
        setup["ssl_password"] = environ.pop(g.ENV_SSL_KEY_PASSWORD, None)
    warnings.extend(g.exposure_warnings(args.address, creds is not None, bool(args.ssl_certfile)))
    return setup


def _serve(args: argparse.Namespace, setup: dict[str, Any]) -> int:
    import panel as pn

    from rsi_workbench.widgets.serve_guard import guard_patterns, guarded_component_handler, install_guard
    from rsi_workbench.widgets.tree_file import check_run_or_tree

    run = check_run_or_tree(args.run, live=args.live)
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
    source = setup.pop("auth_source")
    guard = guarded_component_handler()
    mode = "LIVE (owner: stepping and background work on; run locked)" if args.live else "read-only"
    scheme = "https" if setup.get("ssl_certfile") else "http"
    auth = f"basic auth from {source}" if source else "no authentication"
    try:
        server = pn.serve(
            routes,
            port=args.port,
            address=args.address,
            websocket_origin=origin,
            show=args.show,
            start=False,
            verbose=False,  # the line below says where (http or https) and with which auth
            title={name: f"{name} · {run.name}" for name in routes},
            extra_patterns=guard_patterns(guard),
            **setup,
        )
        install_guard(server, guard)  # verified against the real routes before anything is served
        print(
            f"serving {run} {mode} at {scheme}://{args.address}:{args.port}/  ({auth})  "
            f"dashboards: {', '.join(routes)}"
        )
        sys.stdout.flush()
        server.start()
        server.io_loop.start()
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
    from rsi_workbench.widgets.tree_file import check_run_or_tree, is_tree_file

    run = check_run_or_tree(args.run)  # a run directory, or a discovery tree file
    tree_file = is_tree_file(run)
    if not tree_file:
        Run.open(run)  # validates the directory
    sections = []
    for mod in dashboards_for(run).values():
        sections.extend(mod.export_sections(run))
    out = Path(args.html)
    out.parent.mkdir(parents=True, exist_ok=True)
    cfg = {"kind": "discovery tree file", "created": "-"} if tree_file else Run.open(run).manifest
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
    s.add_argument("run", help="run directory, or a discovery tree JSON file")
    s.add_argument("--port", type=int, default=5006)
    s.add_argument(
        "--address", default="127.0.0.1", help="interface to listen on (0.0.0.0 = the whole network)"
    )
    s.add_argument(
        "--basic-auth",
        nargs="?",
        const=True,
        default=None,
        metavar="NOTHING",
        help="ask every visitor to log in; takes no value: the password comes from "
        "$RSI_WORKBENCH_BASIC_AUTH (a password or JSON {user: password}), never from the command line",
    )
    s.add_argument(
        "--basic-auth-file",
        default=None,
        metavar="PATH",
        help="ask every visitor to log in; PATH (mode 600) holds a password or JSON {user: password}",
    )
    s.add_argument(
        "--cookie-secret", default=None, help=argparse.SUPPRESS
    )  # refused: $RSI_WORKBENCH_COOKIE_SECRET or a random one per start
    s.add_argument(
        "--ssl-certfile", default=None, metavar="CERT", help="serve HTTPS with this certificate (PEM)"
    )
    s.add_argument(
        "--ssl-keyfile",
        default=None,
        metavar="KEY",
        help="the certificate's private key (PEM; a passphrase from $RSI_WORKBENCH_SSL_KEY_PASSWORD)",
    )
    s.add_argument(
        "--allow-websocket-origin", action="append", default=[], help="extra HOST:PORT allowed to connect"
    )
    s.add_argument(
        "--live",
        action="store_true",
        help="owner mode: take the run's writer lock; enable stepping/background work",
    )
    s.add_argument(
        "--trust-plugin",
        action="append",
        default=[],
        metavar="IMPORT_PATH",
        help="--live: import this path the run's config.json names (a protocol component or selection "
        "rule of one's own); repeatable. Without it no code a run names is imported",
    )
    s.add_argument("--show", action="store_true", help="open a browser tab")
    s.set_defaults(func=cmd_serve)

    e = subparsers.add_parser("export", help="write a self-contained static HTML report of a run")
    e.add_argument("run", help="run directory, or a discovery tree JSON file")
    e.add_argument("--html", required=True, help="output file, e.g. report.html")
    e.set_defaults(func=cmd_export)


__all__ = ["RunError", "cmd_export", "cmd_serve", "dashboards_for", "register", "run_kinds"]
