"""Shared by the Ray worker-kill tests: run a driver in a thread and SIGKILL the local process that
holds a writer lock (a Ray worker running the task) once the test says it is time."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path


def run_killing_lock_holder(
    drive: Callable[[], object], lock: Path, ready: Callable[[], bool] = lambda: True
) -> list[int]:
    """Run ``drive()`` in a thread; once ``ready()``, SIGKILL the (local, live) holder of ``lock``.
    Returns the killed pids (empty when the driver finished first); re-raises the driver's error."""
    from rsi_workbench.execute.writer_lock import pid_alive

    killed: list[int] = []
    errors: list[BaseException] = []

    def driver() -> None:
        try:
            drive()
        except BaseException as e:  # noqa: BLE001 - re-raised in the test thread
            errors.append(e)

    t = threading.Thread(target=driver)
    t.start()
    while t.is_alive() and not killed:
        try:
            holder = json.loads(lock.read_text()) if ready() else None
        except (FileNotFoundError, ValueError):
            holder = None
        if holder is None:
            time.sleep(0.005)
            continue
        if holder["host"] == socket.gethostname() and pid_alive(holder["pid"]):
            os.kill(holder["pid"], signal.SIGKILL)
            killed.append(holder["pid"])
    t.join()
    assert not errors, errors
    return killed
