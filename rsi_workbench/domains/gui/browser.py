"""One offline headless Chromium running one MiniWoB++ task page, and the tools to kill it.

The Farama ``miniwob`` package's ``SeleniumInstance.create_driver`` calls
``webdriver.Chrome(options=...)`` without a service, so Selenium Manager may look for (and download)
a browser. :func:`instance_class` subclasses it so the driver always comes from Debian's
``/usr/bin/chromedriver`` driving ``/usr/bin/chromium`` with the project's headless flags, a fresh profile
directory, and Selenium Manager switched off (``SE_OFFLINE``): nothing is ever downloaded.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import tempfile
from pathlib import Path
from typing import Any

CHROMIUM = os.environ.get("RSI_WORKBENCH_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("RSI_WORKBENCH_CHROMEDRIVER", "/usr/bin/chromedriver")
CHROME_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-dev-shm-usage",
)
PAGE_LOAD_TIMEOUT_S = 30.0


class BrowserFailure(RuntimeError):
    """The browser (Chromium or chromedriver) crashed, hung or could not start: an infrastructure fault."""


def require_gui() -> None:
    """Fail with the extra to install when ``miniwob``/``selenium`` are missing, or the browser is."""
    try:
        import miniwob  # noqa: F401
        import selenium  # noqa: F401
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("the GUI domain needs the `gui` extra: pip install 'rsi-workbench[gui]'") from err
    for path, pkg in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not Path(path).is_file():
            raise BrowserFailure(f"{path} is missing: install the Debian package {pkg} (make sysdeps)")


def offline_environment() -> None:
    """Switch Selenium Manager off for this process (it is never needed: the service names the driver)."""
    os.environ["SE_OFFLINE"] = "true"
    os.environ.setdefault("SE_AVOID_STATS", "true")


def chrome_options(user_data_dir: str, width: int, height: int) -> Any:
    """Chrome options: Debian's binary, headless flags, a private profile, no downloads."""
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={user_data_dir}")
    options.add_argument(f"--window-size={width},{height}")
    return options


def make_chrome(width: int, height: int) -> tuple[Any, str]:
    """A new offline headless Chrome driver and its (fresh, temporary) profile directory."""
    require_gui()
    offline_environment()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="rsi-gui-chrome-")
    try:
        driver = webdriver.Chrome(
            service=Service(CHROMEDRIVER), options=chrome_options(profile, width, height)
        )
    except Exception as err:
        shutil.rmtree(profile, ignore_errors=True)
        raise BrowserFailure(f"chromium did not start: {err}") from err
    return driver, profile


def process_tree(pid: int) -> list[int]:
    """``pid`` and all its descendants (chromedriver → chromium → renderers), parents first."""
    import psutil

    try:
        root = psutil.Process(pid)
        return [pid] + [p.pid for p in root.children(recursive=True)]
    except psutil.Error:
        return []


def kill_tree(pids: list[int]) -> None:
    """SIGKILL every pid given (already-dead ones are ignored)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


@functools.cache
def instance_class() -> type:
    """``miniwob``'s ``SeleniumInstance`` with an offline driver factory (built lazily: optional extra)."""
    require_gui()
    from miniwob.selenium_instance import SeleniumInstance
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.wait import WebDriverWait

    class OfflineSeleniumInstance(SeleniumInstance):  # type: ignore[misc, valid-type]
        """A MiniWoB++ page in Debian's headless Chromium; see the module docstring."""

        profile_dir: str = ""

        def create_driver(self) -> None:
            assert not hasattr(self, "driver"), f"instance {self.index} already has a driver"
            self.driver, self.profile_dir = make_chrome(self.window_width, self.window_height)
            try:
                self.driver.set_page_load_timeout(PAGE_LOAD_TIMEOUT_S)
                self.driver.get(self.url)
                WebDriverWait(self.driver, PAGE_LOAD_TIMEOUT_S).until(
                    EC.element_to_be_clickable((By.ID, self.SYNC_SCREEN_ID))
                )
                self.inner_width, self.inner_height = self.driver.execute_script(
                    "return [window.innerWidth, window.innerHeight];"
                )
            except Exception as err:
                self.kill()
                raise BrowserFailure(f"the task page {self.url} did not load: {err}") from err

        def pids(self) -> list[int]:
            """chromedriver's pid and every process under it (Chromium and its children)."""
            proc = getattr(getattr(getattr(self, "driver", None), "service", None), "process", None)
            return process_tree(proc.pid) if proc is not None else []

        def kill(self) -> None:
            """Tear the browser down hard (SIGKILL the tree, then let Selenium clean up what is left)."""
            kill_tree(self.pids())
            driver = getattr(self, "driver", None)
            if driver is not None:
                try:
                    driver.service.stop()
                except Exception:
                    pass
            if self.profile_dir:
                shutil.rmtree(self.profile_dir, ignore_errors=True)
            self.died = True

        def close(self) -> None:
            try:
                self.driver.quit()
            except Exception:
                pass
            self.kill()

    return OfflineSeleniumInstance
