"""A model coder's calls are shared by the methods of a seed (one writer), so the Ray fan-out refuses it."""

import pytest
from pydantic import ValidationError

from rsi_workbench.experiments.code_repair.experiment import Config


def test_model_coder_on_ray_is_a_clear_config_error() -> None:
    with pytest.raises(ValidationError, match="executor.kind ray with coder.kind llm"):
        Config.model_validate({"executor": {"kind": "ray"}, "coder": {"kind": "llm"}})


@pytest.mark.parametrize("executor", [{"kind": "process"}, {"kind": "serial"}, None])
def test_model_coder_elsewhere_and_mutation_on_ray_validate(executor: dict | None) -> None:
    Config.model_validate({"executor": executor, "coder": {"kind": "hybrid"}})
    Config.model_validate({"executor": {"kind": "ray"}, "coder": {"kind": "mutation"}})
