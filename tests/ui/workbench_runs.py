"""Real runs for the viz, browser and notebook tests, made once and shared through a cache.

Each builder runs an engine's own experiment on its smoke-sized config. The cache key hashes the
config and the engine's source, so a changed engine makes a fresh run; a file lock lets several
test modules (and sessions) share one copy.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / "tests" / "artifacts" / "runs"


def _source_hash(*dirs: str) -> str:
    h = hashlib.sha256()
    for d in dirs:
        files = [REPO / d] if (REPO / d).is_file() else sorted((REPO / d).rglob("*.py"))
        for f in files:
            h.update(f.read_bytes())
    return h.hexdigest()[:12]


def cached_run(
    name: str, config: dict[str, Any], build: Callable[[dict[str, Any], Path], Path], *sources: str
) -> Path:
    """``build(config, out)`` once per (config, engine source); later calls return the finished run."""
    from filelock import FileLock

    key = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:8] + _source_hash(*sources)
    out = CACHE / f"{name}-{key}"
    CACHE.mkdir(parents=True, exist_ok=True)
    with FileLock(str(out) + ".lock"):
        if not (out / ".complete").exists():
            import shutil

            shutil.rmtree(out, ignore_errors=True)
            build(config, out)
            (out / ".complete").write_text("ok\n")
    return out


def code_repair_experiment() -> Path:
    """The protocol engine's tiny code-repair config (6 HumanEvalFix tasks), on Random-K and the adaptive world model."""
    import yaml

    cfg = yaml.safe_load((REPO / "configs" / "code_repair" / "tiny_test.yaml").read_text())
    cfg["methods"] = ["random_k", "world_adaptive"]

    def build(c: dict[str, Any], out: Path) -> Path:
        from rsi_workbench.config import validate_config
        from rsi_workbench.experiments.code_repair import experiment

        return experiment.run_experiment(validate_config(c, experiment.Config, source="tiny_test.yaml"), out)

    return cached_run(
        "code_repair",
        cfg,
        build,
        "rsi_workbench/protocol",
        "rsi_workbench/domains/code_repair",
        "rsi_workbench/world",
    )


def records_smoke() -> Path:
    from rsi_workbench.experiments import records_smoke as smoke

    return cached_run(
        "records_smoke",
        {},
        lambda c, out: smoke.run_experiment(smoke.Config(), out),
        "rsi_workbench/records",
        "rsi_workbench/datasets.json",  # one cycle per registered dataset
    )


def dreaming_experiment() -> Path:
    """The Dream-RSI engine's smoke config (circle packing n=26, tiny budgets, dreaming vs independent roots)."""
    import yaml

    cfg = yaml.safe_load((REPO / "configs" / "dreaming" / "smoke.yaml").read_text())

    def build(c: dict[str, Any], out: Path) -> Path:
        from rsi_workbench.config import validate_config
        from rsi_workbench.experiments.dreaming import experiment

        return experiment.run_experiment(validate_config(c, experiment.Config, source="smoke.yaml"), out)

    return cached_run("dreaming", cfg, build, "rsi_workbench/replay", "rsi_workbench/domains/math")


def discovery_campaign() -> Path:
    """The DiscoveryRSI engine's smoke campaign (3 episodes on sklearn diabetes progression)."""
    import yaml

    cfg = yaml.safe_load((REPO / "configs" / "discovery" / "smoke.yaml").read_text())

    def build(c: dict[str, Any], out: Path) -> Path:
        from rsi_workbench.cli import experiment_module
        from rsi_workbench.config import validate_config

        mod = experiment_module(c["experiment"])
        return Path(
            mod.run_experiment(validate_config(c, mod.Config, source="smoke.yaml"), out, resume=False)
        )

    return cached_run("discovery", cfg, build, "rsi_workbench/discovery", "rsi_workbench/domains/tabular")


def rsiagent_experiment() -> Path:
    """RSIAgent on MiniWoB++ with the built-in roles (``configs/rsiagent/smoke.yaml``: one target, the
    no-RSI and full arms) in Debian's headless Chromium."""
    import yaml

    cfg = yaml.safe_load((REPO / "configs" / "rsiagent" / "smoke.yaml").read_text())

    def build(c: dict[str, Any], out: Path) -> Path:
        from rsi_workbench.config import validate_config
        from rsi_workbench.experiments.rsiagent import experiment

        return Path(
            experiment.run_experiment(validate_config(c, experiment.Config, source="smoke.yaml"), out)
        )

    return cached_run(
        "rsiagent",
        cfg,
        build,
        "rsi_workbench/memory",
        "rsi_workbench/experiments/rsiagent",
        "rsi_workbench/domains/gui",
    )
