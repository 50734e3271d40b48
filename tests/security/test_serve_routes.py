"""``rsi-workbench serve`` behind one gate: a table of unauthenticated and wrong-credential requests
to every route of a real server (a read-only one, and a basic-auth one), with modules planted on
the server's ``sys.path`` that leave a marker file if anything imports them.

Panel 1.9.4 resolves ``/components/<module>/...`` with ``importlib.import_module(<module>)`` before
any check and outside ``--basic-auth``; these requests ran ``this``, killed the server
(``unittest.__main__``) and wrote a virtual environment into the served run (``venv.__main__``).
Each server here runs with the run directory as its working directory (``sys.path[0]``), as a
collaborator's would. Run with ``-s`` to see the (route, status) tables.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PASSWORD = "correct horse battery staple"
PLANTED = ("rsi_probe_plant", "rsi_probe_pkg", "rsi_probe_pkg.__main__")
ZEN = "Beautiful is better than ugly"  # what importing `this` prints

pytest.importorskip("panel")


# -- a small real run and modules that tell on their importer -----------------------------------
def make_run(root: Path) -> Path:
    """A tiny real run written through rsi_workbench.records (three cycles of events)."""
    from rsi_workbench.records import Run

    run = Run.create(root / "shared-run", {"seed": 1, "what": "serve route test"}, kind="run")
    for cycle in range(1, 4):
        run.append("note", {"text": f"cycle {cycle}"}, cycle=cycle)
        run.commit()
    run.close()
    return run.path


def plant_modules(root: Path, markers: Path) -> Path:
    """A directory for the server's PYTHONPATH whose modules write ``markers/<name>`` when imported."""
    plant = root / "plant"
    (plant / "rsi_probe_pkg").mkdir(parents=True)
    body = (
        "import pathlib\n"
        f"pathlib.Path({str(markers)!r}, __name__).write_text('imported by the server\\n')\n"
        "class X:\n    __css__ = ['x.css']\n"
    )
    (plant / "rsi_probe_plant.py").write_text(body)
    (plant / "rsi_probe_pkg" / "__init__.py").write_text(body)
    (plant / "rsi_probe_pkg" / "__main__.py").write_text(body)
    (plant / "x.css").write_text("body {}\n")
    return plant


def tree_hash(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` (relative path -> digest); new or removed files show too."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() or p.is_symlink()
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- a real server in a subprocess ----------------------------------------------------------------
@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    port: int
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def start_server(run: Path, plant: Path, log: Path, *extra: str, env: dict[str, str] | None = None) -> Server:
    port = free_port()
    cmd = [sys.executable, "-m", "rsi_workbench", "serve", str(run), "--port", str(port), *extra]
    penv = {
        **os.environ,
        **(env or {}),
        "PYTHONPATH": f"{REPO}{os.pathsep}{plant}",
        "BOKEH_LOG_LEVEL": "info",
    }
    with log.open("wb") as out:  # the run directory is the working directory: sys.path[0] under -m
        proc = subprocess.Popen(cmd, cwd=run, env=penv, stdout=out, stderr=subprocess.STDOUT)
    server = Server(proc, port, log)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.returncode}:\n{server.output()[-3000:]}")
        try:
            request(server, "GET", "/favicon.ico")
            return server
        except OSError:
            time.sleep(0.3)
    stop(server)
    raise AssertionError(f"server did not answer within 90 s:\n{server.output()[-3000:]}")


def stop(server: Server) -> None:
    server.proc.terminate()
    try:
        server.proc.wait(10)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        server.proc.wait()


def request(
    server: Server, method: str, path: str, headers: dict[str, str] | None = None, body: bytes | None = None
) -> tuple[int, dict[str, str], bytes]:
    """One raw HTTP request (the path is sent as written: no client-side normalisation)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        conn.putrequest(method, path, skip_accept_encoding=True)
        for k, v in (headers or {}).items():
            conn.putheader(k, v)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        resp = conn.getresponse()
        data = resp.read() if resp.status != 101 else b""
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
    finally:
        conn.close()


# -- the request table ------------------------------------------------------------------------------
COMPONENT = "/components/panel.template.bootstrap/BootstrapTemplate/_css/bootstrap.css"  # a real resource
WS_HEADERS = {
    "Connection": "Upgrade",
    "Upgrade": "websocket",
    "Sec-WebSocket-Version": "13",
    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
}


@dataclass(frozen=True)
class Probe:
    """One request; ``kind``: page (a dashboard route), asset (the Bokeh/Panel distribution's
    public JS/CSS), component (a /components request naming a module that must not be imported),
    resource (the one real component resource), ws (the websocket handshake), auth (login/logout)."""

    kind: str
    path: str
    method: str = "GET"
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None
    note: str = ""


def probes(port: int) -> list[Probe]:
    comp = [
        "this/x/__css__/y",
        "antigravity/x/__css__/y",
        "unittest.__main__/x/__css__/y",
        "venv.__main__/x/__css__/y",
        "venv/EnvBuilder/__css__/y",
        "rsi_workbench/x/__css__/y",
        "rsi_workbench.cli/main/__css__/y",
        "rsi_workbench.widgets.commands/x/__css__/y",
        "rsi_probe_plant/X/__css__/x.css",
        "rsi_probe_pkg/X/__css__/x.css",
        "rsi_probe_pkg.__main__/X/__css__/x.css",
        "config/x/__css__/y",  # a module name matching a file in the served run (cwd)
        "os/path/__css__/y",
        "panel.__main__/x/__css__/y",
        "panel.command/x/__css__/y",
        "panel.rsi_probe_plant/X/__css__/x.css",
        "panel/extension/__css__/y",
        "panel.io.server/ComponentResourceHandler/__css__/y",
        "panel.template.bootstrap/BootstrapTemplate/_css/../../__init__.py",
        "panel.template.bootstrap/BootstrapTemplate/_css/%2e%2e/%2e%2e/__init__.py",
        "panel.template.bootstrap/BootstrapTemplate/_css/%2Fetc%2Fpasswd",
        "this%2Fx/y/__css__/z",
        "x",
    ]
    autoload = "/events/autoload.js?" + urllib.parse.urlencode(
        {
            "bokeh-autoload-element": "x",
            "bokeh-app-path": "/events",
            "bokeh-absolute-url": f"http://127.0.0.1:{port}/events",
        }
    )
    ws = tuple(WS_HEADERS.items())
    return [
        Probe("page", "/"),
        Probe("page", "/events"),
        Probe("page", "/events/metadata"),
        Probe("page", autoload),
        Probe("page", "/events", "POST", body=b"x=1"),
        Probe("page", "/nope"),
        Probe("asset", "/favicon.ico"),
        Probe("asset", "/static/js/bokeh.min.js"),
        Probe("asset", "/events/static/js/bokeh.min.js"),
        Probe("asset", "/static/extensions/panel/panel.min.js"),
        Probe("asset", "/static/../config.json"),
        Probe("asset", "/static/..%2f..%2fconfig.json"),
        Probe("asset", "/static/extensions/panel/..%2f..%2f__init__.py"),
        Probe("asset", "/events/static/..%2f..%2f..%2fconfig.json"),
        Probe("resource", COMPONENT),
        Probe("resource", COMPONENT, "HEAD"),
        *(Probe("component", f"/components/{c}") for c in comp),
        Probe("component", "/components/this/x/__css__/y", "HEAD"),
        Probe("component", "/components/this/x/__css__/y", "POST", body=b""),
        Probe("component", "/components/this/x/__css__/y", "PUT", body=b""),
        Probe("ws", "/events/ws", headers=ws, note="(Upgrade, no subprotocol)"),
        Probe("ws", "/events/ws", headers=(*ws, ("Origin", "http://evil.example")), note="(Origin evil)"),
        Probe(
            "ws",
            "/events/ws",
            headers=(*ws, ("Sec-WebSocket-Protocol", "bokeh, not-a-token")),
            note="(bokeh, bad token)",
        ),
        Probe(
            "ws",
            "/events/ws",
            headers=(*ws, ("Sec-WebSocket-Protocol", "bokeh, x"), ("Origin", "http://evil.example")),
            note="(bokeh, bad token, Origin evil)",
        ),
        Probe("auth", "/login"),
        Probe("auth", "/logout"),
        Probe(
            "auth",
            "/login",
            "POST",
            (("Content-Type", "application/x-www-form-urlencoded"),),
            b"username=colleague&password=wrong",
            note="(wrong password)",
        ),
    ]


def to_login(status: int, headers: dict[str, str]) -> bool:
    return status == 302 and "/login" in headers.get("location", "")


def judge(server_kind: str, p: Probe, status: int, headers: dict[str, str], body: bytes) -> str:
    """Why the answer is safe ("" when it is not)."""
    if status >= 500:
        return ""
    refused = status in (400, 401, 403, 404, 405) or to_login(status, headers)
    if p.kind == "component":  # never served, on either server
        return "refused" if refused else ""
    if p.kind == "asset":
        if p.path.count("..") or "%2f" in p.path.lower():
            return "refused" if refused else ""
        return "public library file" if status == 200 else ("refused" if refused else "")
    if p.kind == "auth" and server_kind == "read-only":
        return "no login route" if status == 404 else ""
    if p.kind == "auth":
        if p.method == "POST":  # a wrong password goes back to the login page with an error
            return "refused" if status == 302 and "error=" in headers.get("location", "") else ""
        return "login/logout page" if status == 200 else ""
    if server_kind == "auth":  # pages, the resource and the websocket need a login
        return "refused" if refused else ""
    if p.kind == "ws":  # read-only server: refused without Bokeh's subprotocol + token or from another origin
        if ("Origin", "http://evil.example") in p.headers or not any(
            k == "Sec-WebSocket-Protocol" for k, _ in p.headers
        ):
            return "refused" if status in (400, 403) else ""
        return "app channel (as the page's own)" if status == 101 else ("refused" if refused else "")
    if p.kind == "resource":
        return "listed resource" if status == 200 else ""
    if status == 302 and headers.get("location", "").lstrip(".") == "/events":
        return "redirect to the dashboard"
    return "read-only page" if status in (200, 404, 405) else ("refused" if refused else "")


WRONG_CREDENTIALS = (
    ("Cookie", "user=colleague; id_token=eyJ1c2VyIjogImNvbGxlYWd1ZSJ9"),  # forged, unsigned
    ("Authorization", "Basic Y29sbGVhZ3VlOndyb25n"),  # colleague:wrong
)


def send_table(
    server: Server, server_kind: str, label: str, extra_headers: tuple[tuple[str, str], ...] = ()
) -> list[str]:
    """Send every probe; print the (route, status) table; return the rows that were not safe."""
    bad = []
    print(f"\n== {label} (server on port {server.port}) ==")
    if extra_headers:
        print("   every request also sends: " + "; ".join(f"{k}: {v}" for k, v in extra_headers))
    print(f"{'method':6} {'status':>6}  {'verdict':32} route")
    for p in probes(server.port):
        headers = dict(p.headers)
        for k, v in extra_headers:
            headers[k] = v
        status, resp_headers, body = request(server, p.method, p.path, headers, p.body)
        verdict = judge(server_kind, p, status, resp_headers, body)
        where = f" -> {resp_headers['location']}" if status in (301, 302) else ""
        print(f"{p.method:6} {status:>6}  {verdict or 'NOT SAFE':32} {p.path} {p.note}{where}")
        if not verdict:
            bad.append(f"{p.method} {p.path}: {status}{where}")
        assert server.proc.poll() is None, (
            f"server died after {p.method} {p.path}:\n{server.output()[-3000:]}"
        )
    return bad


def page_websocket_status(server: Server, cookie: str | None = None) -> int:
    """Load the events page and open its websocket with the page's own session token (the
    handshake status: 101 when the dashboard's channel works)."""
    headers = {"Cookie": cookie} if cookie else {}
    status, _, page = request(server, "GET", "/events", headers)
    assert status == 200 and b"bokeh" in page.lower(), status
    token = re.search(rb'"token":"([^"]+)"', page)
    assert token, "no session token in the page"
    ws = {**WS_HEADERS, **headers, "Sec-WebSocket-Protocol": f"bokeh, {token.group(1).decode()}"}
    return request(server, "GET", "/events/ws", ws)[0]


def assert_nothing_imported(markers: Path, server: Server) -> None:
    assert sorted(os.listdir(markers)) == [], "a module named by a request was imported"
    out = server.output()
    assert ZEN not in out, "`this` was imported (its Zen is in the server's output)"
    assert "Traceback" not in out, out[-3000:]


@pytest.fixture
def shared_run(tmp_path: Path) -> tuple[Path, Path, Path]:
    markers = tmp_path / "markers"
    markers.mkdir()
    return make_run(tmp_path), plant_modules(tmp_path, markers), markers


def test_read_only_serve_answers_only_what_it_serves(
    shared_run: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    run, plant, markers = shared_run
    before = tree_hash(run)
    server = start_server(run, plant, tmp_path / "server.log")
    try:
        bad = send_table(server, "read-only", "read-only `rsi-workbench serve RUN`, no credentials")
        assert page_websocket_status(server) == 101  # the dashboard and its channel still work
        assert request(server, "GET", COMPONENT)[0] == 200
        assert server.proc.poll() is None, server.output()[-3000:]
    finally:
        stop(server)
    assert bad == [], "\n".join(bad)
    assert_nothing_imported(markers, server)
    assert tree_hash(run) == before, "the served run directory changed"


def login(server: Server) -> str:
    """Log in through Panel's login form; the signed cookies it sets, as one Cookie header."""
    form = urllib.parse.urlencode({"username": "colleague", "password": PASSWORD}).encode()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        conn.request("POST", "/login", form, {"Content-Type": "application/x-www-form-urlencoded"})
        resp = conn.getresponse()
        resp.read()
        headers = resp.getheaders()  # every Set-Cookie header, not only the last
    finally:
        conn.close()
    location = dict((k.lower(), v) for k, v in headers).get("location", "")
    assert resp.status == 302 and "error" not in location, (resp.status, headers)
    cookies = [v.split(";", 1)[0] for k, v in headers if k.lower() == "set-cookie"]
    kept = [c for c in cookies if c.split("=", 1)[1] not in ("", '""')]  # cleared cookies dropped
    assert any(c.startswith("user=") for c in kept), cookies
    return "; ".join(kept)


def test_basic_auth_serve_refuses_everything_before_login(
    shared_run: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    run, plant, markers = shared_run
    before = tree_hash(run)
    server = start_server(
        run, plant, tmp_path / "server.log", "--basic-auth", env={"RSI_WORKBENCH_BASIC_AUTH": PASSWORD}
    )
    try:
        bad = send_table(server, "auth", "`serve RUN --basic-auth`, no credentials")
        bad += send_table(server, "auth", "`serve RUN --basic-auth`, wrong credentials", WRONG_CREDENTIALS)
        cookie = login(server)  # the server is alive and a good request works with credentials
        assert page_websocket_status(server, cookie) == 101
        assert request(server, "GET", COMPONENT, {"Cookie": cookie})[0] == 200
        assert request(server, "GET", "/components/this/x/__css__/y", {"Cookie": cookie})[0] == 404
        assert (
            request(server, "GET", "/components/rsi_probe_plant/X/__css__/x.css", {"Cookie": cookie})[0]
            == 404
        )
        assert server.proc.poll() is None, server.output()[-3000:]
    finally:
        stop(server)
    assert bad == [], "\n".join(bad)
    assert_nothing_imported(markers, server)
    assert PASSWORD not in server.output()
    assert tree_hash(run) == before, "the served run directory changed"


# -- credentials never in argv; the network warning; TLS passed through -------------------------------
def serve_args(*argv: str) -> argparse.Namespace:
    """``rsi-workbench serve`` arguments parsed by the command's own parser."""
    from rsi_workbench.widgets.commands import register

    parser = argparse.ArgumentParser(prog="rsi-workbench")
    register(parser.add_subparsers())
    return parser.parse_args(["serve", *argv])


def test_a_secret_on_the_command_line_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = make_run(tmp_path)
    for option, env in (
        ("--basic-auth", "RSI_WORKBENCH_BASIC_AUTH"),
        ("--cookie-secret", "RSI_WORKBENCH_COOKIE_SECRET"),
    ):
        args = serve_args(str(run), option, "hunter2-hunter2")
        assert args.func(args) == 2  # before anything is served
        err = capsys.readouterr().err
        assert f"{option} takes no secret on the command line" in err and env in err
        assert "hunter2" not in err
    args = serve_args(str(run), "--basic-auth")  # asks for auth, but no password anywhere
    assert args.func(args) == 2
    err = capsys.readouterr().err
    assert "RSI_WORKBENCH_BASIC_AUTH=" in err and "--basic-auth-file PATH" in err


def test_credentials_from_the_environment_or_a_file(tmp_path: Path) -> None:
    from rsi_workbench.widgets.serve_guard import ServeSetupError, load_credentials

    env = {"RSI_WORKBENCH_BASIC_AUTH": PASSWORD}
    creds, warnings = load_credentials(False, None, env)  # the variable alone turns auth on
    assert creds is not None and creds.for_panel() == PASSWORD and warnings == []
    assert env == {}, "the variable is removed so that nothing the server starts inherits it"
    table = tmp_path / "users.json"
    table.write_text(json.dumps({"ana": "pw-ana", "bo": "pw-bo"}))
    table.chmod(0o600)
    creds, warnings = load_credentials(True, str(table), {})
    assert creds is not None and creds.for_panel() == {"ana": "pw-ana", "bo": "pw-bo"} and warnings == []
    plain = tmp_path / "password.txt"
    plain.write_text(PASSWORD + "\n")
    plain.chmod(0o644)
    creds, warnings = load_credentials(True, str(plain), {})
    assert creds is not None and creds.for_panel() == PASSWORD
    assert warnings and "chmod 600" in warnings[0]
    bad = tmp_path / "bad.json"
    bad.write_text('{"ana": ')
    with pytest.raises(ServeSetupError, match="bad.json: not valid JSON"):
        load_credentials(True, str(bad), {})
    with pytest.raises(ServeSetupError, match="use one"):
        load_credentials(True, str(plain), {"RSI_WORKBENCH_BASIC_AUTH": PASSWORD})


def test_a_network_address_with_basic_auth_over_http_warns(tmp_path: Path) -> None:
    from rsi_workbench.widgets.commands import _serve_setup

    run = str(make_run(tmp_path))
    setup = _serve_setup(
        serve_args(run, "--address", "0.0.0.0", "--basic-auth"), {"RSI_WORKBENCH_BASIC_AUTH": PASSWORD}
    )
    (warning,) = setup["warnings"]
    assert "clear text" in warning and "--ssl-certfile" in warning and "--ssl-keyfile" in warning
    assert setup["basic_auth"] == PASSWORD and len(setup["cookie_secret"]) >= 32
    setup = _serve_setup(serve_args(run, "--address", "10.1.2.3"), {})
    assert "no authentication" in setup["warnings"][0]
    for local in ("127.0.0.1", "localhost", "::1"):
        setup = _serve_setup(
            serve_args(run, "--address", local, "--basic-auth"), {"RSI_WORKBENCH_BASIC_AUTH": "x"}
        )
        assert setup["warnings"] == []
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.write_text("-"), key.write_text("-")
    args = serve_args(
        run, "--address", "0.0.0.0", "--basic-auth", "--ssl-certfile", str(cert), "--ssl-keyfile", str(key)
    )
    setup = _serve_setup(args, {"RSI_WORKBENCH_BASIC_AUTH": PASSWORD})
    assert setup["warnings"] == [] and setup["ssl_certfile"] == str(cert) and setup["ssl_keyfile"] == str(key)


def test_tls_options_reach_the_server(shared_run: tuple[Path, Path, Path], tmp_path: Path) -> None:
    import shutil
    import ssl

    if shutil.which("openssl") is None:
        pytest.skip("no openssl command to make a self-signed certificate")
    run, plant, markers = shared_run
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    port = free_port()
    cmd = [sys.executable, "-m", "rsi_workbench", "serve", str(run), "--port", str(port), "--basic-auth",
           "--ssl-certfile", str(cert), "--ssl-keyfile", str(key)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO), "RSI_WORKBENCH_BASIC_AUTH": PASSWORD}
    log = tmp_path / "tls.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=run, env=env, stdout=out, stderr=subprocess.STDOUT)
    ctx = ssl.create_default_context(cafile=str(cert))
    ctx.check_hostname = False
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=30, context=ctx)
                conn.request("GET", "/events")
                resp = conn.getresponse()
                break
            except OSError:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.3)
        assert resp.status == 302 and "/login" in resp.getheader("Location", "")
        conn.close()
    finally:
        proc.terminate()
        proc.wait(10)
    out = log.read_text()
    assert f"at https://127.0.0.1:{port}/" in out and "clear text" not in out


def test_the_guard_is_what_component_urls_reach() -> None:
    """In-process: after install_guard, tornado's own routing sends every component URL to the
    guard; a route layout that would not is refused; the check imports nothing."""
    import panel as pn
    from tornado.web import HTTPError

    from rsi_workbench.widgets.serve_guard import (
        GUARD_PROBES,
        component_module,
        guard_patterns,
        guarded_component_handler,
        install_guard,
        route_of,
    )

    guard = guarded_component_handler()
    for patterns in ([], guard_patterns(guard)):  # with or without the extra pattern in front
        server = pn.serve({"x": lambda: pn.pane.Markdown("x")}, port=0, address="127.0.0.1", start=False,
                          show=False, verbose=False, extra_patterns=patterns)  # fmt: skip
        try:
            install_guard(server, guard)
            for probe in GUARD_PROBES:
                assert route_of(server._tornado, probe) is guard, probe
            assert route_of(server._tornado, "/x/autoload.js").__name__ == "AuthenticatedAutoloadJsHandler"
            assert route_of(server._tornado, "/x/ws").__name__ == "BokehOnlyWSHandler"
        finally:
            server.stop()

    class StubServerRoutingElsewhere:  # test double: a route table whose component URLs reach another handler
        class _tornado:
            wildcard_router = type("R", (), {"rules": []})()

            @staticmethod
            def find_handler(request: object) -> object:
                return type("D", (), {"handler_class": dict})()  # the test double's only route

    with pytest.raises(RuntimeError, match="refusing to serve"):
        install_guard(StubServerRoutingElsewhere(), guard)
    for path in ("rsi_never_imported_probe/X/__css__/a", "panel.rsi_never_imported_probe/X/__css__/a"):
        with pytest.raises(HTTPError) as e:
            component_module(path)
        assert e.value.status_code == 404
        assert path.split("/")[0] not in sys.modules
