"""Browser-test harness: serve on a free 127.0.0.1 port, drive Debian's headless Chromium, read the DOM.

Panel renders into nested shadow roots, so DOM helpers search through every shadow root.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROME_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--window-size=1400,1000",
)

# JS: every element matching a selector, and all visible text, looking inside every shadow root.
_DEEP_JS = """
function walk(root, out) {
  out.push(root);
  const els = root.querySelectorAll('*');
  for (const el of els) { if (el.shadowRoot) walk(el.shadowRoot, out); }
  return out;
}
window.__roots = () => walk(document, []);
window.__deepAll = (sel) => window.__roots().flatMap(r => Array.from(r.querySelectorAll(sel)));
window.__deepText = () => window.__roots().map(r => (r.body ? r.body.innerText : Array.from(r.children).map(c => c.innerText || c.textContent || '').join('\\n'))).join('\\n');
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(url: str, timeout: float = 90.0, proc: subprocess.Popen[bytes] | None = None) -> None:
    """Wait until ``url`` answers (any HTTP status); fail early if the server process died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
            raise RuntimeError(f"server exited with {proc.returncode}:\n{out[-3000:]}")
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"{url} did not answer within {timeout} s")


@contextlib.contextmanager
def served(argv: Sequence[str], url_path: str, port: int, timeout: float = 90.0) -> Iterator[str]:
    """Run a server command (argv) from the repository root; yield the page URL once it answers."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "BOKEH_LOG_LEVEL": "warn"}
    proc = subprocess.Popen(list(argv), cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}{url_path}"
    try:
        wait_http(url, timeout, proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def panel_serve(app: str, run: Path, port: int, *extra: str) -> list[str]:
    """``panel serve widgets/<app>.py --args --run RUN`` as the README documents it."""
    return [
        sys.executable, "-m", "panel", "serve", f"widgets/{app}.py",
        "--address", "127.0.0.1", "--port", str(port), "--allow-websocket-origin", f"127.0.0.1:{port}",
        "--args", "--run", str(run), *extra,
    ]  # fmt: skip


def make_driver() -> Any:
    """Headless Debian Chromium through Debian's chromedriver, with browser console logs captured."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for f in CHROME_FLAGS:
        opts.add_argument(f)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


def deep_text(driver: Any) -> str:
    driver.execute_script(_DEEP_JS)
    return str(driver.execute_script("return window.__deepText();"))


def deep_all(driver: Any, selector: str) -> list[Any]:
    driver.execute_script(_DEEP_JS)
    return list(driver.execute_script("return window.__deepAll(arguments[0]);", selector))


def wait_until(cond: Callable[[], Any], timeout: float = 60.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = cond()
            if last:
                return last
        except Exception as e:  # DOM still building
            last = e
        time.sleep(0.25)
    raise TimeoutError(f"timed out waiting for {what} (last: {last!r})")


def wait_text(driver: Any, text: str, timeout: float = 60.0) -> str:
    return str(wait_until(lambda: text in deep_text(driver) and deep_text(driver), timeout, f"text {text!r}"))


def click_button(driver: Any, label: str) -> None:
    """Click the (shadow-DOM) button whose text contains ``label``."""
    btn = wait_until(
        lambda: next((b for b in deep_all(driver, "button") if label in (b.text or "")), None),
        30,
        f"button {label!r}",
    )
    driver.execute_script("arguments[0].click();", btn)


def severe_console_errors(driver: Any) -> list[str]:
    """SEVERE browser-console entries, a missing favicon aside."""
    logs = driver.get_log("browser")
    return [e["message"] for e in logs if e.get("level") == "SEVERE" and "favicon" not in e["message"]]


def plotly_ready(driver: Any, minimum: int = 1) -> int:
    """Number of rendered plotly graphs (``.main-svg`` drawn) once at least ``minimum`` are there."""
    return int(
        wait_until(
            lambda: (
                len(deep_all(driver, ".js-plotly-plot .main-svg")) >= minimum
                and len(deep_all(driver, ".js-plotly-plot .main-svg"))
            ),
            60,
            f"{minimum} plotly figures",
        )
    )
