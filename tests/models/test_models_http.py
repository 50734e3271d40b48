"""The openai backend: retries with backoff on 429/5xx/connection errors, clear 4xx errors, the
circuit breaker, key handling and redaction (against FaultyServerDouble), and a real
``transformers serve`` serving the default model."""

from __future__ import annotations

import subprocess

import pytest

from rsi_workbench.models import ModelConfig, ModelError, RecordedLLM, Unsupported, open_model
from rsi_workbench.models.http import CircuitOpen, ModelRequestError, ModelUnavailable, OpenAILM
from rsi_workbench.records import Run

ASK = [{"role": "user", "content": "hello"}]


def _lm(url, sleeps, **kw):
    cfg = ModelConfig(backend="openai", name="m1", base_url=url, **kw)
    return OpenAILM(cfg, sleep=sleeps.append, backoff_s=0.5)


def test_429_and_500_back_off_then_succeed_and_n_is_emulated(faulty_server):
    srv = faulty_server([(429, {"error": {"message": "slow down"}}), (500, {"detail": "boom"})])
    sleeps: list[float] = []
    lm = _lm(srv.base_url, sleeps)
    r = lm.chat(ASK, n=3, seed=10, max_tokens=5)
    assert r.texts == ["echo: hello"] * 3 and r.completion_tokens == 9 and r.prompt_tokens == 7
    assert len(srv.requests) == 5 and lm.requests == 5  # 2 failures, then 1 + 2 emulated samples
    assert srv.requests[2]["n"] == 3 and sorted(q["seed"] for q in srv.requests[3:]) == [11, 12]
    assert 0.25 <= sleeps[0] <= 0.5 and 0.5 <= sleeps[1] <= 1.0  # exponential, with jitter
    assert r.backend == f"openai:{srv.base_url}" and r.meta["requests"] == 3


def test_400_is_not_retried_and_names_server_and_model(faulty_server):
    srv = faulty_server([(400, {"error": {"message": "max_tokens too large"}})])
    sleeps: list[float] = []
    with pytest.raises(ModelRequestError, match=r"127\.0\.0\.1.*'m1'.*HTTP 400: max_tokens too large"):
        _lm(srv.base_url, sleeps).chat(ASK)
    assert len(srv.requests) == 1 and sleeps == []


def test_dropped_connections_retry_then_fail_clearly_and_the_breaker_opens(faulty_server):
    srv = faulty_server(["drop"] * 6)
    sleeps: list[float] = []
    lm = OpenAILM(
        ModelConfig(backend="openai", name="m1", base_url=srv.base_url, max_retries=2),
        sleep=sleeps.append,
        breaker_failures=2,
    )
    for _ in range(2):
        with pytest.raises(ModelUnavailable, match=r"failed 3 attempts; last: connection error"):
            lm.chat(ASK)
    assert len(srv.requests) == 6 and len(sleeps) == 4
    with pytest.raises(CircuitOpen, match="failed 2 calls in a row; no request sent"):
        lm.chat(ASK)
    assert len(srv.requests) == 6
    with pytest.raises(Unsupported, match="does not score"):
        lm.score("a", ["b"])


def test_missing_key_fails_before_any_call_and_no_secret_reaches_the_run(
    faulty_server, tmp_path, monkeypatch
):
    srv = faulty_server()
    url = srv.base_url.replace("http://", "http://alice:pw-in-url-123@")
    cfg = ModelConfig(backend="openai", name="m1", base_url=url, api_key_env="RSI_TEST_MODEL_KEY")
    monkeypatch.delenv("RSI_TEST_MODEL_KEY", raising=False)
    with pytest.raises(ModelError, match="RSI_TEST_MODEL_KEY is not set"):
        open_model(cfg)
    assert srv.requests == []
    monkeypatch.setenv("RSI_TEST_MODEL_KEY", "sk-test-key-456")
    run = Run.create(tmp_path / "run", {"model": cfg.model_dump()})
    lm = open_model(cfg, run)
    assert lm.chat(ASK).text == "echo: hello"
    assert srv.headers[0]["Authorization"] == "Bearer sk-test-key-456"
    run.close()
    found = subprocess.run(
        ["grep", "-rl", "-e", "sk-test-key-456", "-e", "pw-in-url-123", str(tmp_path / "run")],
        capture_output=True,
    )
    assert found.stdout == b"" and found.returncode == 1
    assert "***@127.0.0.1" in (tmp_path / "run" / "config.json").read_text()


@pytest.mark.slow
def test_real_transformers_serve(serve_url, tmp_path):
    base, model_id = serve_url
    cfg = ModelConfig(backend="openai", name=model_id, base_url=base, concurrency=2, timeout_s=300)
    run = Run.create(tmp_path / "run", {})
    lm = RecordedLLM.wrap(OpenAILM(cfg), run=run)
    q = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]
    a, b = lm.chat_batch([q, [{"role": "user", "content": "Say hello."}]], n=2, max_tokens=8, seed=1)
    assert "Paris" in a.text and len(a.texts) == 2 and len(b.texts) == 2
    assert a.completion_tokens > 0 and a.prompt_tokens > 0
    assert len(run.events("model_call")) == 2


def test_batches_with_emulated_n_do_not_starve_the_pool(faulty_server):
    srv = faulty_server()
    lm = OpenAILM(ModelConfig(backend="openai", name="m1", base_url=srv.base_url, concurrency=2))
    out = lm.chat_batch([ASK, ASK, ASK], n=3)
    assert [len(r.texts) for r in out] == [3, 3, 3] and len(srv.requests) == 9


def test_plain_completion_over_http_emulates_n(faulty_server):
    srv = faulty_server()
    r = _lm(srv.base_url, []).complete("2+2=", n=2, max_tokens=1)
    assert r.texts == [" after 2+2="] * 2 and len(srv.requests) == 2 and srv.requests[0]["prompt"] == "2+2="


HANGING_SERVER_DOUBLE = r"""
import http.server, pathlib, sys, time
marker = pathlib.Path(sys.argv[1])
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        marker.write_text("got it")
        time.sleep(120)  # never answers: the test kills this process mid-request
srv = http.server.HTTPServer(("127.0.0.1", 0), H)
pathlib.Path(sys.argv[2]).write_text(str(srv.server_address[1]))
srv.serve_forever()
"""


def test_server_killed_mid_request_retries_then_fails_clearly(tmp_path):
    """A real server process (a test double that never answers) is killed while the request is in flight."""
    import sys
    import threading
    import time

    marker, port_file = tmp_path / "marker", tmp_path / "port"
    proc = subprocess.Popen([sys.executable, "-c", HANGING_SERVER_DOUBLE, str(marker), str(port_file)])
    try:
        for _ in range(400):  # bounded polling, no timing asserted
            if port_file.exists() and port_file.read_text():
                break
            time.sleep(0.05)
        url = f"http://127.0.0.1:{port_file.read_text()}/v1"
        sleeps: list[float] = []
        lm = OpenAILM(
            ModelConfig(backend="openai", name="m1", base_url=url, max_retries=2), sleep=sleeps.append
        )
        errors: list[BaseException] = []

        def call():
            try:
                lm.chat(ASK)
            except BaseException as e:  # noqa: BLE001 - handed to the main thread
                errors.append(e)

        t = threading.Thread(target=call)
        t.start()
        for _ in range(400):
            if marker.exists():
                break
            time.sleep(0.05)
        assert marker.exists(), "the request never reached the server"
        proc.kill()
        proc.wait()
        t.join(60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert len(errors) == 1 and isinstance(errors[0], ModelUnavailable)
    assert "failed 3 attempts; last: connection error" in str(errors[0]) and len(sleeps) == 2
    assert "127.0.0.1" in str(errors[0]) and "'m1'" in str(errors[0])
