"""The gate in front of ``rsi-workbench serve``: credentials that never travel in argv, one
authenticated allow-list for Panel's component-resource route, and warnings for plain-HTTP sharing.

Panel (1.9.4, and the 1.10 alphas) answers ``/components/<module>/<class>/<attr>/<path>`` by calling
``importlib.import_module(<module>)`` before any check, on a route its ``--basic-auth`` does not
cover: one unauthenticated GET could run any importable module's top-level code inside the server
(``this``, ``venv.__main__``, ``unittest.__main__``). :func:`install_guard` replaces that route with
:class:`GuardedComponentHandler` (built by :func:`guarded_component_handler`), which answers only
after authentication (when auth is on) and only for a class defined in an *already imported* module
of an allow-listed package (:data:`COMPONENT_PACKAGES`); it never imports a module named by a
request. The replacement is verified against the server's real tornado routing before it starts.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import secrets
import stat
import sys
from collections.abc import MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENV_BASIC_AUTH = "RSI_WORKBENCH_BASIC_AUTH"
ENV_COOKIE_SECRET = "RSI_WORKBENCH_COOKIE_SECRET"
ENV_SSL_KEY_PASSWORD = "RSI_WORKBENCH_SSL_KEY_PASSWORD"

# Packages whose component classes may have resources served: the workbench's dashboards use only
# Panel's own components (no ReactiveHTML/JSComponent of their own). A module must also already be
# imported by the server itself; a request never imports one.
COMPONENT_PACKAGES = ("panel",)
_MODULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
# Probe paths the installed route table must send to the guard (checked before the server starts).
GUARD_PROBES = (
    "/components/this/x/__css__/y",
    "/components/venv.__main__/x/__css__/y",
    "/components/panel.template.bootstrap/BootstrapTemplate/_css/bootstrap.css",
)

#: the login and logout pages (``--basic-auth``): Panel's own without their CDN logo and favicon
#: (they load nothing from outside the server)
LOGIN_TEMPLATE = Path(__file__).with_name("login.html")
LOGOUT_TEMPLATE = Path(__file__).with_name("logout.html")

HOW_TO_PASS = (
    f"put the password in the environment ({ENV_BASIC_AUTH}=... rsi-workbench serve RUN --basic-auth) "
    "or in a file only you can read (rsi-workbench serve RUN --basic-auth-file PATH; the file holds a "
    'password, or JSON {"user": "password", ...})'
)


class ServeSetupError(ValueError):
    """A ``serve`` option that cannot be used as given (the message says what to do instead)."""


@dataclass(frozen=True)
class Credentials:
    """Who may log in: one shared ``password`` (any user name), or a ``users`` table of
    {user: password}. ``source`` names where they came from (for messages; never the secret)."""

    source: str
    password: str | None = None
    users: dict[str, str] | None = None

    def for_panel(self) -> str | dict[str, str]:
        """The value for ``pn.serve(basic_auth=...)``: Panel's login handler takes a password or a
        {user: password} dict (a string naming an existing file it would read as JSON instead)."""
        if self.users is not None:
            return dict(self.users)
        assert self.password is not None
        return self.password


def parse_credentials(text: str, source: str) -> Credentials:
    """Credentials from ``text``: a JSON object {user: password} if it starts with ``{``, else the
    password itself. Errors name ``source`` (the variable or file), never the secret."""
    if text.lstrip().startswith("{"):
        try:
            table = json.loads(text)
        except json.JSONDecodeError as e:
            raise ServeSetupError(f"{source}: not valid JSON ({e.msg} at line {e.lineno})") from None
        if not isinstance(table, dict) or not table:
            raise ServeSetupError(f"{source}: expected a non-empty JSON object {{user: password}}")
        bad = [k for k, v in table.items() if not k or not isinstance(v, str) or not v]
        if bad:
            raise ServeSetupError(f"{source}: user(s) {bad!r} need a non-empty string password")
        return Credentials(source=source, users={str(k): v for k, v in table.items()})
    if not text:
        raise ServeSetupError(f"{source} is empty: it must hold the password")
    if os.path.isfile(text):
        raise ServeSetupError(
            f"the password from {source} is the name of an existing file, which Panel would read as "
            "its user table; choose another password (or use --basic-auth-file for a file)"
        )
    return Credentials(source=source, password=text)


def read_credentials_file(path: str | Path) -> tuple[Credentials, list[str]]:
    """Credentials from a file (a password, or JSON {user: password}) and warnings about it (a file
    other users can read)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
        mode = p.stat().st_mode
    except OSError as e:
        raise ServeSetupError(f"--basic-auth-file {p}: cannot read it ({e.strerror})") from None
    warnings = []
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        warnings.append(f"{p} can be read by other users (mode {stat.filemode(mode)}); chmod 600 {p}")
    return parse_credentials(text.rstrip("\r\n"), f"--basic-auth-file {p}"), warnings


def refuse_secret_in_argv(option: str, env: str) -> ServeSetupError:
    """The error for a secret given on the command line, saying how to pass it instead."""
    where = HOW_TO_PASS if option == "--basic-auth" else f"set it in the environment ({env}=...)"
    return ServeSetupError(
        f"{option} takes no secret on the command line: argv is visible to every local user "
        f"(/proc/<pid>/cmdline, ps) and lands in shell history; {where}. If that was a real "
        "secret, change it."
    )


def load_credentials(
    want_auth: bool, auth_file: str | None, environ: MutableMapping[str, str]
) -> tuple[Credentials | None, list[str]]:
    """The server's credentials: from ``--basic-auth-file`` or ``$RSI_WORKBENCH_BASIC_AUTH`` (auth is
    on when either is there; ``want_auth`` (``--basic-auth``) insists on it). The variable is removed
    from ``environ`` once read, so nothing the server starts inherits it."""
    env_text = environ.pop(ENV_BASIC_AUTH, None)
    if auth_file is not None:
        if env_text:
            raise ServeSetupError(f"both --basic-auth-file and {ENV_BASIC_AUTH} are set; use one")
        return read_credentials_file(auth_file)
    if env_text:
        return parse_credentials(env_text, f"${ENV_BASIC_AUTH}"), []
    if want_auth:
        raise ServeSetupError(f"--basic-auth: no password; {HOW_TO_PASS}")
    return None, []


def cookie_secret(environ: MutableMapping[str, str]) -> str:
    """The secret that signs login cookies: ``$RSI_WORKBENCH_COOKIE_SECRET`` (removed from the
    environment once read) or a fresh random one (logins then last until the server restarts)."""
    value = environ.pop(ENV_COOKIE_SECRET, "")
    if value and len(value) < 16:
        raise ServeSetupError(f"${ENV_COOKIE_SECRET} is too short (at least 16 characters)")
    return value or secrets.token_hex(32)


def is_loopback(address: str) -> bool:
    """Whether listening on ``address`` keeps the server on this machine (127.0.0.0/8, ::1, localhost)."""
    if address.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:  # a host name other than localhost: assume it is reachable from outside
        return False


def exposure_warnings(address: str, auth: bool, tls: bool) -> list[str]:
    """What a collaborator's network can see with this ``address``/auth/TLS combination."""
    if is_loopback(address):
        return []
    if not auth:
        return [
            f"--address {address} with no authentication: anyone who can reach this port sees the "
            f"run's dashboards; add --basic-auth ({ENV_BASIC_AUTH}) or --basic-auth-file"
        ]
    if not tls:
        return [
            f"--address {address} with basic auth over plain HTTP: the password (and the login "
            "cookie) cross the network in clear text. Put TLS in front: --ssl-certfile CERT.pem "
            "--ssl-keyfile KEY.pem (a key with a passphrase: set "
            f"{ENV_SSL_KEY_PASSWORD}), or a reverse proxy that terminates HTTPS and forwards to a "
            "loopback --address"
        ]
    return []


def component_module(path: str) -> Any:
    """The already imported module a ``/components/<module>/<class>/<attr>/<path>`` request may
    read, or an ``HTTPError`` (404/400) raised before anything is imported."""
    from tornado.web import HTTPError

    parts = path.split("/")
    if len(parts) < 4:
        raise HTTPError(400, "Malformed URL")
    mod, cls = parts[0], parts[1]
    if not _MODULE_NAME.match(mod) or mod.split(".")[0] not in COMPONENT_PACKAGES:
        raise HTTPError(404, "Not a component module of this server")
    if any(p.startswith("__") and p.endswith("__") for p in mod.split(".")):
        raise HTTPError(404, "Not a component module of this server")
    module = sys.modules.get(mod)
    if module is None:  # never imported by the server: a request does not import it
        raise HTTPError(404, "Not a component module of this server")
    component = vars(module).get(cls)  # vars, not getattr: no module-level __getattr__ runs
    if not isinstance(component, type) or component.__module__ != mod:
        raise HTTPError(404, "Component not found")
    return module


def guarded_component_handler() -> type:
    """Panel's ``ComponentResourceHandler`` behind authentication and the module allow-list
    (:func:`component_module`), checked before Panel's own resolution (which imports)."""
    from panel.io.server import ComponentResourceHandler
    from tornado.web import authenticated

    class GuardedComponentHandler(ComponentResourceHandler):  # type: ignore[misc]
        """Component resources for logged-in visitors, from allow-listed, already imported modules."""

        def get_login_url(self) -> str:
            provider = self.application.auth_provider
            if provider.get_login_url is not None:
                return str(provider.get_login_url(self))
            return str(provider.login_url or "/login")

        def get_current_user(self) -> Any:
            provider = self.application.auth_provider
            if provider.get_user is not None:
                return provider.get_user(self)
            return "default_user"  # no auth configured (read-only sharing on loopback)

        async def prepare(self) -> None:
            provider = self.application.auth_provider
            if provider.get_user_async is not None:
                self.current_user = await provider.get_user_async(self)

        @authenticated  # type: ignore[misc]
        async def get(self, path: str, include_body: bool = True) -> None:
            await super().get(path, include_body)

        def parse_url_path(self, path: str) -> str:
            component_module(path)  # raises before Panel's resolution could import anything
            return str(super().parse_url_path(path))

    return GuardedComponentHandler


def authenticated_autoload_handler() -> type:
    """Panel's ``AutoloadJsHandler`` with the login check first: Panel's own version reaches Bokeh's
    ``@authenticated get_session`` only after its argument checks, and then fails with a traceback
    (``await None``) instead of a plain redirect to the login page."""
    from panel.io.server import AutoloadJsHandler
    from tornado.web import authenticated

    class AuthenticatedAutoloadJsHandler(AutoloadJsHandler):  # type: ignore[misc]
        """The app's ``autoload.js`` for logged-in visitors only (when auth is on)."""

        @authenticated  # type: ignore[misc]
        async def get(self, *args: Any, **kwargs: Any) -> None:
            await super().get(*args, **kwargs)

    return AuthenticatedAutoloadJsHandler


def session_token_ok(app: Any, token: str) -> bool:
    """Whether Bokeh can decode ``token`` into a session (and its signature holds when the server
    signs sessions); Bokeh's own decoding, after the upgrade, raises on a malformed token."""
    from bokeh.util.token import check_token_signature, get_session_id, get_token_payload

    try:
        get_token_payload(token)  # what Bokeh's open() decodes
        session_id = get_session_id(token)
        signed = check_token_signature(token, secret_key=app.secret_key, signed=app.sign_sessions)
    except Exception:  # not base64 / not JSON / not an object: not a Bokeh token
        return False
    return bool(signed) and isinstance(session_id, str) and bool(session_id)


def bokeh_only_ws_handler() -> type:
    """Panel's ``WSHandler`` that refuses, before the upgrade (400), a handshake without Bokeh's
    subprotocol and session token; Bokeh's own check runs after the upgrade and leaves a traceback
    per stray connection in the server's log. Panel's 403 for visitors not logged in stays first."""
    from panel.io.server import WSHandler

    class BokehOnlyWSHandler(WSHandler):  # type: ignore[misc]
        """The app's websocket, for Bokeh clients that carry a session token."""

        async def prepare(self) -> None:
            await super().prepare()
            if self._finished:
                return
            offered = [p.strip() for p in self.request.headers.get("Sec-WebSocket-Protocol", "").split(",")]
            if (
                len(offered) != 2
                or offered[0] != "bokeh"
                or not session_token_ok(self.application, offered[1])
            ):
                self.set_status(400)
                self.finish("a Bokeh session websocket needs the 'bokeh' subprotocol and a session token")

    return BokehOnlyWSHandler


def guard_patterns(handler: type) -> list[tuple[str, type, dict[str, Any]]]:
    """``extra_patterns`` for ``pn.serve``: Panel puts them ahead of its own component route."""
    return [(r"/components/(.*)", handler, {})]


def route_of(app: Any, path: str) -> type:
    """The handler class tornado's own routing picks for ``GET path`` in the application ``app``."""
    from tornado.httputil import HTTPHeaders, HTTPServerRequest, RequestStartLine

    request = HTTPServerRequest(
        start_line=RequestStartLine("GET", path, "HTTP/1.1"), headers=HTTPHeaders({"Host": "localhost"})
    )
    return app.find_handler(request).handler_class  # type: ignore[no-any-return]


def install_guard(server: Any, handler: type) -> None:
    """Point every component-resource route of a built (not started) Panel ``server`` at ``handler``,
    put the login check first on every ``autoload.js`` route, refuse non-Bokeh websocket handshakes
    before the upgrade, and verify through tornado's own
    ``find_handler`` that component URLs reach ``handler``; a :class:`RuntimeError` if they do not
    (the server must not start then)."""
    from panel.io.server import AutoloadJsHandler, ComponentResourceHandler, WSHandler

    app = server._tornado
    wrappers = ((AutoloadJsHandler, authenticated_autoload_handler()), (WSHandler, bokeh_only_ws_handler()))
    for rule in app.wildcard_router.rules:
        target = rule.target
        if not isinstance(target, type):
            continue
        if issubclass(target, ComponentResourceHandler):
            rule.target = handler
            rule.target_kwargs = {}
        for base, guarded in wrappers:
            if issubclass(target, base) and not issubclass(target, guarded):
                rule.target = (
                    guarded if target is base else type(f"Guarded{target.__name__}", (guarded, target), {})
                )
    for probe in GUARD_PROBES:
        found = route_of(app, probe)
        if found is not handler:
            raise RuntimeError(
                f"refusing to serve: {probe} would reach {found.__module__}.{found.__name__}, not the "
                f"component guard (an unknown Panel route layout)"
            )


__all__ = [
    "COMPONENT_PACKAGES",
    "ENV_BASIC_AUTH",
    "ENV_COOKIE_SECRET",
    "ENV_SSL_KEY_PASSWORD",
    "GUARD_PROBES",
    "Credentials",
    "ServeSetupError",
    "authenticated_autoload_handler",
    "bokeh_only_ws_handler",
    "component_module",
    "cookie_secret",
    "exposure_warnings",
    "guard_patterns",
    "guarded_component_handler",
    "install_guard",
    "is_loopback",
    "load_credentials",
    "parse_credentials",
    "read_credentials_file",
    "refuse_secret_in_argv",
    "route_of",
    "session_token_ok",
]
