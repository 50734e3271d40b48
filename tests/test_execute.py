"""The executor seam: serial and process-pool backends return the same results to the driver."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rsi_workbench.execute import ExecutorConfig, ProcessExecutor, SerialExecutor, make_executor


def square(x: int) -> int:
    return x * x


def boom(x: int) -> int:
    raise ValueError(f"bad {x}")


@pytest.mark.parametrize("kind,workers", [("serial", None), ("process", 2)])
def test_map_and_submit(kind: str, workers: int | None) -> None:
    with make_executor(kind, workers) as ex:  # type: ignore[arg-type]
        assert list(ex.map(square, range(6))) == [0, 1, 4, 9, 16, 25]
        assert ex.submit(square, 7).result() == 49
        with pytest.raises(ValueError, match="bad 3"):
            ex.submit(boom, 3).result()


def test_make_executor_kinds() -> None:
    assert isinstance(make_executor("serial"), SerialExecutor)
    assert isinstance(make_executor("process", 1), SerialExecutor)
    ex = make_executor("process", 2)
    assert isinstance(ex, ProcessExecutor) and ex.workers == 2
    ex.shutdown()
    with pytest.raises(ValueError, match="allowed"):
        make_executor("gpu")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# the executor block and the older config shapes it replaces
# ---------------------------------------------------------------------------------------------
def test_executor_block_and_old_shapes() -> None:
    from pydantic import ValidationError

    from rsi_workbench.execute import ExecutorConfig, omit_unset_executor, resolve_executor

    assert resolve_executor("process", 2) == ExecutorConfig(kind="process", workers=2)
    assert resolve_executor(ExecutorConfig(kind="ray"), 3).workers == 3  # unset workers fall back
    assert resolve_executor(ExecutorConfig(kind="ray", workers=1), 3).workers == 1
    for addr in (None, "auto", "ray://head:10001", "10.0.0.1:6379"):
        assert ExecutorConfig(kind="ray", address=addr).address == addr
    with pytest.raises(ValidationError, match="allowed null"):
        ExecutorConfig(kind="ray", address="http://x")
    with pytest.raises(ValidationError, match="kind 'ray' only"):
        ExecutorConfig(kind="process", num_gpus=1)
    with pytest.raises(ValidationError):
        ExecutorConfig(kind="ray", cpus=2)  # type: ignore[call-arg]
    assert omit_unset_executor({"a": 1, "executor": None}) == {"a": 1}
    assert omit_unset_executor({"executor": "process"}) == {"executor": "process"}


def test_experiment_configs_map_old_shapes() -> None:
    """Old shapes validate, mean what they meant, and dump exactly as before (old runs resume)."""
    from rsi_workbench.execute import ExecutorConfig, resolve_executor
    from rsi_workbench.experiments.code_repair import Config as CodeRepair
    from rsi_workbench.experiments.code_repair.experiment import executor_spec
    from rsi_workbench.experiments.discovery.campaign import Config as Discovery
    from rsi_workbench.experiments.dreaming.config import Config as Dreaming
    from rsi_workbench.experiments.reactions.experiment import Config as Reactions

    d = Dreaming.model_validate({"executor": "process", "workers": 3})
    assert resolve_executor(d.executor, d.workers) == ExecutorConfig(kind="process", workers=3)
    assert d.model_dump(mode="json")["executor"] == "process"
    d = Dreaming.model_validate({"executor": {"kind": "ray", "num_cpus": 1}, "workers": 2})
    assert resolve_executor(d.executor, d.workers) == ExecutorConfig(kind="ray", workers=2, num_cpus=1)
    assert Dreaming.model_validate(d.model_dump(mode="json")) == d

    c = CodeRepair.model_validate({"sandbox": {"workers": 2}})
    assert "executor" not in c.model_dump(mode="json")  # the stored config.json is unchanged
    assert executor_spec(c) == ExecutorConfig(kind="process", workers=2)
    assert executor_spec(CodeRepair()) == ExecutorConfig(kind="serial", workers=1)
    c = CodeRepair.model_validate({"sandbox": {"workers": 2}, "executor": {"kind": "ray"}})
    assert executor_spec(c) == ExecutorConfig(kind="ray", workers=2)
    assert c.model_dump(mode="json")["executor"]["kind"] == "ray"
    assert CodeRepair.model_validate(c.model_dump(mode="json")) == c

    r = Reactions()
    assert "executor" not in r.model_dump(mode="json") and r.executor is None
    r = Reactions.model_validate({"executor": {"kind": "process", "workers": 2}})
    assert Reactions.model_validate(r.model_dump(mode="json")) == r

    g = Discovery.model_validate({"executor": "process", "workers": 2})
    assert g.model_dump(mode="json")["executor"] == "process"
    assert Discovery.model_validate({"executor": {"kind": "ray"}}).executor == ExecutorConfig(kind="ray")


class RayDouble:
    """A test double of the ``ray`` module: tasks run at once in this process, their errors come
    back from ``get``; it records the tasks submitted (to count chunks)."""

    def __init__(self) -> None:
        self.tasks: list[tuple[Any, ...]] = []

    def is_initialized(self) -> bool:
        return True

    def cluster_resources(self) -> dict[str, float]:
        return {"CPU": 2.0}

    def remote(self, body: Any) -> Any:
        double = self

        class Remote:
            def options(self, **kw: Any) -> Any:
                return self

            def remote(self, *args: Any) -> Any:
                double.tasks.append(args)
                try:
                    return ("ok", body(*args))
                except BaseException as e:  # noqa: BLE001 - delivered by get, like Ray
                    return ("err", e)

        return Remote()

    def put(self, x: Any) -> Any:
        return x

    def get(self, ref: Any) -> Any:
        if ref[0] == "err":
            raise ref[1]
        return ref[1]

    def cancel(self, ref: Any) -> None:
        return None


def fail_at_7(x: int) -> int:
    if x == 7:
        raise ValueError("seven")
    return x * 10


def test_ray_map_chunks_items_keeps_order_and_names_the_failed_item(monkeypatch: pytest.MonkeyPatch) -> None:
    """Many items go out as ~4 chunks per worker (one Ray task each), results in item order; a
    failed item is named and the items before it are still yielded; few items: one task each."""
    from rsi_workbench.execute import ray_backend

    ray = RayDouble()
    monkeypatch.setattr(ray_backend, "import_ray", lambda address=None: ray)
    ex = ray_backend.RayExecutor(ExecutorConfig(kind="ray"))
    assert list(ex.map(square, range(40))) == [x * x for x in range(40)]
    assert len(ray.tasks) == 8 and [len(t[1]) for t in ray.tasks] == [5] * 8  # 40 items / (4 × 2)
    ray.tasks.clear()
    assert list(ex.map(square, range(5))) == [0, 1, 4, 9, 16] and len(ray.tasks) == 5
    ray.tasks.clear()
    assert list(ex.map(square, range(10), chunksize=3)) == [x * x for x in range(10)]
    assert [len(t[1]) for t in ray.tasks] == [3, 3, 3, 1]
    got: list[int] = []
    with pytest.raises(ValueError, match="seven") as info:
        got.extend(ex.map(fail_at_7, range(20), chunksize=3))
    assert got == [0, 10, 20, 30, 40, 50, 60]  # items before the failed one, in order
    assert any("item 7 of map" in n for n in info.value.__notes__)


@pytest.mark.ray
def test_ray_unreachable_address_is_a_clear_error() -> None:
    pytest.importorskip("ray", reason="the ray extra is not installed")
    with pytest.raises(ConnectionError, match="127.0.0.1:1"):
        make_executor(ExecutorConfig(kind="ray", address="127.0.0.1:1"))


# ---------------------------------------------------------------------------------------------
# Ray: the session's local instance (tests/conftest.py), this module's functions pickled by value
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def local_ray(local_ray: Any) -> Iterator[Any]:
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # this test module is not importable there
    yield local_ray
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


@pytest.mark.slow
@pytest.mark.ray
def test_ray_map_equals_serial(local_ray: Any) -> None:
    from rsi_workbench.execute import RayExecutor

    items = list(range(20))
    with make_executor("ray") as ex:
        assert isinstance(ex, RayExecutor) and ex.workers == 2
        assert list(ex.map(square, items)) == list(make_executor("serial").map(square, items))
        assert ex.submit(square, 7).result() == 49
    assert local_ray.is_initialized()  # an instance the executor did not start is left running


def sleepy_identity(x: int) -> int:
    time.sleep(0.05 * (5 - x))  # the first items finish last
    return x


@pytest.mark.slow
@pytest.mark.ray
def test_ray_results_keep_order(local_ray: Any) -> None:
    with make_executor(ExecutorConfig(kind="ray", num_cpus=0.5)) as ex:
        assert list(ex.map(sleepy_identity, range(6))) == list(range(6))
        futs = [ex.submit(sleepy_identity, i) for i in range(4)]
        assert [f.result() for f in futs] == [0, 1, 2, 3]


@pytest.mark.slow
@pytest.mark.ray
def test_ray_worker_exception_names_the_task(local_ray: Any) -> None:
    with make_executor("ray") as ex:
        with pytest.raises(ValueError, match="bad 3") as info:
            list(ex.map(boom, [3, 4]))
        assert "boom" in str(info.value) or any("boom" in n for n in info.value.__notes__)
        assert any("item 0 of map" in n for n in info.value.__notes__)
        with pytest.raises(ValueError, match="bad 5") as info:
            ex.submit(boom, 5).result()
        assert any("test_execute.boom" in n for n in info.value.__notes__)


def test_ray_client_without_grpc_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ray", reason="the ray extra is not installed")
    from rsi_workbench.execute.ray_backend import import_ray

    monkeypatch.setitem(sys.modules, "grpc", None)  # as if ray[client] were missing
    with pytest.raises(ImportError, match=r"ray\[client\]"):
        import_ray("ray://head:10001")


def test_missing_ray_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from rsi_workbench.execute.ray_backend import import_ray

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ImportError, match=r"rsi-workbench\[ray\]"):
        import_ray(None)


def _reactions_cohort_logs(tmp_path: Path, pool: dict[str, Any]) -> list[list[dict[str, Any]]]:
    from rsi_workbench.experiments.reactions.experiment import Config, run_experiment
    from rsi_workbench.records import log_bytes

    base = {"grids": ["perera2018-suzuki"], "methods": ["random", "gp_ei"], "runs": 2, "cohort_size": 1}
    base |= {"n_initial": 3, "n_total": 5, "report_at": [5], "bootstrap": 100, "bo": {"fit_steps": 5}}
    logs = []
    for name, extra in (("inline", {}), ("pool", {"executor": pool})):
        out = run_experiment(Config.model_validate(base | extra), tmp_path / name)
        evs = [json.loads(line) for line in log_bytes(out / "events.jsonl").splitlines()]  # compacted
        for e in evs:
            e.pop("time", None)
            e["payload"].pop("wall_s", None)
            e["payload"].pop("pid", None)
        logs.append(evs)
    return logs


@pytest.mark.slow
def test_reactions_baseline_cohorts_fan_out_with_the_same_events(tmp_path: Path) -> None:
    """Baseline cohorts run ahead on a pool return the events the driver appends in the same order."""
    logs = _reactions_cohort_logs(tmp_path, {"kind": "process", "workers": 2})
    assert logs[0] == logs[1] and len(logs[0]) > 10


@pytest.mark.slow
@pytest.mark.ray
def test_reactions_baseline_cohorts_on_ray_append_the_same_events(local_ray: Any, tmp_path: Path) -> None:
    logs = _reactions_cohort_logs(tmp_path, {"kind": "ray"})
    assert logs[0] == logs[1] and len(logs[0]) > 10
