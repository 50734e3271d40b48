"""``rsi-workbench models list|prepare|chat|calls|probe|serve|cache``: see, prepare, try, inspect, probe,
share models and manage the cross-run call cache."""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from rsi_workbench.models.config import ModelConfig
from rsi_workbench.models.interface import ModelError


def _fail(msg: str) -> int:
    print(f"error: {msg}", file=sys.stderr)
    return 2


def cmd_list(args: argparse.Namespace) -> int:
    from rsi_workbench.models.prepare import list_models, models_dir

    print(f"models directory: {models_dir()} (set RSI_WORKBENCH_MODELS to move it)")
    for r in list_models():
        state = "prepared" if r["prepared"] else "not prepared (run: rsi-workbench models prepare)"
        print(f"{r['name']:<10} {state:<12} {r['path']}")
        if r["source"]:
            print(f"{'':<10} from {r['source']}")
    return 0


def cmd_prepare(args: argparse.Namespace) -> int:
    from rsi_workbench.models.prepare import prepare_default

    try:
        path = prepare_default(force=args.force)
    except (FileNotFoundError, ImportError) as e:
        return _fail(str(e))
    print(path)
    return 0


def cmd_chat(args: argparse.Namespace) -> int:
    from rsi_workbench.models import load_backend

    try:
        if args.base_url:
            cfg = ModelConfig(
                backend="openai",
                name=args.model or served_model(args.base_url, args.api_key_env),
                base_url=args.base_url,
                api_key_env=args.api_key_env,
            )
        else:
            cfg = ModelConfig(backend="transformers", name=args.model or "default", device=args.device)
        lm = load_backend(cfg)
        res = lm.chat(
            [{"role": "user", "content": args.prompt}],
            max_tokens=args.max_tokens,
            temperature=args.temperature,
            seed=args.seed,
        )
    except (ModelError, FileNotFoundError, ValueError) as e:
        return _fail(str(e))
    print(res.text)
    print(
        f"[{res.backend} {res.model}: {res.prompt_tokens} prompt + {res.completion_tokens} completion tokens, "
        f"finish {res.finish_reasons[0]}, {res.latency_s:.2f}s"
        + (f", {res.truncated_tokens} prompt tokens truncated" if res.truncated_tokens else "")
        + "]",
        file=sys.stderr,
    )
    return 0


def served_model(base_url: str, api_key_env: str | None = None, timeout_s: float = 30.0) -> str:
    """The one model an OpenAI-compatible server serves (``GET <base_url>/models``); a
    :class:`ModelError` naming the server when it serves none or several (listed), or cannot be asked."""
    import httpx

    from rsi_workbench.models.config import redact_url

    server = redact_url(base_url)
    headers = {}
    if api_key_env:
        key = os.environ.get(api_key_env)
        if not key:
            raise ModelError(f"the API key variable {api_key_env} is not set ({server}); export it first")
        headers["Authorization"] = f"Bearer {key}"
    try:
        r = httpx.get(base_url.rstrip("/") + "/models", headers=headers, timeout=timeout_s)
    except httpx.HTTPError as e:
        raise ModelError(f"{server}: GET /models failed ({type(e).__name__}); pass --model") from None
    if r.status_code >= 400:
        raise ModelError(f"{server}: GET /models answered HTTP {r.status_code}; pass --model")
    try:
        data = r.json().get("data")
        ids = [str(m["id"]) for m in data]
    except (ValueError, AttributeError, KeyError, TypeError):
        raise ModelError(f"{server}: GET /models did not answer an OpenAI model list; pass --model") from None
    if len(ids) == 1:
        return ids[0]
    if not ids:
        raise ModelError(f"{server} serves no model (GET /models is empty); pass --model")
    listed = ", ".join(sorted(ids)[:20]) + (f" (and {len(ids) - 20} more)" if len(ids) > 20 else "")
    raise ModelError(f"{server} serves {len(ids)} models; pass --model with one of: {listed}")


def cmd_cache(args: argparse.Namespace) -> int:
    """``models cache stats|clear``: the cross-run call cache under the models directory."""
    from rsi_workbench.models.cache import CallCache

    cache = CallCache(args.dir)
    if args.cache_command == "clear":
        n = cache.clear()
        print(f"removed {n} entries from {cache.root}")
        return 0
    st = cache.stats()
    print(f"call cache: {st['path']}")
    print(f"entries {st['entries']}, {st['bytes']} bytes")
    print(f"hits {st['hits']}, misses {st['misses']}, writes {st['writes']} (since the last clear)")
    return 0


def cmd_calls(args: argparse.Namespace) -> int:
    from rsi_workbench.models.usage import call_rows, format_calls, model_usage, token_totals, usage_lines
    from rsi_workbench.records.run import Run, RunError

    try:
        run = Run.open(args.run)
    except RunError as e:
        return _fail(str(e))
    rows = call_rows(run, args.role)
    print(format_calls(rows[-args.limit :] if args.limit else rows))
    for role, t in sorted(token_totals(run).items()):
        print(
            f"tokens {role}: {int(t['calls'])} calls, {int(t['prompt_tokens'])} in + "
            f"{int(t['completion_tokens'])} out = {int(t['prompt_tokens'] + t['completion_tokens'])}, "
            f"{t['latency_s']:.1f}s"
        )
    print("\n".join(usage_lines(model_usage(args.run))))  # live and replayed, as reports print them
    return 0


def cmd_probe(args: argparse.Namespace) -> int:
    """What an OpenAI-compatible server offers for a model (what a config's roles are checked against)."""
    from rsi_workbench.models.probe import probe_server

    try:
        cfg = ModelConfig(
            backend="openai", name=args.model, base_url=args.base_url, api_key_env=args.api_key_env
        )
        p = probe_server(cfg, cache=False, json_schema=True)
    except (ModelError, ValueError) as e:
        return _fail(str(e))
    print(f"{p.server} model {p.model!r}: {p.summary()}")
    print(f"usable capabilities: {', '.join(sorted(p.capabilities)) or 'none'} (score: transformers only)")
    for cap, why in sorted(p.why.items()):
        print(f"  {cap}: {why}")
    return 0


def serve_command(path: str, port: int, host: str = "127.0.0.1") -> list[str]:
    """The ``transformers serve`` command line serving a prepared checkpoint directory."""
    exe = shutil.which("transformers")
    if exe is None:
        raise FileNotFoundError(
            "`transformers serve` needs the transformers CLI: pip install 'transformers[serving]'"
        )
    return [exe, "serve", path, "--host", host, "--port", str(port), "--device", "cpu"]


PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when the thread that forked it exits


class _Stopped(Exception):
    """``models serve`` was told to stop by a signal (SIGTERM, SIGHUP)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` making the child die (SIGKILL) when this process dies, even by SIGKILL
    (Linux ``prctl(PR_SET_PDEATHSIG)``); None elsewhere. libc is loaded here, before the fork."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    parent = os.getpid()

    def preexec() -> None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec


def spawn_server(cmd: list[str], *, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Start ``cmd`` (the server) as a child that cannot outlive this process: on Linux it gets
    SIGKILL when the thread that started it exits, however that ends (:func:`run_server` ends it
    gracefully on every stop it sees)."""
    # preexec_fn: only async-signal-safe work after the fork (one prctl and getppid through ctypes)
    return subprocess.Popen(cmd, env=env, preexec_fn=_die_with_parent())


def stop_server(proc: subprocess.Popen[bytes], grace_s: float = 10.0) -> None:
    """End a server started by :func:`spawn_server`: SIGTERM, then SIGKILL after ``grace_s``; reaped."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_server(cmd: list[str], *, env: dict[str, str] | None = None) -> int:
    """Run the server ``cmd`` in the foreground until it exits or this process is stopped, and end it
    in every case: its own exit (its status is returned), Ctrl-C / SIGINT (130), SIGTERM or SIGHUP
    (128 + the signal) end it with SIGTERM (SIGKILL after a grace period); a SIGKILL of this
    process kills it through the kernel (:func:`spawn_server`)."""
    import threading

    def on_signal(signum: int, frame: Any) -> None:
        raise _Stopped(signum)

    proc = spawn_server(cmd, env=env)
    previous: dict[int, Any] = {}
    try:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGHUP):
                if signal.getsignal(sig) is not signal.SIG_IGN:  # nohup keeps SIGHUP ignored
                    previous[sig] = signal.signal(sig, on_signal)
        print(f"server pid {proc.pid} (ended with this command)", file=sys.stderr, flush=True)
        return proc.wait()
    except KeyboardInterrupt:
        return 130
    except _Stopped as e:
        return 128 + e.signum
    finally:
        try:
            stop_server(proc)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)


def cmd_serve(args: argparse.Namespace) -> int:
    from rsi_workbench.models.prepare import resolve_name

    try:
        path = str(resolve_name(args.model))
        cmd = serve_command(path, args.port, args.host)
    except FileNotFoundError as e:
        return _fail(str(e))
    if args.device != "cpu":
        cmd[-1] = args.device
    print(
        f"serving {path} at http://{args.host}:{args.port}/v1 (model id {path!r}); "
        f'point a config at it: model: {{backend: openai, base_url: "http://{args.host}:{args.port}/v1", '
        f'name: "{path}"}}',
        file=sys.stderr,
    )
    if args.dry_run:
        print(" ".join(cmd))
        return 0
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return run_server(cmd)


def register(subparsers: Any) -> None:
    """Add ``models list|prepare|chat|calls|probe|serve|cache`` to the ``rsi-workbench`` command line."""
    p = subparsers.add_parser("models", help="language models: list, prepare the default, chat, serve")
    sub = p.add_subparsers(dest="models_command", required=True, metavar="SUBCOMMAND")
    ls = sub.add_parser("list", help="aliases and prepared models, and where they are")
    ls.set_defaults(func=cmd_list)
    pr = sub.add_parser("prepare", help="prepare the offline default (SmolLM2-135M-Instruct) as a checkpoint")
    pr.add_argument("--force", action="store_true", help="prepare again even if already prepared")
    pr.set_defaults(func=cmd_prepare)
    ch = sub.add_parser("chat", help="one prompt to a model; prints the answer (token counts on stderr)")
    ch.add_argument("prompt")
    ch.add_argument(
        "--model",
        help="alias, checkpoint directory or .gguf file (or the server's model id; with --base-url and "
        "no --model: the server's model when it serves exactly one)",
    )
    ch.add_argument("--base-url", help="an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1")
    ch.add_argument("--api-key-env", help="environment variable holding the server's API key")
    ch.add_argument("--max-tokens", type=int, default=128)
    ch.add_argument("--temperature", type=float, default=0.0)
    ch.add_argument("--seed", type=int, default=0)
    ch.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    ch.set_defaults(func=cmd_chat)
    ca = sub.add_parser(
        "calls", help="a run's model calls (prompt, first sample, tokens, latency) and totals"
    )
    ca.add_argument("run", help="run directory")
    ca.add_argument("--role", help="only this role's calls")
    ca.add_argument("--limit", type=int, default=0, help="only the last N calls")
    ca.set_defaults(func=cmd_calls)
    pb = sub.add_parser(
        "probe", help="what an OpenAI-compatible server offers for a model (chat, completions, logprobs)"
    )
    pb.add_argument("--base-url", required=True, help="e.g. http://127.0.0.1:8000/v1")
    pb.add_argument("--model", required=True, help="the server's model id")
    pb.add_argument("--api-key-env", help="environment variable holding the server's API key")
    pb.set_defaults(func=cmd_probe)
    sv = sub.add_parser("serve", help="`transformers serve` on 127.0.0.1 with a prepared model")
    sv.add_argument("--model", default="default", help="alias or checkpoint directory (default: default)")
    sv.add_argument("--port", type=int, default=8000)
    sv.add_argument("--host", default="127.0.0.1")
    sv.add_argument("--device", default="cpu", help="cpu, cuda:0, auto")
    sv.add_argument("--dry-run", action="store_true", help="print the command instead of running it")
    sv.set_defaults(func=cmd_serve)
    cc = sub.add_parser("cache", help="the cross-run model-call cache (cache: true): stats or clear")
    cc.add_argument("cache_command", choices=["stats", "clear"], metavar="stats|clear")
    cc.add_argument("--dir", help="the cache directory (default: <models dir>/cache)")
    cc.set_defaults(func=cmd_cache)


__all__ = ["register", "run_server", "serve_command", "served_model", "spawn_server", "stop_server"]
