"""``rsi-workbench models list|prepare|chat|serve``."""

from __future__ import annotations

import pytest

from rsi_workbench.cli import main


def test_models_list_names_the_directory_and_default(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RSI_WORKBENCH_MODELS", str(tmp_path))
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    assert f"models directory: {tmp_path}" in out and "default" in out and "not prepared" in out


def test_models_chat_local_checkpoint(tiny_checkpoint, capsys):
    pytest.importorskip("transformers")
    assert main(["models", "chat", "--model", str(tiny_checkpoint), "--max-tokens", "3", "hi"]) == 0
    err = capsys.readouterr().err
    assert "3 completion tokens" in err and "transformers:" in err


def test_models_chat_http(faulty_server, capsys):
    srv = faulty_server()
    assert main(["models", "chat", "--base-url", srv.base_url, "--model", "m1", "what?"]) == 0
    cap = capsys.readouterr()
    assert cap.out.strip() == "echo: what?" and "7 prompt + 3 completion tokens" in cap.err


def test_models_chat_unknown_model_is_a_clear_error(capsys):
    assert main(["models", "chat", "--model", "no/such/model", "hi"]) == 2
    assert "neither an alias" in capsys.readouterr().err


def test_models_serve_runs_transformers_serve_on_loopback(tiny_checkpoint, capsys):
    assert main(["models", "serve", "--model", str(tiny_checkpoint), "--port", "8123", "--dry-run"]) == 0
    cmd = capsys.readouterr().out.split()
    assert cmd[1:3] == ["serve", str(tiny_checkpoint)] and cmd[cmd.index("--host") + 1] == "127.0.0.1"
    assert cmd[cmd.index("--port") + 1] == "8123"
