"""``serve`` without ``--live`` writes nothing, and its login page loads nothing from outside.

A read-only server used to create an empty ``artifacts/`` in a run directory that had none (the
events page's LLM-calls view opened the artifact store, which made its folder); here the run
directory and the server's working directory hash the same (folders included) after the events
page and its websocket were served. The ``--basic-auth`` login and logout pages are the
workbench's own (widgets/login.html, logout.html): no logo or favicon from a CDN, no ``http(s)``
URL outside the server. Helpers come from test_serve_routes.py.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_serve_routes import (
    PASSWORD,
    REPO,
    Server,
    free_port,
    make_run,
    page_websocket_status,
    request,
    stop,
)

pytest.importorskip("panel")


def snapshot(root: Path) -> dict[str, str]:
    """Every file's bytes and every folder under ``root`` (a new empty folder shows too)."""
    import hashlib

    return {
        str(p.relative_to(root)): "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
    }


def serve(run: Path, cwd: Path, log: Path, *extra: str, env: dict[str, str] | None = None) -> Server:
    """``rsi-workbench serve RUN`` from ``cwd`` (not the run), waited for until it answers."""
    import time

    port = free_port()
    cmd = [sys.executable, "-m", "rsi_workbench", "serve", str(run), "--port", str(port), *extra]
    penv = {**os.environ, **(env or {}), "PYTHONPATH": str(REPO)}
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=penv, stdout=out, stderr=subprocess.STDOUT)
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


@pytest.fixture
def bare_run(tmp_path: Path) -> Path:
    """A real run with its ``artifacts/`` folder removed (a run that stored none, or a copy without it)."""
    run = make_run(tmp_path)
    shutil.rmtree(run / "artifacts")
    return run


def test_read_only_serve_writes_nothing(bare_run: Path, tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    before = snapshot(bare_run), snapshot(cwd)
    server = serve(bare_run, cwd, tmp_path / "server.log")
    try:
        assert page_websocket_status(server) == 101  # the events page (and its LLM-calls view) built
        for path in ("/", "/events", "/events/metadata"):
            assert request(server, "GET", path)[0] < 500, path
        assert server.proc.poll() is None, server.output()[-3000:]
    finally:
        stop(server)
    assert "Traceback" not in server.output(), server.output()[-3000:]
    assert not (bare_run / "artifacts").exists(), "serve made the run's artifacts/ folder"
    assert (snapshot(bare_run), snapshot(cwd)) == before


def test_opening_a_run_to_read_makes_no_folder(bare_run: Path) -> None:
    from rsi_workbench.records import Run
    from rsi_workbench.records.artifacts import ArtifactStore

    run = Run.open(bare_run)
    assert run.artifacts.list() == [] and not run.artifacts.has("0" * 64)
    assert not (bare_run / "artifacts").exists()
    store = ArtifactStore(bare_run / "artifacts", create=False)  # the first put makes it
    sha = store.put(b"x")
    assert store.get(sha) == b"x"


EXTERNAL = re.compile(r"""(?:https?:)?//[^\s"'<>)]+""", re.I)


@pytest.mark.parametrize("page", ["/login", "/logout"])
def test_the_login_pages_load_nothing_from_outside(bare_run: Path, tmp_path: Path, page: str) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    server = serve(
        bare_run, cwd, tmp_path / "server.log", "--basic-auth", env={"RSI_WORKBENCH_BASIC_AUTH": PASSWORD}
    )
    try:
        status, _, body = request(server, "GET", page)
    finally:
        stop(server)
    html = body.decode("utf-8", "replace")
    if page == "/logout" and status in (301, 302):
        pytest.skip("this Panel redirects /logout (no page to check)")
    assert status == 200, (status, html[:500])
    assert "RSI Workbench" in html  # the workbench's own template, not Panel's CDN-logo one
    own = (f"http://127.0.0.1:{server.port}", f"//127.0.0.1:{server.port}")
    outside = [u for u in EXTERNAL.findall(html) if not u.startswith(own)]
    assert outside == [], f"{page} references URLs outside the server: {outside}"
    assert "cdn.holoviz.org" not in html
