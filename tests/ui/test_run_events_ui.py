"""The run-events explorer and the sharing commands in a real headless Chromium."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ui_harness import (
    click_button,
    deep_all,
    deep_text,
    free_port,
    panel_serve,
    plotly_ready,
    served,
    severe_console_errors,
    wait_text,
    wait_until,
)

pytestmark = [pytest.mark.ui, pytest.mark.slow]


def n_cycles(run: Path) -> int:
    """The smoke run's cycle count (one cycle per registered dataset, so it grows with the registry)."""
    from rsi_workbench.records import load_events

    return int(load_events(run, flatten=False)["cycle"].max())


def test_run_events_panel_serve_steps_cycles(browser, smoke_run: Path, artifacts_dir: Path) -> None:
    port = free_port()
    with served(panel_serve("run_events", smoke_run, port), "/run_events", port) as url:
        n = n_cycles(smoke_run)
        browser.get(url)
        wait_text(browser, f"cycle {n} of {n}")
        plotly_ready(browser, 2)
        click_button(browser, "previous cycle")
        text = wait_text(browser, f"cycle {n - 1} of {n}")
        assert "dataset_checked" in text
        click_button(browser, "previous cycle")
        wait_text(browser, f"cycle {n - 2} of {n}")
        wait_until(lambda: f"cycle={n - 2}" in browser.current_url, 20, "cycle in the URL")  # shareable link
        browser.save_screenshot(str(artifacts_dir / "run_events.png"))
        assert severe_console_errors(browser) == []
        # a shared link opens at the cycle it names
        browser.get(url + "?cycle=2")
        wait_text(browser, f"cycle 2 of {n}")


def test_rsi_workbench_serve_read_only_and_live_lock(browser, smoke_run: Path, artifacts_dir: Path) -> None:
    from rsi_workbench.records import Run, RunLocked

    port = free_port()
    cmd = [sys.executable, "-m", "rsi_workbench", "serve", str(smoke_run), "--port", str(port), "--live"]
    with served(cmd, "/events", port) as url:
        # --live holds the single-writer lock: nobody else may write while the owner serves
        with pytest.raises(RunLocked):
            Run.open(smoke_run, mode="a", exclusive=True)
        browser.get(url)
        n = n_cycles(smoke_run)
        text = wait_text(browser, f"cycle {n} of {n}")
        assert "live" in text
        plotly_ready(browser, 2)
        browser.save_screenshot(str(artifacts_dir / "serve_live.png"))
        assert severe_console_errors(browser) == []
    Run.open(smoke_run, mode="a", exclusive=True).close()  # released on exit

    port = free_port()
    cmd = [sys.executable, "-m", "rsi_workbench", "serve", str(smoke_run), "--port", str(port)]
    with served(cmd, "/events", port) as url:
        Run.open(smoke_run, mode="a", exclusive=True).close()  # read-only serve takes no lock
        browser.get(url)
        assert "read-only" in wait_text(browser, "read-only")


def test_events_of_an_experiment_list_and_open_its_runs(
    browser, code_repair_run: Path, artifacts_dir: Path
) -> None:
    port = free_port()
    cmd = [sys.executable, "-m", "rsi_workbench", "serve", str(code_repair_run), "--port", str(port)]
    with served(cmd, "/events", port) as url:
        browser.get(url)
        wait_text(browser, "runs in this directory")
        cell = wait_until(
            lambda: next(
                c
                for c in deep_all(browser, ".tabulator-cell")
                if c.text.strip() == "runs/world_adaptive-seed0"
            ),
            30,
            "the run's row",
        )
        browser.execute_script("arguments[0].click();", cell)
        wait_text(browser, "/ runs/world_adaptive-seed0", 30)  # the run's own log is shown
        wait_text(browser, "cycle 3 of 3", 30)
        wait_until(lambda: "run=runs" in browser.current_url, 20, "the run in the URL")  # shareable link
        plotly_ready(browser, 2)
        browser.save_screenshot(str(artifacts_dir / "run_events_experiment.png"))
        assert severe_console_errors(browser) == []


def test_static_export_opens_from_file(browser, smoke_run: Path, tmp_path: Path, artifacts_dir: Path) -> None:
    import subprocess

    out = tmp_path / "report.html"
    subprocess.run(
        [sys.executable, "-m", "rsi_workbench", "export", str(smoke_run), "--html", str(out)], check=True
    )
    browser.get(out.as_uri())
    n = plotly_ready(browser, 2)
    assert n >= 2
    assert "Run events" in deep_text(browser)
    assert deep_all(browser, ".slider-container, .slider-group")  # pre-computed slider states
    browser.save_screenshot(str(artifacts_dir / "export_events.png"))
    assert severe_console_errors(browser) == []


def test_serve_basic_auth_asks_for_the_password(smoke_run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import http.cookiejar
    import urllib.error
    import urllib.parse
    import urllib.request

    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "rsi_workbench",
        "serve",
        str(smoke_run),
        "--port",
        str(port),
        "--basic-auth",  # the password from the environment, never argv
    ]
    monkeypatch.setenv("RSI_WORKBENCH_BASIC_AUTH", "s3cret")
    with served(cmd, "/login", port) as url:
        base = url.rsplit("/", 1)[0]

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *a, **k):  # noqa: ANN002, ANN003
                return None

        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.build_opener(NoRedirect).open(base + "/events", timeout=30)
        assert e.value.code == 302 and "/login" in e.value.headers["Location"]
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        form = urllib.parse.urlencode({"username": "colleague", "password": "s3cret"}).encode()
        opener.open(base + "/login", data=form, timeout=30)
        page = opener.open(base + "/events", timeout=60)
        assert page.status == 200 and b"bokeh" in page.read().lower()
