"""A metering proxy: one OpenAI-compatible endpoint on 127.0.0.1 in front of another, which counts
and caps chat calls and tokens at the server side and pins the sampling settings.

Used by ``rsi-workbench compare openevolve`` (:mod:`.compare`) so that two tools are charged by one
neutral meter rather than by their own bookkeeping: each tool talks to its own proxy, and the proxy

- forwards ``POST .../chat/completions`` while fewer than ``max_calls`` calls were forwarded (and,
  with ``max_total_tokens``, fewer tokens than that were used); past the cap it answers HTTP 429
  with ``"metering proxy: ... cap ... reached"`` and forwards nothing (counted in ``refused``);
- overwrites ``temperature``, ``top_p``, ``max_tokens`` with the pinned values, ``n`` with 1, and
  ``seed`` with the seed policy's value for the call's ordinal (``seed_of(k)``, ``k`` = 0, 1, ...
  in arrival order); what the tool sent is kept beside what was forwarded;
- logs every call (ordinal, the tool's and the forwarded sampling settings, the prompt's characters,
  the server's ``usage`` prompt/completion tokens, ``finish_reason``, the answer's sha256, status);
- forwards ``GET .../models``; an upstream API key (``api_key``) is added here, never given to a tool.

Only loopback is served; the upstream is whatever the model config names (a local server in tests).
"""

from __future__ import annotations

import hashlib
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PINNED = ("temperature", "top_p", "max_tokens")


@dataclass(frozen=True)
class Pinned:
    """The sampling settings every forwarded call carries, whatever the tool sent."""

    temperature: float
    top_p: float
    max_tokens: int


def seed_policy(run_seed: int) -> Callable[[int], int]:
    """The declared seed policy: call ``k`` (0-based, arrival order) of run seed ``s`` is forwarded
    with seed ``(1_000_003 * s + k) mod 2**31`` — the same for both tools, whatever they send."""
    return lambda k: (1_000_003 * int(run_seed) + int(k)) % 2**31


@dataclass
class MeteringProxy:
    """The proxy (see the module docstring); a context manager. ``base_url`` is what a tool is given."""

    upstream: str
    pinned: Pinned
    max_calls: int
    seed_of: Callable[[int], int] = field(default_factory=lambda: seed_policy(0))
    max_total_tokens: int | None = None
    api_key: str | None = None
    timeout_s: float = 600.0
    log: list[dict[str, Any]] = field(default_factory=list)
    refused: int = 0

    def __post_init__(self) -> None:
        self.upstream = self.upstream.rstrip("/")
        self.lock = threading.Lock()
        self.calls = 0
        self.prompt_tokens = self.completion_tokens = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if not self.path.rstrip("/").endswith("/models"):
                    self._send(404, {"error": {"message": f"metering proxy: no route {self.path}"}})
                    return
                status, payload = proxy._forward("GET", "/models", None)
                self._send(status, payload)

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", 0) or 0))
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(
                        404, {"error": {"message": f"metering proxy: only chat completions ({self.path})"}}
                    )
                    return
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    self._send(400, {"error": {"message": "metering proxy: the body is not JSON"}})
                    return
                self._send(*proxy.chat(body))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    # -- the meter ------------------------------------------------------------------------------
    def _over_cap(self) -> str:
        if self.calls >= self.max_calls:
            return f"metering proxy: call cap {self.max_calls} reached"
        used = self.prompt_tokens + self.completion_tokens
        if self.max_total_tokens is not None and used >= self.max_total_tokens:
            return f"metering proxy: token cap {self.max_total_tokens} reached ({used} used)"
        return ""

    def chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """Meter, pin and forward one chat request; (HTTP status, payload) for the tool. Calls are
        forwarded one at a time (the ordinal, hence the seed, follows arrival order)."""
        with self.lock:
            why = self._over_cap()
            if why:
                self.refused += 1
                return 429, {"error": {"message": why, "type": "rate_limit_exceeded"}}
            k = self.calls
            self.calls += 1
            sent = {key: body.get(key) for key in (*PINNED, "seed", "n", "stop")}
            fwd = dict(body)
            fwd.update(
                temperature=self.pinned.temperature,
                top_p=self.pinned.top_p,
                max_tokens=self.pinned.max_tokens,
                seed=self.seed_of(k),
                n=1,
            )
            fwd.pop("max_completion_tokens", None)
            prompt_chars = sum(len(str(m.get("content") or "")) for m in body.get("messages") or [])
            status, payload = self._forward("POST", "/chat/completions", fwd)
            entry: dict[str, Any] = {
                "call": k,
                "status": status,
                "sent": sent,
                "forwarded": {key: fwd[key] for key in (*PINNED, "seed")},
                "prompt_chars": prompt_chars,
                "prompt_tokens": 0,
                "completion_tokens": 0,
                "finish_reason": "",
                "answer_sha256": "",
            }
            usage = payload.get("usage") if isinstance(payload, dict) else None
            if isinstance(usage, dict):
                entry["prompt_tokens"] = int(usage.get("prompt_tokens") or 0)
                entry["completion_tokens"] = int(usage.get("completion_tokens") or 0)
            choices = payload.get("choices") if isinstance(payload, dict) else None
            if isinstance(choices, list) and choices and isinstance(choices[0], dict):
                text = str((choices[0].get("message") or {}).get("content") or "")
                entry["finish_reason"] = str(choices[0].get("finish_reason") or "")
                entry["answer_sha256"] = hashlib.sha256(text.encode()).hexdigest()
            self.prompt_tokens += entry["prompt_tokens"]
            self.completion_tokens += entry["completion_tokens"]
            self.log.append(entry)
            return status, payload

    def _forward(self, method: str, path: str, body: dict[str, Any] | None) -> tuple[int, dict[str, Any]]:
        headers = {"content-type": "application/json"}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.upstream + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as r:  # noqa: S310 (the configured server)
                return r.status, json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            try:
                return e.code, json.loads(e.read() or b"{}")
            except ValueError:
                return e.code, {"error": {"message": f"upstream answered HTTP {e.code}"}}
        except (OSError, ValueError) as e:
            return 502, {"error": {"message": f"metering proxy: upstream failed ({type(e).__name__}: {e})"}}

    def summary(self) -> dict[str, Any]:
        """What was forwarded and refused, and the tokens the server reported."""
        ok = [e for e in self.log if e["status"] == 200]
        return {
            "calls": self.calls,
            "ok_calls": len(ok),
            "refused": self.refused,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cut_at_max_tokens": sum(e["finish_reason"] == "length" for e in ok),
            "max_calls": self.max_calls,
            "max_total_tokens": self.max_total_tokens,
        }

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> MeteringProxy:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


__all__ = ["PINNED", "MeteringProxy", "Pinned", "seed_policy"]
