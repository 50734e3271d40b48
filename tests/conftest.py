"""Shared test fixtures: the dataset mirror, skipping of gpu-marked tests without CUDA, and the xdist
groups that keep tests sharing a costly fixture on one worker."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
_default_mirror = REPO.parent / "shared" / "datasets"
if "RSI_WORKBENCH_DATA" not in os.environ and _default_mirror.exists():
    os.environ["RSI_WORKBENCH_DATA"] = str(_default_mirror)

ARTIFACTS = REPO / "tests" / "artifacts"  # screenshots and other test outputs worth looking at


def _has_cuda() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:
        return False


# Session fixtures too costly to build in every xdist worker: the tests using one share a group (one worker).
SHARED_SESSION_FIXTURES = {
    "local_ray": "ray",
    "serve_url": "transformers-serve",
    "checkbox_pool": "gui-pool",
    "rsiagent_run": "rsiagent-run",  # a browser run; its users wait on one build otherwise
}


def xdist_group_of(item: pytest.Item) -> str | None:
    """The xdist group of a test under ``make test`` (``-n 2 --dist loadgroup``): Ray tests (marked
    ``ray`` or using ``local_ray``) share one worker and its one Ray instance; tests of a costly
    shared session fixture share one worker; a module's tests that use a module-scoped fixture (a
    browser, a prepared run) stay together so it is built once. Others go to any worker."""
    info = getattr(item, "_fixtureinfo", None)
    names = set(getattr(info, "names_closure", ()))
    if "ray" in item.keywords or "local_ray" in names:
        return "ray"
    for name, group in SHARED_SESSION_FIXTURES.items():
        if name in names:
            return group
    defs = getattr(info, "name2fixturedefs", {})
    if any(d.scope == "module" for ds in defs.values() for d in ds):
        return item.nodeid.split("::", 1)[0]
    return None


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which turns the groups into node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        group = None if item.get_closest_marker("xdist_group") else xdist_group_of(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    if _has_cuda():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU on this machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


# -- real runs shared by the viz, notebook and browser tests (built once, cached in tests/artifacts/runs)
sys.path.insert(0, str(REPO / "tests" / "ui"))
import workbench_runs  # noqa: E402


@pytest.fixture(scope="session")
def code_repair_run() -> Path:
    """A real code-repair experiment (the protocol engine's tiny config; Random-K + adaptive world model)."""
    return workbench_runs.code_repair_experiment()


@pytest.fixture(scope="session")
def smoke_run() -> Path:
    """A real ``records_smoke`` run (tests/ui overrides it with a copy that tests may lock)."""
    return workbench_runs.records_smoke()


@pytest.fixture(scope="session")
def dreaming_run() -> Path:
    """A real dreaming experiment (the Dream-RSI engine's smoke config)."""
    return workbench_runs.dreaming_experiment()


@pytest.fixture(scope="session")
def discovery_run() -> Path:
    """A real DiscoveryRSI campaign (the engine's smoke config)."""
    return workbench_runs.discovery_campaign()


@pytest.fixture(scope="session")
def rsiagent_run() -> Path:
    """A real RSIAgent experiment on MiniWoB++ (``configs/rsiagent/smoke.yaml``, built-in roles, Chromium)."""
    import shutil

    pytest.importorskip("miniwob")
    pytest.importorskip("selenium")
    from rsi_workbench.domains.gui.browser import CHROMEDRIVER, CHROMIUM

    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        pytest.skip("Debian chromium + chromium-driver are not installed (make sysdeps)")
    return workbench_runs.rsiagent_experiment()


@pytest.fixture(scope="session")
def local_ray():  # type: ignore[no-untyped-def]
    """One local Ray instance for the whole session (its start costs tens of seconds here): 2 CPUs, no
    dashboard, a 200 MB object store (``/dev/shm`` is small in containers), usage stats off."""
    pytest.importorskip("ray", reason="the ray extra is not installed")
    from rsi_workbench.execute.ray_backend import import_ray, stop_own_ray_daemons

    ray = import_ray()  # with the executor's environment (usage stats off)
    for attempt in (1, 2, 3):  # on a loaded machine a local node's start can time out: retry
        try:
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=200 << 20)
            break
        except Exception:
            ray.shutdown()
            stop_own_ray_daemons()  # a failed start leaves its GCS and monitors running
            if attempt == 3:
                raise
    yield ray
    ray.shutdown()
