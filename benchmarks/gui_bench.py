"""GUI domain throughput: episodes/s and actions/s through ``rsi_workbench.domains.gui`` vs bare ``miniwob``.

For 1 and 2 browsers, side by side in one run, on click-checkboxes:
- ``domain``: ``BrowserPool(size=n).run(ClickCheckboxesPolicy(), seeds)`` — plain-data actions validated
  by the host, observation per step, watchdog per episode, raw reward read at the end (screenshots off);
- ``bare``: n ``gymnasium.make("miniwob/click-checkboxes-v1")`` environments (one thread each) stepping
  the same actions (``CLICK_ELEMENT`` on the refs the domain run clicked, then the submit button's ref),
  screenshots off, pointed at the same Debian chromium/chromedriver with Selenium offline.
Browser start-up is outside the timed region. Each variant runs ``--repeats`` times, alternating; the
best run is kept. ratio = domain episodes/s ÷ bare episodes/s (goal ≥ 0.8).
Usage: python benchmarks/gui_bench.py [--episodes 40] [--repeats 2]
"""

from __future__ import annotations

import argparse
import os
import platform
import threading
import time
from typing import Any

from rsi_workbench.domains.gui import BrowserPool, ClickCheckboxesPolicy
from rsi_workbench.domains.gui.browser import CHROMEDRIVER, CHROMIUM, offline_environment

TASK = "click-checkboxes"


def domain_run(
    pool: BrowserPool, seeds: list[int]
) -> tuple[float, int, int, dict[int, list[dict[str, Any]]]]:
    t0 = time.perf_counter()
    results = pool.run(ClickCheckboxesPolicy(), seeds)
    dt = time.perf_counter() - t0
    assert all(r.success for r in results), [r for r in results if not r.success]
    return dt, len(results), sum(len(r.actions) for r in results), {r.seed: r.actions for r in results}


def bare_envs(n: int) -> list[Any]:
    os.environ["MINIWOB_CHROME_BINARY"] = CHROMIUM
    os.environ["MINIWOB_CHROMEDRIVER"] = CHROMEDRIVER
    offline_environment()
    import gymnasium
    import miniwob

    gymnasium.register_envs(miniwob)
    return [gymnasium.make(f"miniwob/{TASK}-v1").unwrapped for _ in range(n)]


def bare_episode(env: Any, seed: int, script: list[dict[str, Any]]) -> tuple[int, float]:
    obs, _ = env.reset(seed=seed, options={"record_screenshots": False})
    reward, steps = 0.0, 0
    for a in script:
        if a["type"] == "submit":
            ref = next(e["ref"] for e in obs["dom_elements"] if e["id"] == "subbtn")
        else:
            ref = a["ref"]
        obs, reward, done, _, _ = env.step(env.create_action("CLICK_ELEMENT", ref=ref))
        steps += 1
        if done:
            break
    return steps, reward


def bare_run(
    envs: list[Any], seeds: list[int], scripts: dict[int, list[dict[str, Any]]]
) -> tuple[float, int, int]:
    counts = [0] * len(envs)
    rewards: list[float] = []

    def worker(k: int) -> None:
        for seed in seeds[k :: len(envs)]:
            steps, reward = bare_episode(envs[k], seed, scripts[seed])
            counts[k] += steps
            rewards.append(reward)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(len(envs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    dt = time.perf_counter() - t0
    assert len(rewards) == len(seeds) and all(r > 0 for r in rewards), rewards
    return dt, len(seeds), sum(counts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    seeds = list(range(args.episodes))
    print(f"# {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}, task {TASK}")
    print(f"# {args.episodes} episodes per run, best of {args.repeats} runs per variant, start-up excluded")
    rows = []
    for n in (1, 2):
        pool = BrowserPool(TASK, size=n).start()
        envs = bare_envs(n)
        try:
            _, _, _, scripts = domain_run(pool, seeds[: 2 * n])  # warm-up (and the scripts for the bare run)
            _, _, _, scripts = domain_run(pool, seeds)
            bare_run(envs, seeds[: 2 * n], scripts)
            best: dict[str, tuple[float, int, int]] = {}
            for _ in range(args.repeats):
                for variant in ("bare", "domain"):
                    if variant == "bare":
                        res = bare_run(envs, seeds, scripts)
                    else:
                        res = domain_run(pool, seeds)[:3]
                    if variant not in best or res[0] < best[variant][0]:
                        best[variant] = res
        finally:
            pool.close()
            for env in envs:
                env.close()
        bare_eps = best["bare"][1] / best["bare"][0]
        for variant in ("bare", "domain"):
            dt, eps, acts = best[variant]
            rows.append((n, variant, eps, acts, dt, eps / dt, acts / dt, (eps / dt) / bare_eps))
    print(
        f"{'browsers':>8} {'variant':<8} {'episodes':>8} {'actions':>8} {'seconds':>8} {'episodes/s':>10} {'actions/s':>10} {'ratio':>6}"
    )
    for n, variant, eps, acts, dt, eps_s, acts_s, ratio in rows:
        print(
            f"{n:>8} {variant:<8} {eps:>8} {acts:>8} {dt:>8.2f} {eps_s:>10.2f} {acts_s:>10.2f} {ratio:>6.2f}"
        )


if __name__ == "__main__":
    main()
