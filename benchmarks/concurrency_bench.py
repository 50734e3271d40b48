"""Concurrency benchmark: wall time of a code-repair run with a model coder against its floor.

A run is the code-repair experiment (one method, ``random_k``, one seed) on the first ``--tasks``
HumanEvalFix tasks for ``--rounds`` feedback rounds, k=2 candidates per task and round asked in one
request (``n = 2``, ``sample_cap: 2``), with ``protocol.execution`` sequential or concurrent and
the model block's ``concurrency`` 1, 4 or 16. The timed span is the loop: the first
``cycle_started`` to the last ``cycle_finished`` event of the run (setup, the reference check and
the report are outside it).

Floors (the per-cycle barrier respected: cycle k+1 proposes from θ after cycle k):

- model-bound: Σ over cycles of ⌈requests in the cycle ÷ min(concurrency, server slots)⌉ × latency
  (the server's requests counted by arrival between the cycle's first and last event);
- sandbox-bound: Σ over cycles of (seconds of every test execution of the cycle, the
  ``runtime_s`` of each outcome ``Sandbox.run_many`` returned, plus the fixed cost of one sandboxed
  execution beyond it, measured first as the median of six one-test suites minus their runtime)
  ÷ sandbox workers.

The row's floor is the larger; ``wall / floor`` is the figure the issue's goal (≤ 1.2) is about.

Backends:

- ``double``: :class:`LatencyServerDouble` (benchmarks/server_double.py; a test double, not a
  model) with ``--latency`` seconds per request and ``--server-slots`` requests at a time;
- ``serve``: a real ``transformers serve`` (``rsi-workbench models serve``) of the prepared
  SmolLM2 default on CPU, capped (``--tasks 4 --rounds 1 --max-tokens 32``). It ignores ``n``, so a
  call is 1 + 1 filled request; its latency is measured, not set: the median of latency ÷ requests
  over the calls of the sequential concurrency-1 row (run that row first);
- ``local``: the local backend, a cycle's prompts one at a time vs batched into one ``generate``
  (``model.batch_across_tasks: true``), tokens/s.

Each invocation writes one compact summary (``--out benchmarks/data/concurrency/<name>.json``);
``python benchmarks/concurrency_bench.py table benchmarks/data/concurrency/*.json`` prints the
RESULTS table from the summaries alone. Tests never assert timings.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from server_double import LatencyServerDouble  # noqa: E402

AUDIT = {"on": True}  # the protocol's per-round audit (hidden tests of every candidate); --no-audit


def _config(
    tasks: int, rounds: int, model: dict[str, Any], execution: str, workers: int, max_tokens: int
) -> Any:
    from rsi_workbench.experiments.code_repair import Config
    from rsi_workbench.protocol.settings import ProtocolSettings

    protocol: dict[str, Any] = {"k": 2, "max_rounds": rounds, "gate_fraction": 0.34, "audit": AUDIT["on"]}
    if "execution" in ProtocolSettings.model_fields:
        protocol["execution"] = execution
    elif execution != "sequential":
        raise SystemExit(
            "this checkout has no protocol.execution (the concurrent loop): only sequential rows"
        )
    return Config.model_validate(
        {
            "name": "concurrency-bench",
            "tasks": {"limit": tasks},
            "methods": ["random_k"],
            "seeds": [0],
            "coder": {"kind": "llm", "sample_cap": 2, "max_tokens": max_tokens, "model": model},
            "protocol": protocol,
            "sandbox": {"workers": workers},
        }
    )


class ExecutionClock:
    """Sums the ``runtime_s`` of every sandboxed test execution (``Sandbox.run_many``, so the
    initial runs, evaluations, audits and final audits; execution-cache hits run nothing), each
    stamped with the wall clock at its return, while installed (a context manager)."""

    def __init__(self) -> None:
        self.marks: list[tuple[float, float, int]] = []

    def __enter__(self) -> ExecutionClock:
        from rsi_workbench.domains.code_repair.sandbox import Sandbox

        self._orig = orig = Sandbox.run_many
        clock = self

        def run_many(sb: Any, *a: Any, **kw: Any) -> Any:
            res = orig(sb, *a, **kw)
            outs = [o for row in res for o in row]
            clock.marks.append((time.time(), sum(o.runtime_s for o in outs), len(outs)))
            return res

        Sandbox.run_many = run_many  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: Any) -> None:
        from rsi_workbench.domains.code_repair.sandbox import Sandbox

        Sandbox.run_many = self._orig  # type: ignore[method-assign]


def exec_overhead(repeats: int = 6) -> float:
    """Seconds one sandboxed test execution costs beyond its own runtime (process start, isolation,
    collection): the median over ``repeats`` runs of a one-test suite, minus its ``runtime_s``."""
    from rsi_workbench.domains.code_repair import Sandbox

    sb = Sandbox()
    test = [{"id": "t", "kind": "assert", "code": "assert f() == 1"}]
    costs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = sb.run_suite("def f():\n    return 1\n", test, "f")
        costs.append(time.perf_counter() - t0 - out[0].runtime_s)
    return sorted(costs)[len(costs) // 2]


def measure(out: Path, arrivals: list[float], execs: list[tuple[float, float, int]]) -> dict[str, Any]:
    """Per-cycle spans, requests (by arrival) and test executions (by return) of a finished experiment."""
    from rsi_workbench.records import Run

    run = Run.open(out / "runs" / "random_k-seed0")
    cycles: dict[int, dict[str, Any]] = {}
    for e in run.events():
        if e.cycle is None:
            continue
        c = cycles.setdefault(e.cycle, {"start": e.time, "end": e.time, "active": 0})
        c["start"], c["end"] = min(c["start"], e.time), max(c["end"], e.time)
        if e.kind == "cycle_finished":
            c["active"] = int(e.payload["report"]["active"])
    for c in cycles.values():  # a cycle's first event is cycle_started: its work follows it
        inside = [x for x in execs if c["start"] - 0.001 <= x[0] <= c["end"] + 0.001]
        c["exec_s"], c["tests"] = sum(x[1] for x in inside), sum(x[2] for x in inside)
    rows = []
    for k in sorted(cycles):
        c = cycles[k]
        reqs = sum(1 for a in arrivals if c["start"] - 0.001 <= a <= c["end"] + 0.001)
        rows.append(
            {
                "cycle": k,
                "start": c["start"],
                "end": c["end"],
                "wall_s": c["end"] - c["start"],
                "requests": reqs,
                "exec_s": c["exec_s"],
                "tests": c["tests"],
                "active": c["active"],
            }
        )
    first, last = min(c["start"] for c in cycles.values()), max(c["end"] for c in cycles.values())
    return {"loop_s": last - first, "cycles": rows}


def http_calls(coder_run: Path) -> list[tuple[float, int, float]]:
    """(time, HTTP requests, latency_s) of each recorded model call of a coder run: a call whose
    server ignored ``n`` made 1 + ``n_filled.filled`` requests (the fills after the first)."""
    from rsi_workbench.records import Run

    out = []
    for e in Run.open(coder_run).events("model_call"):
        filled = int((e.payload.get("n_filled") or {}).get("filled", 0))
        out.append((e.time, 1 + filled, float(e.payload.get("latency_s") or 0.0)))
    return out


def floors(
    cycles: list[dict[str, Any]], latency_s: float, slots: int, workers: int, overhead_s: float
) -> dict[str, float]:
    """The model-bound and sandbox-bound floors of a run's cycles (see the module docstring)."""
    model = sum(math.ceil(c["requests"] / slots) * latency_s for c in cycles)
    sandbox = sum((c["exec_s"] + c["tests"] * overhead_s) / workers for c in cycles)
    return {"model_floor_s": model, "sandbox_floor_s": sandbox}


def run_row(
    base_url: str,
    model_name: str,
    server: Any,
    *,
    tasks: int,
    rounds: int,
    execution: str,
    concurrency: int,
    workers: int,
    max_tokens: int,
    latency_s: float,
    server_slots: int,
    overhead_s: float,
) -> dict[str, Any]:
    """One timed experiment against a server; the row of the summary."""
    from rsi_workbench.experiments.code_repair import run_experiment

    model = {"backend": "openai", "base_url": base_url, "name": model_name, "concurrency": concurrency}
    cfg = _config(tasks, rounds, model, execution, workers, max_tokens)
    tmp = Path(tempfile.mkdtemp(prefix="concurrency-bench-"))
    try:
        n0 = len(server.log) if server is not None else 0
        server_max0 = server.max_in_flight if server is not None else 0
        if server is not None:
            server.max_in_flight = 0
        t0 = time.time()
        with ExecutionClock() as clock:
            run_experiment(cfg, tmp / "out")
        total = time.time() - t0
        arrivals = [r["arrived_wall"] for r in server.log[n0:]] if server is not None else []
        m = measure(tmp / "out", arrivals, clock.marks)
        if server is None:  # a real server: HTTP requests from the recorded calls (1 + samples filled)
            calls = http_calls(tmp / "out" / "coder" / "seed0")
            for c in m["cycles"]:
                inside = [x for x in calls if c["start"] - 0.001 <= x[0] <= c["end"] + 0.001]
                c["requests"] = sum(x[1] for x in inside)
                c["request_s"] = [round(x[2] / x[1], 4) for x in inside]
        row = {
            "execution": execution,
            "concurrency": concurrency,
            "tasks": tasks,
            "rounds": rounds,
            "sandbox_workers": workers,
            "audit": AUDIT["on"],
            "latency_s": latency_s,
            "server_slots": server_slots,
            "exec_overhead_s": round(overhead_s, 4),
            "requests": sum(c["requests"] for c in m["cycles"]),
            "max_in_flight": server.max_in_flight if server is not None else None,
            "loop_s": round(m["loop_s"], 3),
            "experiment_s": round(total, 3),
            "cycles": [
                {
                    k: (round(v, 4) if isinstance(v, float) else v)
                    for k, v in c.items()
                    if k not in ("start", "end")
                }
                for c in m["cycles"]
            ],
        }
        row.update(
            {
                k: round(v, 3)
                for k, v in floors(
                    m["cycles"], latency_s, min(concurrency, server_slots), workers, overhead_s
                ).items()
            }
        )
        if server is not None:
            server.max_in_flight = max(server.max_in_flight, server_max0)
        return row
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _env() -> dict[str, Any]:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE)
    return {
        "commit": head.stdout.strip(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "load_before": os.getloadavg(),
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def cmd_double(args: argparse.Namespace) -> dict[str, Any]:
    rows = []
    overhead = exec_overhead()
    with LatencyServerDouble(args.latency, args.server_slots) as srv:
        for execution in args.execution:
            for c in args.concurrency:
                row = run_row(
                    srv.base_url,
                    "double",
                    srv,
                    tasks=args.tasks,
                    rounds=args.rounds,
                    execution=execution,
                    concurrency=c,
                    workers=args.workers,
                    max_tokens=args.max_tokens,
                    latency_s=args.latency,
                    server_slots=args.server_slots,
                    overhead_s=overhead,
                )
                print(json.dumps({k: v for k, v in row.items() if k != "cycles"}), flush=True)
                rows.append(row)
    return {
        "backend": f"LatencyServerDouble (latency {args.latency} s, {args.server_slots} slots)",
        "rows": rows,
    }


def _wait_up(base: str, proc: subprocess.Popen[bytes], limit_s: float = 300.0) -> None:
    import httpx

    t0 = time.time()
    while time.time() - t0 < limit_s:
        if proc.poll() is not None:
            raise SystemExit(f"transformers serve exited with {proc.returncode}")
        try:
            if httpx.get(base + "/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    raise SystemExit("transformers serve did not come up")


def cmd_serve(args: argparse.Namespace) -> dict[str, Any]:
    import socket

    from rsi_workbench.models.commands import serve_command, spawn_server, stop_server
    from rsi_workbench.models.prepare import prepare_default

    path = str(prepare_default())
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": str(args.server_threads)}
    overhead = exec_overhead()
    proc = spawn_server(serve_command(path, port), env=env)
    rows = []
    try:
        _wait_up(f"http://127.0.0.1:{port}", proc)
        for execution in args.execution:
            for c in args.concurrency:
                row = run_row(
                    f"http://127.0.0.1:{port}/v1",
                    path,
                    None,
                    tasks=args.tasks,
                    rounds=args.rounds,
                    execution=execution,
                    concurrency=c,
                    workers=args.workers,
                    max_tokens=args.max_tokens,
                    latency_s=0.0,
                    server_slots=c,
                    overhead_s=overhead,
                )
                print(json.dumps({k: v for k, v in row.items() if k != "cycles"}), flush=True)
                rows.append(row)
    finally:
        stop_server(proc)
    one = [
        x
        for r in rows
        if r["execution"] == "sequential" and r["concurrency"] == 1
        for c in r["cycles"]
        for x in c.get("request_s", [])
    ]
    if one:  # the latency of one request alone: the median over the sequential concurrency-1 row's
        # calls of latency ÷ requests (at concurrency 1 a call's fills run one after another)
        lat = sorted(one)[len(one) // 2]
        for r in rows:
            r["latency_s"] = round(lat, 3)
            r["model_floor_s"] = round(
                sum(math.ceil(c["requests"] / r["concurrency"]) * lat for c in r["cycles"]), 3
            )
    return {
        "backend": f"transformers serve, SmolLM2-135M-Instruct on CPU ({args.server_threads} threads)",
        "rows": rows,
    }


def cmd_local(args: argparse.Namespace) -> dict[str, Any]:
    """A cycle's prompts on the local backend: one generate per task vs one batched generate."""
    from rsi_workbench.domains.code_repair import RepairFeedback, Sandbox, load_humanevalfix
    from rsi_workbench.domains.code_repair.llm_coder import LLMCoder
    from rsi_workbench.models import ModelConfig, load_backend

    tasks = load_humanevalfix()[: args.tasks]
    sb = Sandbox()
    fb = [
        RepairFeedback(t.program, tuple(sb.run_suite(t.program, t.public_tests, t.entry_point)))
        for t in tasks
    ]
    rows = []
    for batched in (False, True):
        fields = {"name": "default", "device": "cpu", "cpu_threads": args.threads}
        if batched:
            if "batch_across_tasks" not in ModelConfig.model_fields:
                raise SystemExit("this checkout has no model.batch_across_tasks (H5's batched local backend)")
            fields["batch_across_tasks"] = True
        lm = load_backend(ModelConfig(**fields))
        lm.chat([{"role": "user", "content": "Say hi."}], max_tokens=2)  # load and warm before timing
        coder = LLMCoder(lm, max_tokens=args.max_tokens, sample_cap=2)
        prompts = [
            [{"role": "user", "content": coder.prompt(t, t.program, f)}]
            for t, f in zip(tasks, fb, strict=True)
        ]
        kw = dict(n=2, temperature=0.8, top_p=0.95, max_tokens=args.max_tokens, seed=0)
        t0 = time.perf_counter()
        if batched:
            res = lm.chat_batch(prompts, **kw)
        else:
            res = [lm.chat(p, **kw) for p in prompts]
        wall = time.perf_counter() - t0
        tokens = sum(r.completion_tokens for r in res)
        rows.append(
            {
                "mode": "batched" if batched else "one at a time",
                "prompts": len(prompts),
                "n": 2,
                "tokens": tokens,
                "wall_s": round(wall, 3),
                "tokens_per_s": round(tokens / wall, 2),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return {"backend": f"local SmolLM2-135M-Instruct on CPU ({args.threads} threads)", "rows": rows}


def _fmt(x: Any, nd: int = 1) -> str:
    return "-" if x is None else f"{x:.{nd}f}" if isinstance(x, float) else str(x)


def pipeline_floor(row: dict[str, Any]) -> float:
    """A tighter floor for a pipelined run: per cycle, max(model, sandbox) as :func:`floors`, but from
    cycle 2 on the sandbox half waits for the cycle's first response (every execution there evaluates
    a proposal, or is a final audit), so it is latency + sandbox; cycle 1's initial observations may
    run while the first requests are out."""
    slots = min(int(row["concurrency"]), int(row["server_slots"]))
    total = 0.0
    for c in row["cycles"]:
        model = math.ceil(c["requests"] / slots) * row["latency_s"]
        sandbox = (c["exec_s"] + c["tests"] * row["exec_overhead_s"]) / row["sandbox_workers"]
        total += max(model, sandbox if c["cycle"] == 1 else row["latency_s"] + sandbox)
    return total


def table(paths: list[str], pipeline: bool = False) -> str:
    """The RESULTS tables, computed from the summaries only (``pipeline``: two more columns, the
    :func:`pipeline_floor` and the wall time against it)."""
    out = []
    for p in paths:
        s = json.loads(Path(p).read_text())
        env = s["env"]
        out.append(
            f"\n{Path(p).name}: {s['backend']}; {env['machine']}, {env['when']}, load before "
            f"{', '.join(f'{x:.2f}' for x in env['load_before'])}, after {', '.join(f'{x:.2f}' for x in env.get('load_after', []))}"
        )
        rows = s["rows"]
        if rows and "mode" in rows[0]:
            out.append(
                "\n| mode | prompts × n | generated tokens | seconds | tokens/s |\n|---|---:|---:|---:|---:|"
            )
            for r in rows:
                out.append(
                    f"| {r['mode']} | {r['prompts']} × {r['n']} | {r['tokens']} | {r['wall_s']:.1f} | {r['tokens_per_s']:.1f} |"
                )
            continue
        out.append(
            "\n| execution | concurrency | tasks × rounds | requests | max in flight | loop s | model floor s "
            "| sandbox floor s | bound | wall ÷ floor | wall ÷ (model + sandbox) |"
            + (" pipeline floor s | wall ÷ pipeline floor |" if pipeline else "")
            + "\n|---|---:|---|---:|---:|---:|---:|---:|---|---:|---:|"
            + ("---:|---:|" if pipeline else "")
        )
        for r in rows:
            floor = max(r["model_floor_s"], r["sandbox_floor_s"])
            bound = "model" if r["model_floor_s"] >= r["sandbox_floor_s"] else "sandbox"
            out.append(
                f"| {r['execution']} | {r['concurrency']} | {r['tasks']} × {r['rounds']} | {r['requests']} | "
                f"{_fmt(r['max_in_flight'])} | {r['loop_s']:.1f} | {r['model_floor_s']:.1f} | "
                f"{r['sandbox_floor_s']:.1f} | {bound} | {r['loop_s'] / floor:.2f} | "
                f"{r['loop_s'] / (r['model_floor_s'] + r['sandbox_floor_s']):.2f} |"
                + (f" {pipeline_floor(r):.1f} | {r['loop_s'] / pipeline_floor(r):.2f} |" if pipeline else "")
            )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("double", "serve", "local"):
        p = sub.add_parser(name)
        p.add_argument("--tasks", type=int, default=24 if name == "double" else 4)
        p.add_argument("--rounds", type=int, default=3 if name == "double" else 1)
        p.add_argument("--max-tokens", type=int, default=64 if name == "double" else 32)
        p.add_argument("--out", help="write the summary JSON here")
        if name != "local":
            p.add_argument("--execution", nargs="+", default=["sequential", "concurrent"])
            p.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
            p.add_argument("--workers", type=int, default=2, help="sandbox workers")
            p.add_argument(
                "--no-audit", action="store_true", help="protocol audit: false (no hidden-test audits)"
            )
        if name == "double":
            p.add_argument("--latency", type=float, default=0.5)
            p.add_argument("--server-slots", type=int, default=16)
        if name == "serve":
            p.add_argument("--server-threads", type=int, default=1)
        if name == "local":
            p.add_argument("--threads", type=int, default=1)
    t = sub.add_parser("table")
    t.add_argument("paths", nargs="+")
    t.add_argument("--pipeline", action="store_true", help="add the pipeline floor (see pipeline_floor)")
    args = ap.parse_args()
    if args.cmd == "table":
        print(table(args.paths, pipeline=args.pipeline))
        return
    if getattr(args, "no_audit", False):
        AUDIT["on"] = False
    env = _env()
    summary = {"double": cmd_double, "serve": cmd_serve, "local": cmd_local}[args.cmd](args)
    summary["env"] = {**env, "load_after": os.getloadavg()}
    summary["command"] = " ".join(["python", "benchmarks/concurrency_bench.py", *sys.argv[1:]])
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(summary, indent=1) + "\n")
    print(table([args.out]) if args.out else json.dumps(summary)[:2000])


if __name__ == "__main__":
    main()
