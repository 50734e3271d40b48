"""A model coder under the Ray fan-out: validated, run by seed groups (one writer per seed's coder
record), and a GPU requested only where the config puts a heavy step on CUDA (no Ray started here)."""

from typing import Any

import pytest

from rsi_workbench.execute import ExecutorConfig
from rsi_workbench.experiments.code_repair.experiment import Config, executor_spec, wants_gpu
from rsi_workbench.experiments.code_repair.fanout import seed_groups


@pytest.mark.parametrize("executor", [{"kind": "ray"}, {"kind": "process"}, {"kind": "serial"}, None])
def test_model_coder_validates_on_every_executor(executor: dict | None) -> None:
    Config.model_validate({"executor": executor, "coder": {"kind": "hybrid"}})
    Config.model_validate({"executor": executor, "coder": {"kind": "llm"}})
    Config.model_validate({"executor": executor, "coder": {"kind": "mutation"}})


def test_seed_groups_keep_job_order() -> None:
    jobs = [("random_k", 0), ("world_fixed", 0), ("random_k", 2), ("world_fixed", 2), ("random_k", 1)]
    assert seed_groups(jobs) == [
        (0, ["random_k", "world_fixed"]),
        (2, ["random_k", "world_fixed"]),
        (1, ["random_k"]),
    ]


def _spec(**cfg: Any) -> ExecutorConfig:
    return executor_spec(Config.model_validate(cfg))


def test_a_gpu_is_requested_only_when_the_config_names_cuda() -> None:
    ray, cuda = {"kind": "ray"}, {"device": "cuda"}
    assert _spec(executor=ray, coder={"kind": "llm"}).num_gpus is None  # device auto: no request
    assert _spec(executor=ray, coder={"kind": "llm", "model": cuda}).num_gpus == 1
    assert _spec(executor=ray, world={"device": "cuda"}).num_gpus == 1  # φ training on a GPU
    assert _spec(executor=ray | {"num_gpus": 0.5}, coder={"kind": "llm", "model": cuda}).num_gpus == 0.5
    served = {"backend": "openai", "base_url": "http://gpu-node:8000/v1", "device": "cuda"}
    assert _spec(executor=ray, coder={"kind": "llm", "model": served}).num_gpus is None  # the server's GPU
    assert _spec(executor=ray, coder={"kind": "mutation", "model": cuda}).num_gpus is None  # no model used
    # other executors take no Ray options at all
    assert _spec(executor={"kind": "process"}, coder={"kind": "llm", "model": cuda}).num_gpus is None
    assert wants_gpu(Config.model_validate({"coder": {"kind": "hybrid", "model": cuda}}))


def test_a_gpu_request_the_cluster_cannot_meet_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from rsi_workbench.execute import ray_backend

    class RayWithoutGPUDouble:
        """Test double of the ``ray`` module: a running CPU-only cluster; submitting is a failure."""

        def is_initialized(self) -> bool:
            return True

        def cluster_resources(self) -> dict[str, float]:
            return {"CPU": 2.0}

        def remote(self, fn: Any) -> Any:
            raise AssertionError("no task may be submitted")

    monkeypatch.setattr(ray_backend, "import_ray", lambda address=None: RayWithoutGPUDouble())
    ex = ray_backend.RayExecutor(ExecutorConfig(kind="ray", num_gpus=1))
    with pytest.raises(RuntimeError, match=r"num_gpus=1 but the Ray cluster at '\(local instance\)' has 0"):
        list(ex.run_tasks(pow, [(2, 3)]))
