"""Capability probing of OpenAI-compatible servers: a config needing what the server (or this client)
cannot do is refused before any run exists, naming the server and the model. The servers here are
test doubles (``CapabilityServerDouble``) except the last test, a real ``transformers serve``."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rsi_workbench.models import ModelConfig, ModelError, Unsupported
from rsi_workbench.models.probe import probe_server, require


class CapabilityServerDouble:
    """Test double for an OpenAI-compatible server with chosen capabilities: which models ``/models``
    lists (None: no ``/models``), whether ``/completions`` exists and whether it honours ``echo`` with
    ``logprobs`` (else 400), whether chat exists."""

    def __init__(self, models=("m",), *, completions=True, echo=True, chat=True):
        self.seen: list[tuple[str, str, dict]] = []
        double = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                double.seen.append(("GET", self.path, {}))
                if self.path == "/v1/models" and models is not None:
                    return self._send(200, {"object": "list", "data": [{"id": m} for m in models]})
                self._send(404, {"detail": "Not Found"})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                double.seen.append(("POST", self.path, body))
                if self.path == "/v1/completions" and completions:
                    if body.get("echo") and not echo:
                        return self._send(400, {"error": {"message": "echo is not supported"}})
                    choice = {"index": 0, "text": body["prompt"] + " x", "finish_reason": "length"}
                    if body.get("echo"):
                        choice["logprobs"] = {
                            "tokens": ["Hello", ",", " world", " x"],
                            "token_logprobs": [None, -1.5, -2.0, -0.7],
                        }
                    return self._send(200, {"model": body["model"], "choices": [choice]})
                if self.path == "/v1/chat/completions" and chat:
                    msg = {"role": "assistant", "content": "ok"}
                    return self._send(
                        200, {"choices": [{"index": 0, "message": msg, "finish_reason": "length"}]}
                    )
                self._send(404, {"detail": "Not Found"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def server():
    made = []

    def make(**kw):
        s = CapabilityServerDouble(**kw)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


def _cfg(url, name="m", **kw):
    return ModelConfig(backend="openai", base_url=url, name=name, **kw)


def test_probe_of_a_full_server(server):
    s = server()
    p = probe_server(_cfg(s.base_url), cache=False)
    assert (p.listed, p.chat, p.complete, p.prompt_logprobs) == (True, True, True, True)
    assert p.capabilities == {"chat", "complete"}
    require(_cfg(s.base_url), {"chat", "complete"}, probe=p)
    probe_reqs = [b for m, path, b in s.seen if path == "/v1/completions"]
    assert probe_reqs[0]["max_tokens"] == 1 and probe_reqs[0]["echo"] and probe_reqs[0]["logprobs"] == 1
    # scoring: the server returns prompt log-probabilities, but this client does not score over HTTP
    with pytest.raises(
        Unsupported, match=r"roles\.lead\.model: needs score, but .*127\.0\.0\.1.* \(model 'm'\)"
    ):
        require(_cfg(s.base_url), {"score"}, where="roles.lead.model", probe=p)


def test_a_chat_only_server_is_refused_for_completion_naming_server_and_model(server):
    s = server(completions=False)
    p = probe_server(_cfg(s.base_url), cache=False)
    assert (p.chat, p.complete, p.prompt_logprobs) == (True, False, False)
    with pytest.raises(
        Unsupported, match=r"(?s)needs complete, but http://127\.0\.0\.1:\d+/v1 \(model 'm'\).*HTTP 404"
    ):
        require(_cfg(s.base_url), {"complete"}, probe=p)
    require(_cfg(s.base_url), {"chat"}, probe=p)


def test_a_server_refusing_echo_still_completes(server):
    s = server(echo=False, models=None)
    p = probe_server(_cfg(s.base_url), cache=False)
    assert (p.listed, p.complete, p.prompt_logprobs) == (None, True, False)
    assert "echo is not supported" in p.why["prompt_logprobs"]


def test_a_model_the_server_does_not_list_is_an_error(server):
    s = server(models=("other-a", "other-b"))
    with pytest.raises(ModelError, match=r"does not serve model 'm'.*other-a"):
        probe_server(_cfg(s.base_url), cache=False)


def test_an_unreachable_server_is_an_error_with_credentials_redacted():
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://user:hunter2@127.0.0.1:{port}/v1"
    with pytest.raises(ModelError, match=r"cannot reach http://\*\*\*@127") as e:
        probe_server(_cfg(url), cache=False)
    assert "hunter2" not in str(e.value)


def test_campaign_refuses_a_lead_on_a_server_before_the_run_exists(server, tmp_path):
    from rsi_workbench.config import validate_config
    from rsi_workbench.experiments.discovery import campaign

    s = server()
    data = {
        "experiment": "discovery",
        "episodes": 1,
        "directions": ["sklearn-diabetes/progression"],
        "roles": {"lead": {"model": {"backend": "openai", "base_url": s.base_url, "name": "m"}}},
    }
    cfg = validate_config(data, campaign.Config)
    out = tmp_path / "refused"
    with pytest.raises(
        Unsupported, match=r"roles\.lead\.model: needs score, but http://127\.0\.0\.1:\d+/v1 \(model 'm'\)"
    ):
        campaign.run_campaign(cfg, out, progress=False)
    assert not out.exists()


def test_campaign_with_a_chat_role_on_a_server_records_the_probe_and_the_calls(server, tmp_path):
    from rsi_workbench.config import validate_config
    from rsi_workbench.discovery.records import load_records
    from rsi_workbench.experiments.discovery import campaign
    from rsi_workbench.records import Run

    s = server()
    data = {
        "experiment": "discovery",
        "episodes": 1,
        "noise_control": False,
        "directions": ["sklearn-diabetes/progression"],
        "n_bootstrap": 100,
        "outer_folds": 3,
        "roles": {
            "generation": {
                "model": {"backend": "openai", "base_url": s.base_url, "name": "m"},
                "max_tokens": 4,
            }
        },
    }
    out = campaign.run_campaign(validate_config(data, campaign.Config), tmp_path / "chat", progress=False)
    run = Run.open(out)
    probe = run.events("model_probe")[0].payload["roles"]["generation"]
    assert probe["chat"] and probe["complete"] and probe["listed"]
    calls = [e.payload for e in run.events("model_call")]
    assert [(c["role"], c["call"], c["model"]) for c in calls] == [("generation", "chat", "m")]
    assert calls[0]["params"]["max_tokens"] == 4
    recs = load_records(out)
    assert recs.hypotheses == []  # "ok" is not a (c, π, d, a) object: a failed turn, never a node
    assert any(
        t.failed and t.model == "llm-generation:openai:m" for t in recs.turns if t.role == "generation"
    )


@pytest.mark.slow
def test_probe_of_a_real_transformers_serve(serve_url):
    base, model_id = serve_url
    p = probe_server(_cfg(base, name=model_id), cache=False)
    # seen with transformers 5.x: it lists the model, chats and completes, and ignores echo/logprobs
    assert (p.listed, p.chat, p.complete) == (True, True, True), p.why
    require(_cfg(base, name=model_id), {"chat", "complete"}, probe=p)
    with pytest.raises(Unsupported, match="needs score"):
        require(_cfg(base, name=model_id), {"score"}, probe=p)


def test_models_probe_command(server, capsys):
    from rsi_workbench.cli import main

    s = server(completions=False)
    assert main(["models", "probe", "--base-url", s.base_url, "--model", "m"]) == 0
    out = capsys.readouterr().out
    assert "listed yes, chat yes, completions no" in out and "complete: HTTP 404" in out
    assert main(["models", "probe", "--base-url", s.base_url, "--model", "nope"]) == 2
    assert "does not serve model 'nope'" in capsys.readouterr().err
