"""Models benchmark: local generation 1 vs 8 batched prompts, client overhead, replay throughput.

Prints tables of side-by-side measurements. Run: ``python benchmarks/models_bench.py [--calls 1000]
[--no-local] [--serve]``. Tests never assert timings; results go to benchmarks/RESULTS.md.

- local: the prepared default (SmolLM2-135M-Instruct) on CPU, greedy, ``max_tokens`` 16: generated
  tokens/s for 1 prompt vs 8 prompts in one batched ``generate``.
- overhead: ``max_tokens=1`` chat calls against an in-process stub server (answers at once, so the
  whole per-call cost is the client's): a raw ``httpx`` loop vs ``OpenAILM.chat`` vs a recorded
  ``OpenAILM`` writing events and artifacts.
- replay: ``--calls`` recorded chat calls answered from a run's records by a fresh ``RecordedLLM``.
- serve (``--serve``): the HTTP backend against ``transformers serve`` at concurrency 1, 4, 8.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

Q = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]
PROMPTS = [
    "What is the capital of France?",
    "Name a prime number above 10.",
    "Say hello in Spanish.",
    "What colour is the sky?",
    "How many legs has a spider?",
    "Name a planet.",
    "What is 3 times 4?",
    "Name a fruit.",
]


class InstantLLMDouble:
    """Stand-in backend answering at once (measures the recorder, not a model)."""

    identity, name = "double:instant", "instant"

    def chat(self, messages: Any, **kw: Any) -> Any:
        from rsi_workbench.models import ChatResult

        return ChatResult(["ok"], ["stop"], 12, 1, 0.0, self.identity, self.name)


def local_rows(max_tokens: int, threads: int | None) -> list[tuple[str, float, float]]:
    from rsi_workbench.models import ModelConfig
    from rsi_workbench.models.local import TransformersLM

    lm = TransformersLM.load(ModelConfig(name="default", device="cpu"))
    lm.cpu_threads = threads
    lm.chat(Q, max_tokens=2)  # warm-up
    rows = []
    for label, convs in [("1 prompt", [[{"role": "user", "content": PROMPTS[0]}]])] + [
        ("8 prompts, one batch", [[{"role": "user", "content": p}] for p in PROMPTS])
    ]:
        t0 = time.perf_counter()
        res = lm.chat_batch(convs, max_tokens=max_tokens)
        dt = time.perf_counter() - t0
        toks = sum(r.completion_tokens for r in res)
        rows.append((label, toks / dt, dt))
    return rows


class _Stub(BaseHTTPRequestHandler):
    def log_message(self, *a: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        data = json.dumps(
            {
                "model": body["model"],
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": "P"}, "finish_reason": "length"}
                ],
                "usage": {"prompt_tokens": 20, "completion_tokens": 1},
            }
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def overhead_rows(n: int, root: Path) -> list[tuple[str, float]]:
    import httpx

    from rsi_workbench.models import ModelConfig, RecordedLLM
    from rsi_workbench.models.http import OpenAILM
    from rsi_workbench.records import Run

    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{srv.server_address[1]}/v1"
    body = {"model": "m", "messages": Q, "max_tokens": 1, "temperature": 0.0, "top_p": 1.0, "stream": False}
    rows = []
    with httpx.Client(base_url=base + "/") as c:
        for _ in range(20):
            c.post("chat/completions", json=body).json()
        t0 = time.perf_counter()
        for _ in range(n):
            c.post("chat/completions", json=body).json()
        rows.append(("raw httpx loop", (time.perf_counter() - t0) / n))
    lm = OpenAILM(ModelConfig(backend="openai", name="m", base_url=base, concurrency=1))
    for _ in range(20):
        lm.chat(Q, max_tokens=1)
    t0 = time.perf_counter()
    for _ in range(n):
        lm.chat(Q, max_tokens=1)
    rows.append(("OpenAILM.chat", (time.perf_counter() - t0) / n))
    run = Run.create(root / "overhead", {})
    rec = RecordedLLM.wrap(lm, run=run)
    t0 = time.perf_counter()
    for i in range(n):
        rec.chat(Q, max_tokens=1, seed=i)  # distinct seeds: every call live and recorded
    run.commit()
    rows.append(("OpenAILM recorded (event + 2 artifacts)", (time.perf_counter() - t0) / n))
    srv.shutdown()
    return rows


def replay_rows(n: int, root: Path) -> list[tuple[str, float]]:
    from rsi_workbench.models import RecordedLLM
    from rsi_workbench.records import Run

    run = Run.create(root / "replay", {})
    rec = RecordedLLM.wrap(InstantLLMDouble(), run=run)
    asks = [[{"role": "user", "content": f"question {i}"}] for i in range(n)]
    t0 = time.perf_counter()
    for a in asks:
        rec.chat(a, max_tokens=8)
    run.commit()
    record_rate = n / (time.perf_counter() - t0)
    run.close()
    again = Run.open(root / "replay", mode="r")
    t0 = time.perf_counter()
    rep = RecordedLLM.wrap(InstantLLMDouble(), run=again, replay=True)
    for a in asks:
        rep.chat(a, max_tokens=8)
    replay_rate = n / (time.perf_counter() - t0)
    assert rep.replayed_calls == n and rep.live_calls == 0
    return [("record (instant backend)", record_rate), ("replay (index + artifact read)", replay_rate)]


def serve_rows(calls: int, threads: int | None) -> list[tuple[int, float]]:
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    from rsi_workbench.models import ModelConfig
    from rsi_workbench.models.http import OpenAILM
    from rsi_workbench.models.prepare import prepare_default

    path = str(prepare_default())
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    exe = shutil.which("transformers") or "transformers"
    proc = subprocess.Popen(
        [exe, "serve", path, "--host", "127.0.0.1", "--port", str(port), "--device", "cpu"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": str(threads or os.cpu_count())},
    )
    rows = []
    try:
        for _ in range(600):
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.5)
        for conc in (1, 4, 8):
            lm = OpenAILM(
                ModelConfig(
                    backend="openai", name=path, base_url=f"http://127.0.0.1:{port}/v1", concurrency=conc
                )
            )
            lm.chat(Q, max_tokens=2)
            t0 = time.perf_counter()
            with ThreadPoolExecutor(conc) as pool:
                res = list(
                    pool.map(
                        lambda p, lm=lm: lm.chat([{"role": "user", "content": p}], max_tokens=16),
                        PROMPTS[:calls],
                    )
                )
            rows.append((conc, sum(r.completion_tokens for r in res) / (time.perf_counter() - t0)))
    finally:
        proc.terminate()
        proc.wait(30)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=1000, help="recorded calls to replay")
    ap.add_argument("--overhead-calls", type=int, default=300)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument(
        "--threads", type=int, default=1, help="torch CPU threads for the local rows (0: torch's default)"
    )
    ap.add_argument("--no-local", action="store_true", help="skip the local SmolLM2 generation rows")
    ap.add_argument("--serve", action="store_true", help="also time transformers serve at concurrency 1/4/8")
    args = ap.parse_args()
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if not args.no_local:
            rows = local_rows(args.max_tokens, args.threads or None)
            base = rows[0][1]
            print(
                f"\n| local backend, SmolLM2-135M on CPU ({args.threads or 'default'} threads), greedy, max_tokens {args.max_tokens} "
                "| generated tokens/s | seconds | ratio |"
            )
            print("|---|---:|---:|---:|")
            for label, tps, dt in rows:
                print(f"| {label} | {tps:.1f} | {dt:.2f} | {tps / base:.2f}× |")
        rows2 = overhead_rows(args.overhead_calls, root)
        raw = rows2[0][1]
        print(
            f"\n| max_tokens=1 calls to an instant stub server ({args.overhead_calls} each) | ms/call | overhead vs raw |"
        )
        print("|---|---:|---:|")
        for label, sec in rows2:
            print(f"| {label} | {sec * 1e3:.2f} | {100 * (sec / raw - 1):+.1f}% |")
        rows3 = replay_rows(args.calls, root)
        print(f"\n| {args.calls} chat calls | calls/s |")
        print("|---|---:|")
        for label, rate in rows3:
            print(f"| {label} | {rate:,.0f} |")
        if args.serve:
            print(
                f"\n| transformers serve ({args.threads or 'default'} threads), 8 prompts, max_tokens 16 | generated tokens/s |"
            )
            print("|---|---:|")
            for conc, tps in serve_rows(8, args.threads or None):
                print(f"| concurrency {conc} | {tps:.1f} |")


if __name__ == "__main__":
    main()
