"""A MiniWoB++ task in one offline headless browser, driven only by validated plain-data actions.

The host owns the driver: :meth:`GuiEnv.observe` hands out a :class:`GuiObservation` (plain data),
:meth:`GuiEnv.apply` takes an action already checked by :func:`parse_action`, and only
:meth:`GuiEnv.final_reward` — called by the episode runner after the episode — reads the page's
reward. Every Selenium or connection error surfaces as :class:`BrowserFailure` (infrastructure).
"""

from __future__ import annotations

import contextlib
import io
import threading
from collections.abc import Iterator
from typing import Any

from .actions import Click, Key, Submit, TypeText, submit_ref
from .browser import BrowserFailure, instance_class, require_gui
from .observation import GuiObservation, flatten_dom
from .tasks import resolve_task


class GuiEnv:
    """One browser on one task page; ``reset(seed)`` starts a seeded episode on the same page.

    ``screenshots`` adds a PNG of the task area to every observation (off by default: it costs
    a capture per step); ``reload_every`` reloads the page every N episodes (0: never);
    ``page_timer_s`` replaces the page's own episode timer (MiniWoB++'s 10 s, after which the page
    ends the episode with reward -1; it also scales the time-discounted reward, never the raw one).
    """

    def __init__(
        self,
        task: str,
        *,
        screenshots: bool = False,
        reload_every: int = 0,
        page_timer_s: float | None = None,
    ) -> None:
        self.task = resolve_task(task)
        self.screenshots = screenshots
        self.reload_every = reload_every
        self.page_timer_s = page_timer_s
        self.in_browser_call = False  # read by the episode watchdog: is a browser command in flight?
        self._lock = threading.Lock()
        self._instance: Any = None
        self._episodes = 0
        self._step = 0
        self._fields: tuple[tuple[str, str], ...] = ()

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> GuiEnv:
        """Start the browser and load the task page (idempotent)."""
        if self._instance is None:
            require_gui()
            inst = instance_class()(index=0, subdomain=self.task, headless=True)
            inst.record_screenshots = False
            with self._browser():
                inst.create_driver()
                self._set_page_timer(inst.driver)
            self._instance = inst
        return self

    def close(self) -> None:
        inst, self._instance = self._instance, None
        if inst is not None:
            inst.close()

    def kill(self) -> None:
        """SIGKILL the browser's processes (a hung browser is replaced this way)."""
        inst = self._instance
        if inst is not None:
            inst.kill()

    def pids(self) -> list[int]:
        """chromedriver's pid followed by the pids of Chromium's processes."""
        return self._instance.pids() if self._instance is not None else []

    def __enter__(self) -> GuiEnv:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _browser(self) -> Iterator[None]:
        """Mark a browser command in flight; turn any driver/connection error into BrowserFailure."""
        self.in_browser_call = True
        try:
            yield
        except BrowserFailure:
            raise
        except Exception as err:
            from selenium.common.exceptions import WebDriverException

            if (
                isinstance(err, WebDriverException | OSError | ConnectionError)
                or "urllib3" in type(err).__module__
            ):
                raise BrowserFailure(
                    f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
                ) from err
            raise
        finally:
            self.in_browser_call = False

    @property
    def _driver(self) -> Any:
        if self._instance is None:
            raise BrowserFailure("the browser is not started (or was killed)")
        return self._instance.driver

    # -- episode -----------------------------------------------------------------------------
    def reset(self, seed: int) -> GuiObservation:
        """Start a fresh episode of the task generated from ``seed`` and observe it."""
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise TypeError(f"seed must be an int, not {type(seed).__name__}")
        self.start()
        self._episodes += 1
        self._step = 0
        with self._browser():
            inst = self._instance
            if self.reload_every and self._episodes % self.reload_every == 0:
                inst.driver.get(inst.url)
                self._set_page_timer(inst.driver)
            inst.force_stop()
            inst.begin_task(seed=seed)
            utterance = inst.driver.execute_script("return core.getUtterance();")
            if isinstance(utterance, dict):
                self._fields = tuple((str(k), str(v)) for k, v in utterance["fields"].items())
            else:
                self._fields = tuple((str(k), str(v)) for k, v in inst.field_extractor(utterance))
        return self.observe()

    def _set_page_timer(self, driver: Any) -> None:
        if self.page_timer_s is not None:
            driver.execute_script("core.EPISODE_MAX_TIME = arguments[0];", int(self.page_timer_s * 1000))

    def observe(self, actions_taken: tuple[dict[str, Any], ...] = ()) -> GuiObservation:
        """The current page as plain data (utterance, DOM elements with refs, optional screenshot)."""
        from miniwob.dom import DOMElement

        with self._browser():
            driver = self._driver
            response = driver.execute_script("return core.getUtterance();")
            utterance = response["utterance"] if isinstance(response, dict) else response
            root = DOMElement(driver.execute_script("return core.getDOMInfo();"))
            png = self._screenshot() if self.screenshots else None
        return GuiObservation(
            task=self.task,
            step=self._step,
            utterance=str(utterance),
            fields=self._fields,
            elements=flatten_dom(root),
            actions_taken=actions_taken,
            screenshot=png,
        )

    def _screenshot(self) -> bytes:
        from miniwob.screenshot import get_screenshot

        inst = self._instance
        img = get_screenshot(
            inst.driver,
            true_width=inst.inner_width,
            true_height=inst.inner_height,
            crop_width=inst.task_width,
            crop_height=inst.task_height,
        )
        buf = io.BytesIO()
        img.save(buf, format="PNG")
        return buf.getvalue()

    def apply(self, action: Click | TypeText | Key | Submit, obs: GuiObservation) -> bool:
        """Apply one validated action; return whether the page ended the episode."""
        from miniwob.selenium_actions import execute_press_key, execute_type_text

        with self._browser():
            driver = self._driver
            if isinstance(action, Click | TypeText):
                driver.execute_script("return core.elementClick(arguments[0]);", action.ref)
            if isinstance(action, TypeText):
                execute_type_text(action.text, driver)
            elif isinstance(action, Key):
                execute_press_key(action.key, driver)
            elif isinstance(action, Submit):
                driver.execute_script("return core.elementClick(arguments[0]);", submit_ref(obs))
            self._step += 1
            return bool(driver.execute_script("return WOB_DONE_GLOBAL;"))

    def final_reward(self) -> dict[str, Any]:
        """The page's verdict after the episode: raw reward (no time discount), discounted reward, reason.

        Host-only: the episode runner calls it once the policy has finished acting.
        """
        with self._browser():
            done, raw, env, reason = self._driver.execute_script(
                "return [WOB_DONE_GLOBAL, WOB_RAW_REWARD_GLOBAL, WOB_REWARD_GLOBAL, WOB_REWARD_REASON];"
            )
        return {"done": bool(done), "raw_reward": float(raw), "env_reward": float(env), "reason": reason}
