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


def test_models_calls_lists_a_runs_calls_and_token_totals(tmp_path, capsys):
    from rsi_workbench.models import ChatResult, RecordedLLM
    from rsi_workbench.models.usage import call_rows, token_totals
    from rsi_workbench.records import Run

    class FixedLLMDouble:
        identity, name = "double:fixed", "fixed"

        def chat(self, messages, **kw):
            return ChatResult(["an answer"], ["stop"], 11, 4, 0.5, self.identity, self.name)

    run = Run.create(tmp_path / "run", {})
    RecordedLLM.wrap(FixedLLMDouble(), run=run, role="generation").chat([{"role": "user", "content": "q1"}])
    RecordedLLM.wrap(FixedLLMDouble(), run=run, role="critique").chat([{"role": "user", "content": "q2"}])
    run.close()
    rows = call_rows(Run.open(tmp_path / "run"), "critique")
    assert [(r["prompt"], r["samples"]) for r in rows] == [("q2", ["an answer"])]
    assert token_totals(Run.open(tmp_path / "run"))["all"]["prompt_tokens"] == 22
    assert main(["models", "calls", str(tmp_path / "run"), "--role", "generation"]) == 0
    out = capsys.readouterr().out
    assert "q1 → an answer" in out and "q2" not in out.splitlines()[1]
    assert "tokens all: 2 calls, 22 in + 8 out = 30, 1.0s" in out and "tokens critique: 1 calls" in out
