"""A pool of browsers, one per worker, that plays episodes and survives browser crashes and hangs.

A browser fault (crash, hang past the wall clock, failed start) is the infrastructure's, never the
policy's: the browser is replaced and the same episode (same seed) is played again, at most
``max_retries`` times; after that the episode is reported with ``outcome="infra_failure"`` and no
reward, so a table can leave it out instead of counting it as a policy failure.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from .browser import BrowserFailure
from .env import GuiEnv
from .episode import EpisodeLimits, EpisodeResult, GuiPolicy, play_episode
from .tasks import resolve_task


class BrowserPool:
    """``size`` browsers on one MiniWoB++ task; :meth:`run` plays seeds across them (one thread each)."""

    def __init__(
        self,
        task: str,
        size: int = 1,
        *,
        limits: EpisodeLimits = EpisodeLimits(),
        max_retries: int = 2,
        screenshots: bool = False,
    ) -> None:
        if size < 1:
            raise ValueError("a browser pool needs at least one browser")
        self.task = resolve_task(task)
        self.limits = limits
        self.max_retries = max_retries
        self.screenshots = screenshots
        self.envs: list[GuiEnv] = [self._new_env() for _ in range(size)]
        self.replacements = 0  # browsers replaced after a crash or hang
        self._lock = threading.Lock()

    def _new_env(self) -> GuiEnv:
        return GuiEnv(self.task, screenshots=self.screenshots, page_timer_s=self.limits.page_timer_s)

    def start(self) -> BrowserPool:
        """Start every browser (in parallel); a browser that fails to start is retried at its first episode."""
        with ThreadPoolExecutor(len(self.envs)) as ex:
            for fut in [ex.submit(env.start) for env in self.envs]:
                try:
                    fut.result()
                except BrowserFailure:
                    pass
        return self

    def close(self) -> None:
        for env in self.envs:
            env.close()

    def __enter__(self) -> BrowserPool:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _replace(self, slot: int) -> None:
        old = self.envs[slot]
        old.kill()
        old.close()
        self.envs[slot] = self._new_env()
        with self._lock:
            self.replacements += 1

    def play(self, slot: int, policy: GuiPolicy, seed: int) -> EpisodeResult:
        """One episode on browser ``slot``, retried on a fresh browser after a browser fault."""
        errors: list[str] = []
        for attempt in range(1, self.max_retries + 2):
            try:
                self.envs[slot].start()
                result = play_episode(self.envs[slot], policy, seed, self.limits)
                return replace(result, attempts=attempt, infra_errors=errors)
            except BrowserFailure as err:
                errors.append(f"attempt {attempt}: {err}")
                self._replace(slot)
        return EpisodeResult(
            task=self.task, seed=seed, outcome="infra_failure", attempts=len(errors), infra_errors=errors
        )

    def run(
        self,
        policy: GuiPolicy,
        seeds: Sequence[int],
        on_result: Callable[[EpisodeResult], None] | None = None,
    ) -> list[EpisodeResult]:
        """Play every seed once, spread over the browsers; results come back in seed order.

        ``on_result`` is called as each episode finishes, in completion order, one call at a time
        (under a lock, possibly from a worker thread) — e.g. to append it to a run's event log.
        """
        results: list[EpisodeResult | None] = [None] * len(seeds)
        lock = threading.Lock()

        def record(i: int, res: EpisodeResult) -> None:
            with lock:
                results[i] = res
                if on_result is not None:
                    on_result(res)

        if len(self.envs) == 1:
            for i, seed in enumerate(seeds):
                record(i, self.play(0, policy, seed))
        else:
            work: queue.SimpleQueue[tuple[int, int]] = queue.SimpleQueue()
            for item in enumerate(seeds):
                work.put(item)

            def worker(slot: int) -> None:
                while True:
                    try:
                        i, seed = work.get_nowait()
                    except queue.Empty:
                        return
                    record(i, self.play(slot, policy, seed))

            with ThreadPoolExecutor(len(self.envs)) as ex:
                for fut in [ex.submit(worker, slot) for slot in range(len(self.envs))]:
                    fut.result()
        return [r for r in results if r is not None]
