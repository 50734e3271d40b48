"""The models interface and the ``model:`` config block."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from rsi_workbench import agents, models
from rsi_workbench.models import ChatResult, Message, ModelConfig, redact_url
from rsi_workbench.models.interface import as_message, message_dict, request_key, sampling_params


def test_agents_llm_is_the_models_interface():
    assert agents.LLM is models.LLM and agents.Message is models.Message


def test_config_defaults_and_strictness():
    cfg = ModelConfig()
    assert (cfg.backend, cfg.name, cfg.device, cfg.dtype, cfg.replay) == (
        "transformers",
        "default",
        "auto",
        "auto",
        False,
    )
    with pytest.raises(ValidationError, match="extra"):
        ModelConfig(nmae="x")
    with pytest.raises(ValidationError):
        ModelConfig(backend="vllm")
    with pytest.raises(ValidationError):
        ModelConfig(dtype="fp16")
    with pytest.raises(ValidationError, match="base_url"):
        ModelConfig(backend="openai", name="m")
    with pytest.raises(ValidationError, match="only for backend 'openai'"):
        ModelConfig(base_url="http://127.0.0.1:1/v1")
    with pytest.raises(ValidationError):
        ModelConfig(backend="openai", name="m", base_url="http://x/v1", concurrency=0)


def test_base_url_credentials_are_redacted_in_dumps():
    url = "https://alice:s3cret@api.example.org/v1?api_key=k3y&region=eu"
    assert redact_url(url) == "https://***@api.example.org/v1?api_key=***&region=eu"
    cfg = ModelConfig(backend="openai", name="m", base_url=url, api_key_env="MY_KEY")
    dumped = cfg.model_dump_json()
    assert "s3cret" not in dumped and "k3y" not in dumped and "alice" not in dumped
    assert cfg.base_url == url  # the live object keeps it for the client


def test_messages_and_params():
    m = as_message({"role": "user", "content": "hi"})
    assert m == Message("user", "hi")
    call = message_dict(Message("assistant", "", tool_call={"name": "f", "arguments": {"x": 1}}))
    assert call["role"] == "assistant" and '"name": "f"' in call["content"]
    with pytest.raises(ValueError):
        as_message({"role": "robot", "content": ""})
    with pytest.raises(ValueError):
        sampling_params(0, 0.0, 1.0, 5, None)
    with pytest.raises(ValueError):
        sampling_params(1, 0.0, 0.0, 5, None)
    p = sampling_params(2, 0.7, 0.9, 5, ["\n"])
    k1 = request_key("chat", "b", "m", {"p": p}, 1)
    assert k1 == request_key("chat", "b", "m", {"p": dict(p)}, 1)
    assert k1 != request_key("chat", "b", "m", {"p": p}, 2)


def test_chat_result_views():
    r = ChatResult(["a", "b"], ["stop", "length"], 3, 4, 0.1, "x", "y")
    assert r.text == "a" and r.total_tokens == 7 and r.message(1) == Message("assistant", "b")
