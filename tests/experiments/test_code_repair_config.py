"""The code-repair config: each method sets its own selection rule, so ``methods`` beside a
non-default ``protocol.rule`` is refused (the default methods too); stored configs (the default rule dumped) still load."""

from __future__ import annotations

from pathlib import Path

import pytest

from rsi_workbench.config import ConfigError, load_config
from rsi_workbench.experiments.code_repair.config import Config, stored_config
from rsi_workbench.experiments.code_repair.runs import method_settings
from rsi_workbench.records import Run


def test_methods_with_a_non_default_rule_is_a_config_error(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("experiment: code_repair\nmethods: [random_k, world_fixed]\nprotocol: {rule: random_k}\n")
    with pytest.raises(ConfigError, match=r"protocol\.rule: 'random_k' with methods"):
        load_config(cfg, Config)


def test_the_default_rule_validates_and_a_rule_alone_is_refused(tmp_path: Path) -> None:
    both = Config.model_validate({"methods": ["random_k"], "protocol": {"rule": "utility_argmax"}})
    assert method_settings(both.protocol, "random_k").rule == "random_k"
    with pytest.raises(ValueError, match=r"protocol\.rule: 'info_gain' with methods"):  # default methods
        Config.model_validate({"protocol": {"rule": "info_gain"}})
    dumped = Config.model_validate({"methods": ["random_k", "info_gain"]}).model_dump(mode="json")
    assert dumped["protocol"]["rule"] == "utility_argmax" and dumped["methods"] == ["random_k", "info_gain"]
    Run.create(tmp_path / "exp", dumped, kind="code_repair_experiment").close()
    assert stored_config(tmp_path / "exp").methods == ["random_k", "info_gain"]  # resume/report load it
