"""``rsi-workbench models serve`` ends the server it started however it is stopped: the server's own
exit, SIGINT (Ctrl-C), SIGTERM, and a SIGKILL of ``models serve`` itself (the kernel kills the child).

The real command line runs with a test double on PATH in place of the ``transformers`` CLI: a script
that sleeps (starting ``transformers serve`` for real takes far longer and needs a model)."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux")

FAKE_TRANSFORMERS = """#!{python}
# test double for the `transformers` CLI: `transformers serve ...` sleeps (or exits when asked)
import os, sys, time
print("fake transformers", " ".join(sys.argv[1:]), flush=True)
if os.environ.get("FAKE_SERVE_EXIT"):
    sys.exit(int(os.environ["FAKE_SERVE_EXIT"]))
time.sleep(600)
"""


@pytest.fixture
def serve(tmp_path):
    """Start ``python -m rsi_workbench models serve`` with the fake server; returns (parent, child pid)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "transformers"
    fake.write_text(FAKE_TRANSFORMERS.format(python=sys.executable))
    fake.chmod(0o755)
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "config.json").write_text("{}")
    started: list[subprocess.Popen[bytes]] = []
    children: list[int] = []

    def start(**env: str) -> tuple[subprocess.Popen[bytes], int]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rsi_workbench", "models", "serve", "--model", str(ckpt), "--port", "0"],
            env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", **env},
            stderr=subprocess.PIPE,
            # a shell may start tests with SIGINT ignored (Ctrl-C reaches a foreground command), and
            # nohup with SIGHUP ignored (a hangup reaches an interactive one): both as a user's shell has them
            preexec_fn=_default_stop_signals,
        )
        started.append(proc)
        pid = _child_pid(proc)
        children.append(pid)
        return proc, pid

    yield start
    for p in started:  # never leave a process behind, whatever the test found
        if p.poll() is None:
            p.kill()
            p.wait()
    for pid in children:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def _default_stop_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _child_pid(proc: subprocess.Popen[bytes], limit_s: float = 120.0) -> int:
    """The server's pid, from the ``server pid N`` line ``models serve`` prints on stderr."""
    assert proc.stderr is not None
    end, buf = time.monotonic() + limit_s, b""
    while time.monotonic() < end:
        ready, _, _ = select.select([proc.stderr], [], [], 1.0)
        if ready:
            chunk = os.read(proc.stderr.fileno(), 4096)
            if not chunk:
                break
            buf += chunk
            for line in buf.decode(errors="replace").splitlines():
                if line.startswith("server pid "):
                    return int(line.split()[2])
    raise AssertionError(f"`models serve` printed no server pid: {buf.decode(errors='replace')}")


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie nobody reaped yet counts as ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _ends(pid: int, limit_s: float = 60.0) -> bool:
    """Wait (up to a generous limit, a hang guard) for ``pid`` to end; whether it did."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def _wait_running(pid: int) -> None:
    """The fake server has started (its command line is the fake script's, not the fork's)."""
    end = time.monotonic() + 60.0
    while time.monotonic() < end:
        try:
            if b"transformers" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return
        except FileNotFoundError:
            break
        time.sleep(0.05)
    raise AssertionError(f"server {pid} never started")


@pytest.mark.parametrize(
    ("sig", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)]
)
def test_a_stopped_models_serve_ends_its_server(serve, sig, status):
    parent, child = serve()
    _wait_running(child)
    parent.send_signal(sig)  # to models serve alone: it must pass the stop on
    assert parent.wait(timeout=120) == status
    assert _ends(child), f"server {child} outlived `models serve` stopped by {sig.name}"


def test_a_sigkilled_models_serve_takes_its_server_with_it(serve):
    parent, child = serve()
    _wait_running(child)
    parent.kill()  # SIGKILL: no handler runs in the parent; the kernel kills the child
    assert parent.wait(timeout=120) == -signal.SIGKILL
    assert _ends(child), f"server {child} outlived a SIGKILL of `models serve`"


def test_models_serve_returns_the_status_of_a_server_that_exits(serve):
    parent, child = serve(FAKE_SERVE_EXIT="3")
    assert parent.wait(timeout=120) == 3
    assert _ends(child)


def test_spawn_server_child_dies_with_a_sigkilled_parent(tmp_path):
    """The spawn function itself, from a parent that is not the CLI: a long sleep dies with it."""
    script = (
        "import sys\n"
        "from rsi_workbench.models.commands import spawn_server\n"
        "p = spawn_server([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        "print(p.pid, flush=True)\n"
        "p.wait()\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    try:
        assert _alive(child)
        parent.kill()
        parent.wait(timeout=120)
        assert _ends(child), f"{child} outlived its SIGKILLed parent"
    finally:
        if _alive(child):
            os.kill(child, signal.SIGKILL)
