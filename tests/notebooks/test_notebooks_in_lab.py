"""Every notebook as a researcher opens it: JupyterLab on a copy of the repository, headless Chromium
with no network beyond loopback, Run All on the defaults, then the saved notebook converted to HTML.

Per notebook: no error output; every Panel/Bokeh output and every plotly figure drawn in the page;
no request left the machine (a CDN dependency fails); the executed notebook is saved by JupyterLab
(``docmanager:save``), no ``<script src="http...">`` in its saved outputs, and a screenshot kept under
``tests/artifacts/notebooks_lab/``; the saved notebook converted with ``jupyter nbconvert --to html``
and the require.js/MathJax URLs emptied (no second execution), opened offline, still draws its
figures (plotly.js and BokehJS embedded, not fetched) and requests nothing beyond loopback.

``RSI_WORKBENCH_NOTEBOOKS_REV=<git rev>`` puts that revision's notebooks into the copy instead of
the working tree's (how the old notebooks' failures were recorded).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "tests" / "artifacts" / "notebooks_lab"
NOTEBOOKS = sorted(p.name for p in (REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
TOKEN = "rsi-workbench-notebook-test"
LOOPBACK = {"127.0.0.1", "localhost"}
# nbconvert's HTML template links require.js and MathJax from cdnjs unless told otherwise: exported as
# docs/notebooks.md says (both URLs empty), the page loads nothing from the network.
NBCONVERT_OFFLINE = ("--HTMLExporter.require_js_url=", "--HTMLExporter.mathjax_url=")
# A <script src=...> that is not a local file (in a saved output or the exported page).
NETWORK_SCRIPT = re.compile(r"<script[^>]*\ssrc\s*=\s*[\"']?(?:https?:)?//", re.IGNORECASE)
RUN_ALL_TIMEOUT = 400  # seconds per notebook, generous for a loaded CI machine; not asserted on

pytestmark = [pytest.mark.ui, pytest.mark.slow]

# A closed port as the proxy, and every host name unresolvable: nothing but loopback can load.
OFFLINE_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1000",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
    "--proxy-server=http://127.0.0.1:9",
)
BLOCK_NON_LOOPBACK = {
    "urls": [],
    "urlPatterns": [
        {"urlPattern": "*://127.0.0.1:*/*", "block": False},
        {"urlPattern": "*://localhost:*/*", "block": False},
        {"urlPattern": "http*://*", "block": True},
        {"urlPattern": "ws*://*", "block": True},
    ],
}


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _repo_copy(dest: Path) -> Path:
    """The repository's files as git sees them (tracked plus untracked-but-not-ignored), no runs."""
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, check=True, capture_output=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for rel in filter(None, files):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    rev = os.environ.get("RSI_WORKBENCH_NOTEBOOKS_REV")
    if rev:
        for nb in (dest / "notebooks").glob("*.ipynb"):
            nb.unlink()
        listed = subprocess.run(
            ["git", "ls-tree", "--name-only", rev, "notebooks/"],
            cwd=REPO,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        for rel in (r for r in listed if r.endswith(".ipynb")):
            blob = subprocess.run(
                ["git", "show", f"{rev}:{rel}"], cwd=REPO, check=True, capture_output=True
            ).stdout
            (dest / rel).write_bytes(blob)
    return dest


@pytest.fixture(scope="module")
def lab() -> Iterator[dict[str, Any]]:
    """JupyterLab as the README starts it, on a copy of the repository beside a link to ``../shared``."""
    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        pytest.skip("Debian chromium + chromium-driver are not installed (make sysdeps)")
    pytest.importorskip("selenium")
    pytest.importorskip("jupyterlab")
    tmp = Path(tempfile.mkdtemp(prefix="rsi-lab-"))
    root = _repo_copy(tmp / "rsi-workbench")
    if (REPO.parent / "shared").is_dir():  # the layout of a fresh clone: ../shared/datasets beside it
        (tmp / "shared").symlink_to(REPO.parent / "shared")
    settings = tmp / "lab-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
    env = {k: v for k, v in os.environ.items() if k not in ("RSI_WORKBENCH_DATA", "RSI_WORKBENCH_ROOT")}
    env.update(
        PYTHONPATH=str(root),  # the copy's package, not the checkout the editable install points at
        JUPYTER_CONFIG_DIR=str(tmp / "jupyter-config"),
        JUPYTER_RUNTIME_DIR=str(tmp / "jupyter-runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(tmp / "lab-settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp / "lab-workspaces"),
    )
    env.pop("RSI_WORKBENCH_RUNS", None)
    port = _free_port()
    log = open(tmp / "jupyter.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", f"--IdentityProvider.token={TOKEN}",
         "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", f"--ServerApp.root_dir={root}",
         "--LabApp.expose_app_in_browser=True", "--ServerApp.open_browser=False",
         *(["--allow-root"] if os.geteuid() == 0 else [])],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_http(f"{base}/api/status?token={TOKEN}", proc, tmp / "jupyter.log")
        driver = _offline_driver(tmp / "chromium-profile")
        try:
            yield {"base": base, "root": root, "driver": driver, "log": tmp / "jupyter.log"}
        finally:
            driver.quit()
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


def _wait_http(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 120) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"{url} did not answer within {timeout} s:\n{log.read_text()[-3000:]}")


def _offline_driver(profile: Path) -> Any:
    """Headless Debian Chromium, fresh profile, every non-loopback request refused, network log on."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for f in (*OFFLINE_FLAGS, f"--user-data-dir={profile}"):
        opts.add_argument(f)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd("Network.setBlockedURLs", BLOCK_NON_LOOPBACK)
    driver.set_script_timeout(RUN_ALL_TIMEOUT)
    # selenium's own HTTP read timeout (120 s for Chromium) would otherwise end a longer Run All first
    driver.command_executor.client_config.timeout = RUN_ALL_TIMEOUT + 60
    return driver


class NetLog:
    """Reads the performance log as it goes: every http(s)/ws request not to loopback, and which answered."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver
        self.attempted: set[str] = set()
        self.answered: set[str] = set()

    def drain(self) -> None:
        for entry in self.driver.get_log("performance"):
            msg = json.loads(entry["message"])["message"]
            method, params = msg.get("method", ""), msg.get("params", {})
            if method == "Network.requestWillBeSent":
                url = params["request"]["url"]
            elif method in ("Network.responseReceived", "Network.webSocketHandshakeResponseReceived"):
                url = params.get("response", {}).get("url", "") or params.get("requestId", "")
            elif method == "Network.webSocketCreated":
                url = params.get("url", "")
            else:
                continue
            parsed = urlparse(url)
            if parsed.scheme in ("http", "https", "ws", "wss") and parsed.hostname not in LOOPBACK:
                (self.answered if method.endswith("ResponseReceived") else self.attempted).add(url)


def _wait(driver: Any, js: str, timeout: float, what: str, net: NetLog | None = None) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = driver.execute_script(js)
            if last:
                return last
        except Exception as e:  # the page is still loading
            last = e
        if net is not None:
            net.drain()
        time.sleep(0.5)
    raise TimeoutError(f"timed out waiting for {what} (last: {last!r})")


_NOTEBOOK_READY = """
const app = window.jupyterapp; if (!app) return false;
const w = app.shell.currentWidget;
if (!w || !w.context || w.context.path !== arguments[0] || !w.sessionContext) return false;
const k = w.sessionContext.session && w.sessionContext.session.kernel;
return !!(k && k.connectionStatus === 'connected' && w.sessionContext.kernelDisplayStatus === 'idle'
          && w.content.widgets.length > 0);
"""
_RUN_ALL = """
const done = arguments[arguments.length - 1];
window.jupyterapp.commands.execute('notebook:run-all-cells').then(
  r => done({result: r === undefined ? null : r}), e => done({error: String(e)}));
"""
_IDLE_AND_DONE = """
const w = window.jupyterapp.shell.currentWidget;
if (w.sessionContext.kernelDisplayStatus !== 'idle') return false;
return !Array.from(w.content.widgets).some(c => c.model.type === 'code' && c.promptNode
  && c.promptNode.textContent.includes('*'));
"""
# What drew on the page: Panel/Bokeh roots with rendered children, plotly figures with an svg.
_DRAWN_R = """
const outs = Array.from(document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output'));
const roots = outs.flatMap(o => Array.from(o.querySelectorAll('[data-root-id]')));
const bokeh = roots.filter(r => Array.from(r.children).some(c => (c.shadowRoot && c.shadowRoot.childElementCount)
  || c.childElementCount)).length;
const plotly = outs.filter(o => o.querySelector('.js-plotly-plot .main-svg')).length;
const r = {bokeh, plotly, roots: roots.length};
"""
_DRAWN = _DRAWN_R + "return r;"
_SAVE = """
const done = arguments[arguments.length - 1];
const w = window.jupyterapp.shell.currentWidget;
window.jupyterapp.commands.execute('docmanager:save').then(() => done(!w.context.model.dirty), e => done(String(e)));
"""
_SCROLL_TO_LAST_DASHBOARD = """
const outs = Array.from(document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output'));
const target = outs.filter(o => o.querySelector('[data-root-id], .js-plotly-plot')).pop();
if (target) target.scrollIntoView({block: 'start'});
return !!target;
"""


def _expected(nb: dict[str, Any]) -> dict[str, int]:
    """How many Panel dashboards (a cell's value; ``pn.extension`` displays an empty root of its own)
    and plotly figures the saved notebook holds."""
    outs = [o for c in nb["cells"] for o in c.get("outputs", [])]
    return {
        "bokeh": sum(
            o["output_type"] == "execute_result" and "application/vnd.holoviews_exec.v0+json" in o["data"]
            for o in outs
        ),
        "plotly": sum("application/vnd.plotly.v1+json" in o.get("data", {}) for o in outs),
    }


def _errors(nb: dict[str, Any]) -> list[str]:
    return [
        f"{o.get('ename')}: {o.get('evalue')}"
        for c in nb["cells"]
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_all_in_jupyterlab(lab: dict[str, Any], name: str) -> None:
    driver, root = lab["driver"], lab["root"]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    NetLog(driver).drain()  # the previous test's HTML page, checked there
    net = NetLog(driver)
    path = f"notebooks/{name}"
    t0 = time.monotonic()
    driver.get(f"{lab['base']}/lab/tree/{path}?reset&token={TOKEN}")
    _wait(
        driver,
        _NOTEBOOK_READY.replace("arguments[0]", json.dumps(path)),
        180,
        f"{name} open, kernel idle",
        net,
    )
    ran = driver.execute_async_script(_RUN_ALL)
    _wait(driver, _IDLE_AND_DONE, RUN_ALL_TIMEOUT, f"{name}: Run All to finish", net)
    elapsed = time.monotonic() - t0
    assert driver.execute_async_script(_SAVE) is True, f"{name}: docmanager:save did not save"
    saved = json.loads((root / path).read_text())
    (ARTIFACTS / name).write_text(json.dumps(saved))
    errors = _errors(saved)
    want = _expected(saved)
    outputs = [
        "".join(v) if isinstance(v, list) else v
        for c in saved["cells"]
        for o in c.get("outputs", [])
        for k, v in o.get("data", {}).items()
        if "html" in k
    ]
    network_scripts = [m.group(0) for t in outputs if isinstance(t, str) for m in NETWORK_SCRIPT.finditer(t)]
    try:
        drawn = _wait(
            driver,
            _DRAWN_R + f"return (r.bokeh >= {want['bokeh']} && r.plotly >= {want['plotly']}) ? r : false;",
            60,
            f"{name}: {want} drawn",
            net,
        )
    except TimeoutError:
        drawn = driver.execute_script(_DRAWN)
    driver.execute_script(_SCROLL_TO_LAST_DASHBOARD)
    time.sleep(1)
    driver.save_screenshot(str(ARTIFACTS / f"{Path(name).stem}.png"))
    net.drain()
    driver.execute_async_script(  # done with this notebook: free its kernel for the next one
        "const done = arguments[arguments.length - 1];"
        "window.jupyterapp.shell.currentWidget.sessionContext.shutdown().then(() => done(true), () => done(false));"
    )
    print(f"{name}: Run All {elapsed:.0f} s (run-all-cells -> {ran}); expected {want}, drawn {drawn}")
    assert not errors, f"{name}: error output after Run All: {errors}"
    assert not network_scripts, f"{name}: saved outputs load scripts from the network: {network_scripts[:3]}"
    assert ran.get("result") is not False, f"{name}: notebook:run-all-cells reported failure: {ran}"
    assert not net.answered, f"{name}: requests beyond loopback were answered: {sorted(net.answered)}"
    assert not net.attempted, f"{name}: the page tried to load from the network: {sorted(net.attempted)[:10]}"
    assert want["bokeh"] + want["plotly"] > 0, f"{name}: no dashboard or figure in the outputs"
    assert drawn["bokeh"] >= want["bokeh"], f"{name}: Panel/Bokeh outputs drawn {drawn}, expected {want}"
    assert drawn["plotly"] >= want["plotly"], f"{name}: plotly figures drawn {drawn}, expected {want}"
    _check_html_export(driver, root / path, want, name, net)


def _check_html_export(driver: Any, saved: Path, want: dict[str, int], name: str, net: NetLog) -> None:
    """``jupyter nbconvert --to html`` on the saved notebook; opened offline, its figures still draw."""
    out = ARTIFACTS / f"{saved.stem}.html"
    subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", *NBCONVERT_OFFLINE, str(saved),
         "--output", str(out)],
        check=True, capture_output=True,
    )  # fmt: skip
    html = out.read_text(encoding="utf-8")
    assert not NETWORK_SCRIPT.search(html), f"{out.name}: {NETWORK_SCRIPT.search(html)}"
    if want["plotly"]:
        assert html.count('class="plotly-graph-div"') >= want["plotly"], f"{out.name}: plotly divs missing"
        assert "* plotly.js v" in html, f"{out.name}: plotly.js is not embedded"
    if want["bokeh"]:
        assert "data-root-id" in html and "Bokeh" in html, f"{out.name}: no Panel/Bokeh content"
    driver.get(out.as_uri())
    drawn = _wait(
        driver,
        "const roots = Array.from(document.querySelectorAll('[data-root-id]'));"
        "const bokeh = roots.filter(r => Array.from(r.children).some(c => c.shadowRoot"
        " && c.shadowRoot.childElementCount)).length;"
        "const plotly = document.querySelectorAll('.plotly-graph-div.js-plotly-plot .main-svg').length ? "
        "Array.from(document.querySelectorAll('.plotly-graph-div')).filter(d => d.querySelector('.main-svg')).length : 0;"
        f"return (bokeh >= {want['bokeh']} && plotly >= {want['plotly']}) ? {{bokeh, plotly}} : false;",
        60,
        f"{out.name}: figures drawn offline",
    )
    driver.execute_script(
        "const t = document.querySelector('.plotly-graph-div, [data-root-id]:not(:empty)');"
        "if (t) t.scrollIntoView({block: 'start'});"
    )
    driver.save_screenshot(str(ARTIFACTS / f"{saved.stem}.html.png"))
    html_net = NetLog(driver)
    html_net.drain()
    print(
        f"{out.name}: {out.stat().st_size / 1e6:.1f} MB, drawn offline {drawn}; blocked {sorted(html_net.attempted)}"
    )
    assert not html_net.attempted, (
        f"{out.name}: the exported page tried to load from the network: {html_net.attempted}"
    )
    assert not html_net.answered, f"{out.name}: requests beyond loopback were answered: {html_net.answered}"
