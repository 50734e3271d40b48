"""``rsi-workbench compare openevolve TASK_DIR --model MODEL --calls N --seeds S``: the workbench's
program agent and OpenEvolve side by side on one task directory, metered at the server.

Per seed and tool: a private copy of the task directory (neither tool sees, let alone writes, the
original; its files' sha256 are checked before and after), a fresh metering proxy
(:class:`~.meter.MeteringProxy`) in front of the one endpoint, capped at N forwarded calls (and
``--token-cap`` tokens), pinning temperature, top_p, max_tokens and the seed policy
(:func:`~.meter.seed_policy`) for both; then the tool's own process (:mod:`.peers`).

**One definition of best**, the same for both: the highest score among the valid programs of
{the initial program} ∪ {the candidates of the tool's first N forwarded calls}, validity and score
by :func:`~.task.verdict` on the metrics the tool recorded. Every such best (when it is a candidate)
is then **re-scored** by the task's evaluator in this project's sandbox on a fresh copy, and the
table reports the re-scored value (a claim that does not reproduce is flagged). Per seed:

- ``best@N`` (re-scored), and its gain over the initial program (scored once here, in the sandbox);
- ``calls to level``: the first call whose candidate reached ``--level`` (default: beat the initial
  program), or "not reached";
- ``failed edits``: forwarded calls that gave no evaluated program (no code block, a diff that did
  not apply, a rewrite equal to its parent, ...);
- ``tokens``: prompt + completion tokens the server reported, counted by the proxy.

Over seeds: means with Student-t 95% intervals, and the paired difference workbench − OpenEvolve
(:func:`rsi_workbench.metrics.t_interval`). The proxy's counts are checked against each tool's own
records (model_call events; OpenEvolve's "LLM Token Usage" log lines).

**OpenEvolve runs unsandboxed.** It evaluates candidates in its own process on the host, and it
cannot be run inside this project's sandbox with access to the proxy (the sandbox has no network; a
unix socket bound in would need OpenEvolve's HTTP client changed). The output says so; under
``RSI_WORKBENCH_SANDBOX_MODE=required`` (or ``--sandbox required``) the command refuses unless
``--allow-unsandboxed-peer`` is given. The workbench's own candidates and every re-score run in the
sandbox.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rsi_workbench.domains.openevolve.task import OpenEvolveTaskError, _walk, load_task, task_digest

if TYPE_CHECKING:  # the proxy and the runners are imported when a comparison runs (a cheap CLI start)
    from rsi_workbench.domains.openevolve.peers import ToolRun

UNSANDBOXED = (
    "OpenEvolve evaluates candidates in its own process on the host, NOT in this project's sandbox "
    "(it cannot be run inside the sandbox with access to the proxy): run it only on task directories "
    "and models you trust"
)
BEST_RULE = (
    "best = highest valid score among {initial program} + {candidates of the first N forwarded calls}, "
    "the same rule for both tools; each best re-scored in this project's sandbox"
)


class CompareError(ValueError):
    """The comparison cannot run as asked; the message says why."""


@dataclass(frozen=True)
class CompareSettings:
    """What one comparison runs: the task, the endpoint, the call budget, seeds and pinned sampling."""

    task_dir: Path
    base_url: str
    model: str
    calls: int
    seeds: tuple[int, ...]
    temperature: float = 0.7
    top_p: float = 0.95
    max_tokens: int = 2048
    level: float | None = None
    openevolve_edit: str = "diff"
    allow_unsandboxed_peer: bool = False
    token_cap: int | None = None
    api_key: str | None = None
    mode: str | None = None
    tool_calls: int | None = None  # each tool's own budget (default: calls); more shows the cap holding
    timeout_s: float = 3600.0

    @property
    def sampling(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "top_p": self.top_p, "max_tokens": self.max_tokens}


def check_peer_allowed(s: CompareSettings) -> str:
    """The effective sandbox mode; refuses under ``required`` without ``allow_unsandboxed_peer``."""
    from rsi_workbench.sandbox import effective_mode

    mode = effective_mode(s.mode)
    if mode == "required" and not s.allow_unsandboxed_peer:
        raise CompareError(
            f"sandbox mode is 'required' and {UNSANDBOXED}; pass --allow-unsandboxed-peer to run it anyway"
        )
    return mode


def private_copy(task_dir: Path, dest: Path) -> Path:
    """A copy of the task directory (links and special files refused, caches left out)."""
    dest.mkdir(parents=True)
    _walk(task_dir, dest)
    return dest


def _best(run: ToolRun, initial: float | None, calls: int) -> tuple[float | None, int | None]:
    """(best score, call that found it; None for the initial program) under the one rule."""
    best, at = initial, None
    for c in run.calls[:calls]:
        if c.valid and c.score is not None and (best is None or c.score > best):
            best, at = c.score, c.call
    return best, at


def _calls_to(run: ToolRun, level: float | None, calls: int) -> int | None:
    if level is None:
        return None
    for c in run.calls[:calls]:
        if c.valid and c.score is not None and c.score >= level:
            return c.call
    return None


def _seed_row(
    s: CompareSettings,
    run: ToolRun,
    meter: dict[str, Any],
    initial: float | None,
    level: float | None,
    rescore_dir: Path,
) -> dict[str, Any]:
    best, at = _best(run, initial, s.calls)
    rescored, claim_holds = best, True
    program = None
    if at is not None:
        program = run.calls[at - 1].program
        task = load_task(
            private_copy(s.task_dir, rescore_dir / f"{run.tool.replace(':', '-')}-{run.seed}"), mode=s.mode
        )
        ev = task.evaluate(program)
        rescored = ev.score if ev.valid else None
        claim_holds = (
            rescored is not None
            and best is not None
            and math.isclose(rescored, best, rel_tol=1e-9, abs_tol=1e-12)
        )
    spent = [c for c in run.calls[: s.calls]]
    return {
        "tool": run.tool,
        "seed": run.seed,
        "rc": run.rc,
        "wall_s": round(run.wall_s, 2),
        "best_claimed": best,
        "best_rescored": rescored,
        "best_call": at,
        "best_holds": claim_holds,
        "gain": None if rescored is None or initial is None else rescored - initial,
        "calls_to_level": _calls_to(run, level, s.calls),
        "evaluated": sum(c.program is not None for c in spent),
        "valid": sum(c.valid for c in spent),
        "failed_edits": sum(c.program is None for c in spent),
        "tokens": meter["prompt_tokens"] + meter["completion_tokens"],
        "meter": meter,
        "own": {
            "calls": run.own_calls,
            "prompt_tokens": run.own_prompt_tokens,
            "completion_tokens": run.own_completion_tokens,
        },
        "counts_match": (run.own_calls, run.own_prompt_tokens, run.own_completion_tokens)
        == (meter["ok_calls"], meter["prompt_tokens"], meter["completion_tokens"]),
        "tool_initial": run.initial_score,
        "api_errors": run.api_errors,
        "best_program": program,
        "calls": [asdict(c) for c in run.calls],
        "out": run.out,
        "log_tail": run.log_tail if run.rc else "",
    }


def run_compare(s: CompareSettings, out: Path) -> dict[str, Any]:
    """Run both tools on every seed; the result (also written to ``out/compare.json``)."""
    from rsi_workbench.domains.openevolve.meter import MeteringProxy, Pinned, seed_policy
    from rsi_workbench.domains.openevolve.peers import (
        EDIT_FORMAT,
        OPENEVOLVE_VERSION,
        run_openevolve,
        run_workbench,
    )

    mode = check_peer_allowed(s)
    if s.openevolve_edit not in ("diff", "full"):
        raise CompareError(f"--openevolve-edit must be diff or full, got {s.openevolve_edit!r}")
    try:
        import openevolve  # noqa: F401
    except ImportError:
        raise CompareError("OpenEvolve is not installed: pip install 'rsi-workbench[openevolve]'") from None
    task_dir = Path(s.task_dir).resolve()
    try:
        before = task_digest(task_dir)
        task = load_task(private_copy(task_dir, out / "initial"), mode=s.mode)
    except OpenEvolveTaskError as e:
        raise CompareError(str(e)) from None
    s = CompareSettings(**{**asdict(s), "task_dir": task_dir})
    init = task.evaluate(task.seed_program)
    initial = init.score if init.valid else None
    level = s.level if s.level is not None else initial
    strict = s.level is None  # "beat the initial program": strictly above it
    tools = ("workbench", f"openevolve:{s.openevolve_edit}")
    rows: list[dict[str, Any]] = []
    for seed in s.seeds:
        for tool in tools:
            d = out / f"seed{seed}" / tool.replace(":", "-")
            copy = private_copy(task_dir, d / "task")
            budget = s.tool_calls or s.calls
            with MeteringProxy(
                s.base_url, Pinned(**s.sampling), s.calls, seed_policy(seed), s.token_cap, s.api_key
            ) as px:
                if tool == "workbench":
                    run = run_workbench(
                        copy, px.base_url, s.model, budget, seed, s.sampling, d / "tool", s.timeout_s
                    )
                else:
                    run = run_openevolve(
                        copy,
                        px.base_url,
                        s.model,
                        budget,
                        seed,
                        s.sampling,
                        s.openevolve_edit,
                        d / "tool",
                        s.timeout_s,
                    )
                meter = px.summary()
                (d / "proxy_log.json").write_text(json.dumps(px.log, indent=1))
            lvl = None if level is None else (math.nextafter(level, math.inf) if strict else level)
            rows.append(_seed_row(s, run, meter, initial, lvl, out / "rescore"))
            print(
                f"  seed {seed} {tool}: {len(run.calls)} calls, rc {run.rc}, {run.wall_s:.1f} s",
                file=sys.stderr,
            )
    after = task_digest(task_dir)
    result = {
        "task_dir": str(task_dir),
        "task_files": before,
        "task_unchanged": before == after,
        "model": s.model,
        "endpoint": s.base_url,
        "calls": s.calls,
        "seeds": list(s.seeds),
        "pinned": {**s.sampling, "n": 1, "seed_policy": "call k of seed s: seed (1000003*s + k) mod 2^31"},
        "token_cap": s.token_cap,
        "edit_format": {"workbench": EDIT_FORMAT["workbench"], tools[1]: EDIT_FORMAT[tools[1]]},
        "best_rule": BEST_RULE,
        "level": level,
        "level_rule": "beat the initial program (strictly above it)" if strict else f">= {level}",
        "initial": {"score": init.score, "valid": init.valid, "reason": init.reason},
        "sandbox": {"mode": mode, "workbench": "candidates evaluated in the sandbox", tools[1]: UNSANDBOXED},
        "openevolve_version": OPENEVOLVE_VERSION,
        "rows": rows,
    }
    (out / "compare.json").write_text(json.dumps(result, indent=1, default=str))
    return result


# -- the table -------------------------------------------------------------------------------------
def _ci(values: list[float]) -> str:
    from rsi_workbench.metrics.bootstrap import t_interval

    if not values:
        return "—"
    m, lo, hi, n = t_interval(values)
    if n < 2:
        return f"{m:.6g} (n=1)"
    return f"{m:.6g} [{lo:.6g}, {hi:.6g}]"


def _v(x: Any) -> str:
    if x is None:
        return "—"
    return f"{x + 0.0:.6g}" if isinstance(x, float) else str(x)  # + 0.0: no "-0"


def table(result: dict[str, Any]) -> str:
    """The printed comparison: declarations, one row per (seed, tool), means and paired differences."""
    rows = result["rows"]
    tools = list(dict.fromkeys(r["tool"] for r in rows))
    ini = result["initial"]
    lines = [
        f"compare openevolve: {result['task_dir']}",
        f"model {result['model']} at {result['endpoint']}, through a metering proxy per run "
        f"(cap {result['calls']} calls{'' if result['token_cap'] is None else ', ' + str(result['token_cap']) + ' tokens'})",
        f"pinned for both: temperature {result['pinned']['temperature']}, top_p {result['pinned']['top_p']}, "
        f"max_tokens {result['pinned']['max_tokens']}, n 1; seed policy: {result['pinned']['seed_policy']}",
        *(f"edit format {t}: {f}" for t, f in result["edit_format"].items()),
        result["best_rule"],
        f"initial program: score {_v(ini['score'])} ({'valid' if ini['valid'] else 'invalid: ' + str(ini['reason'])}), "
        f"scored once in the sandbox; level: {result['level_rule']}",
        f"WARNING: {UNSANDBOXED} (sandbox mode {result['sandbox']['mode']})",
        "",
        f"{'seed':>4}  {'tool':<16} {'best@N':>12} {'gain':>11} {'calls→level':>11} {'failed edits':>12} "
        f"{'tokens':>8}  {'proxy = own log':<15}",
    ]
    for r in rows:
        holds = "" if r["best_holds"] else "  (claimed best did not reproduce)"
        lines.append(
            f"{r['seed']:>4}  {r['tool']:<16} {_v(r['best_rescored']):>12} {_v(r['gain']):>11} "
            f"{_v(r['calls_to_level']) if r['calls_to_level'] else 'not reached':>11} "
            f"{r['failed_edits']:>5} of {r['meter']['ok_calls']:<4} {r['tokens']:>8}  "
            f"{'yes' if r['counts_match'] else 'NO'} ({r['meter']['ok_calls']} calls, {r['meter']['refused']} refused"
            f"{', ' + str(r['meter']['cut_at_max_tokens']) + ' cut at max_tokens' if r['meter']['cut_at_max_tokens'] else ''})"
            f"{'' if r['rc'] == 0 else '  rc ' + str(r['rc'])}{holds}"
        )
    lines += ["", f"over {len(result['seeds'])} seed(s), mean [Student-t 95% interval]:"]
    metrics = (
        ("best@N", "best_rescored"),
        ("gain", "gain"),
        ("failed edits", "failed_edits"),
        ("tokens", "tokens"),
    )
    by = {t: {r["seed"]: r for r in rows if r["tool"] == t} for t in tools}
    for label, key in metrics:
        cells = [_ci([float(r[key]) for r in by[t].values() if r[key] is not None]) for t in tools]
        pair = [
            float(by[tools[0]][sd][key]) - float(by[tools[1]][sd][key])
            for sd in result["seeds"]
            if len(tools) == 2 and by[tools[0]][sd][key] is not None and by[tools[1]][sd][key] is not None
        ]
        lines.append(
            f"  {label:<13} "
            + "   ".join(f"{t}: {c}" for t, c in zip(tools, cells))
            + (f"   {tools[0]} − {tools[1]}: {_ci(pair)}" if len(tools) == 2 else "")
        )
    for t in tools:
        got = [r["calls_to_level"] for r in by[t].values() if r["calls_to_level"]]
        lines.append(
            f"  calls→level   {t}: reached in {len(got)} of {len(by[t])} seed(s)"
            + (f", mean {_ci([float(g) for g in got])}" if got else "")
        )
    if all(r["gain"] is None or r["gain"] <= 0 for r in rows):
        lines.append(
            "NEITHER TOOL FOUND ANYTHING: no candidate of either tool beat the initial program in any seed"
        )
    if not all(r["counts_match"] for r in rows):
        lines.append("WARNING: the proxy's counts differ from a tool's own log (see compare.json)")
    lines.append(
        f"task directory unchanged: {'yes' if result['task_unchanged'] else 'NO — a tool wrote into it'}"
    )
    return "\n".join(lines)


# -- the command line --------------------------------------------------------------------------------
def endpoint_of(model: str) -> tuple[str, str, str | None, Any]:
    """(base_url, model name, API key, server process or None) for ``--model``: a YAML file with an
    OpenAI-compatible model block (``backend: openai``, ``base_url``, ``name``, ``api_key_env``;
    alone or under ``model:``), or ``default`` — the offline default model served on loopback by
    ``transformers serve`` (started here, stopped at the end)."""
    import os

    if model == "default":
        import socket

        from rsi_workbench.models.commands import serve_command, spawn_server
        from rsi_workbench.models.prepare import resolve_name

        path = str(resolve_name("default"))
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        proc = spawn_server(serve_command(path, port), env={**os.environ, "HF_HUB_OFFLINE": "1"})
        return f"http://127.0.0.1:{port}/v1", path, None, proc
    import yaml

    from rsi_workbench.models import ModelConfig

    p = Path(model)
    if not p.is_file():
        raise CompareError(f"--model {model}: not a file (a YAML model block) and not 'default'")
    data = yaml.safe_load(p.read_text()) or {}
    data = data.get("model", data) if isinstance(data, dict) else data
    try:
        cfg = ModelConfig.model_validate(data)
    except ValueError as e:
        raise CompareError(f"{p}: {e}") from None
    if cfg.backend != "openai" or not cfg.base_url:
        raise CompareError(
            f"{p}: the comparison needs an OpenAI-compatible server (backend: openai, base_url)"
        )
    key = os.environ.get(cfg.api_key_env) if cfg.api_key_env else None
    return cfg.base_url, cfg.name, key, None


def _wait_ready(base_url: str, proc: Any, timeout_s: float = 600.0) -> None:
    import urllib.request

    t0 = time.time()
    while time.time() - t0 < timeout_s:
        if proc.poll() is not None:
            raise CompareError(f"the model server exited (rc {proc.returncode}) before it answered")
        try:
            with urllib.request.urlopen(base_url + "/models", timeout=5):  # noqa: S310 (loopback)
                return
        except OSError:
            time.sleep(1.0)
    raise CompareError(f"the model server at {base_url} did not answer within {timeout_s:.0f} s")


def cmd_compare_openevolve(args: argparse.Namespace) -> int:
    seeds = tuple(range(args.seeds)) if args.seed_list is None else tuple(args.seed_list)
    out = Path(
        args.out or f"runs/compare-openevolve-{Path(args.task_dir).name}-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    if out.exists():
        print(f"error: {out} exists; pass a new --out", file=sys.stderr)
        return 2
    proc = None
    try:
        base_url, name, key, proc = endpoint_of(args.model)
        if proc is not None:
            _wait_ready(base_url, proc)
        s = CompareSettings(
            Path(args.task_dir), base_url, name, args.calls, seeds, args.temperature, args.top_p, args.max_tokens,
            args.level, args.openevolve_edit, args.allow_unsandboxed_peer, args.token_cap, key, args.sandbox,
        )  # fmt: skip
        out.mkdir(parents=True)
        print(f"WARNING: {UNSANDBOXED}", file=sys.stderr)
        result = run_compare(s, out)
    except CompareError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    finally:
        if proc is not None:
            from rsi_workbench.models.commands import stop_server

            stop_server(proc)
    text = table(result)
    (out / "table.txt").write_text(text + "\n")
    print(text)
    print(f"(everything: {out / 'compare.json'})")
    return 0


def register(subparsers: Any) -> None:
    """Add ``compare openevolve`` to the ``rsi-workbench`` command line."""
    p = subparsers.add_parser(
        "compare", help="side-by-side comparisons with other tools, metered at the server"
    )
    sub = p.add_subparsers(dest="compare_command", required=True, metavar="TOOL")
    c = sub.add_parser("openevolve", help="OpenEvolve vs the workbench's program agent on one task directory")
    c.add_argument(
        "task_dir", help="an OpenEvolve task directory (initial_program.py + evaluator.py); never written"
    )
    c.add_argument(
        "--model", required=True, help="a YAML model block of an OpenAI-compatible server, or 'default'"
    )
    c.add_argument("--calls", type=int, required=True, help="model calls per tool and seed (the proxy's cap)")
    c.add_argument("--seeds", type=int, default=3, help="number of seeds (0 .. S-1)")
    c.add_argument("--seed-list", type=int, nargs="+", help="explicit seeds instead of --seeds")
    c.add_argument("--temperature", type=float, default=0.7)
    c.add_argument("--top-p", type=float, default=0.95)
    c.add_argument("--max-tokens", type=int, default=2048)
    c.add_argument(
        "--level", type=float, help="score level for 'calls to level' (default: beat the initial program)"
    )
    c.add_argument(
        "--openevolve-edit", choices=["diff", "full"], default="diff", help="OpenEvolve's edit format"
    )
    c.add_argument("--token-cap", type=int, help="also cap prompt+completion tokens per tool and seed")
    c.add_argument(
        "--sandbox", choices=["best_effort", "required"], help="sandbox mode (stricter of this and the env)"
    )
    c.add_argument(
        "--allow-unsandboxed-peer", action="store_true",
        help="run OpenEvolve (which evaluates on the host, unsandboxed) even under sandbox mode 'required'",
    )  # fmt: skip
    c.add_argument("--out", help="output folder (default runs/compare-openevolve-<task>-<time>)")
    c.set_defaults(func=cmd_compare_openevolve)


__all__ = ["BEST_RULE", "UNSANDBOXED", "CompareError", "CompareSettings", "register", "run_compare", "table"]
