"""``LatencyServerDouble``: a test double of an OpenAI-compatible server on 127.0.0.1.

Not a model: it answers every chat request after a fixed ``latency_s``, at most ``max_concurrency``
requests at a time (later ones wait for a slot, like a server with that many batch slots), and
its answers are deterministic functions of the request. For a code-repair prompt (a fenced
``python`` block after "Current program:") each choice is that program plus one harmless
line ``_double_nonce = <number>`` (before its first ``return``) derived from the request's seed and the choice's
index: a valid candidate, distinct per sample, that fails where the program failed, so every task
stays active for every round. Other prompts get ``echo: <last message>``.

``honour_n=False`` answers one choice whatever ``n`` says (what Ollama does). ``GET /v1/models``
lists ``models``. The double logs each request (arrival and finish time (perf_counter; ``arrived_wall``: epoch), ``n``, ``seed``, choices
returned) and the most requests it had in flight at once. Used by benchmarks/concurrency_bench.py
and tests/models/test_models_cache.py.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_PROGRAM = re.compile(r"Current program:\s*```python\n(.*?)\n```", re.S)


def nonce(seed: Any, index: int) -> int:
    """The number the double appends to choice ``index`` of a request seeded ``seed``."""
    return int(hashlib.sha256(f"{seed}:{index}".encode()).hexdigest()[:8], 16)


def with_nonce(program: str, number: int) -> str:
    """``program`` with ``_double_nonce = number`` before its first ``return`` (inside the function,
    so the candidate differs from the program and from other samples), else at its end."""
    lines = program.split("\n")
    for i, ln in enumerate(lines):
        m = re.match(r"^(\s+)return\b", ln)
        if m:
            return "\n".join([*lines[:i], f"{m.group(1)}_double_nonce = {number}", *lines[i:]])
    return f"{program}\n_double_nonce = {number}"


class LatencyServerDouble:
    """Test double: an OpenAI-compatible chat server with a fixed latency and a concurrency cap."""

    def __init__(
        self,
        latency_s: float = 0.0,
        max_concurrency: int = 1_000,
        *,
        honour_n: bool = True,
        models: tuple[str, ...] = ("double",),
    ):
        self.latency_s, self.honour_n, self.models = latency_s, honour_n, list(models)
        self.slots = threading.BoundedSemaphore(max_concurrency)
        self.lock = threading.Lock()
        self.log: list[dict[str, Any]] = []
        self.in_flight = self.max_in_flight = 0
        double = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive: one connection per client slot

            def log_message(self, *a: Any) -> None:  # quiet
                pass

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(
                        200, {"object": "list", "data": [{"id": m, "object": "model"} for m in double.models]}
                    )
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                self._send(200, double.answer(body))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """The response to one chat request (after waiting for a slot and the latency)."""
        arrived, arrived_wall = time.perf_counter(), time.time()
        with self.slots:
            with self.lock:
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                if self.latency_s:
                    time.sleep(self.latency_s)
            finally:
                with self.lock:
                    self.in_flight -= 1
        n = int(body.get("n") or 1) if self.honour_n else 1
        seed = body.get("seed")
        last = str((body.get("messages") or [{}])[-1].get("content") or "")
        m = _PROGRAM.search(last)
        if m:
            texts = [f"```python\n{with_nonce(m.group(1), nonce(seed, i))}\n```" for i in range(n)]
        else:
            texts = [f"echo: {last}" for _ in range(n)]
        with self.lock:
            self.log.append(
                {
                    "arrived": arrived,
                    "arrived_wall": arrived_wall,
                    "finished": time.perf_counter(),
                    "n": body.get("n"),
                    "seed": seed,
                    "choices": n,
                }
            )
        return {
            "model": body.get("model"),
            "choices": [
                {"index": i, "message": {"role": "assistant", "content": t}, "finish_reason": "stop"}
                for i, t in enumerate(texts)
            ],
            "usage": {
                "prompt_tokens": len(last.split()),
                "completion_tokens": sum(len(t.split()) for t in texts),
            },
        }

    def close(self) -> None:
        """Stop serving and release the port."""
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> LatencyServerDouble:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
