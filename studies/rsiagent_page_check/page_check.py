"""Which MiniWoB++ pages the built-in action language can solve: a check before any arm runs.

``python studies/rsiagent_page_check/page_check.py PAGE [PAGE ...] --instances 3 --out FILE``
opens one browser per page and, on ``--instances`` check instances (seeds in the page-check range,
disjoint from every target, practice and fresh seed), tries the generic search's candidates in their
order (:func:`.search.candidates`, at most ``--max-candidates``) until one reaches MiniWoB++'s raw
reward 1. Per instance it records the template, how many candidates the page offers, the rank of
the first that reached reward 1 (None: none did), whether the first candidate (what an empty memory
tries) did, and the built-in verifier's verdict beside each tried candidate's raw reward. A page is
``reachable`` when every checked instance reached reward 1. The compact JSON goes to ``--out``.

``--reload`` reloads the page before every episode. Without it the candidates share one loaded page
and a widget's state can survive MiniWoB++'s reset: the jQuery date picker of the choose-date pages
keeps what an earlier candidate did, so the date-picker candidate fails after the others although it
reaches reward 1 when run first (the check behind ``miniwob_pages10.yaml`` ran without it).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rsi_workbench.domains.gui import EpisodeLimits
from rsi_workbench.domains.gui.rsiagent.miniwob import CHECK_BASE, SPAN, MiniwobWorkspace
from rsi_workbench.domains.gui.rsiagent.search import candidates, template_key
from rsi_workbench.domains.gui.rsiagent.verifier import MiniwobVerifier, family
from rsi_workbench.memory import Evidence, InfraFailure, Project
from rsi_workbench.protocol.seeds import derive_seed

SALT = "rsiagent-page-check"


def check_seeds(page: str, n: int) -> list[int]:
    """The page check's instance seeds of ``page`` (the check range)."""
    return [CHECK_BASE + derive_seed(SALT, page, j) % SPAN for j in range(n)]


def _try(ws: MiniwobWorkspace, page: str, steps: Any, verifier: MiniwobVerifier) -> tuple[float | None, str]:
    ws._raw_reward = None
    ex = ws.run(steps)
    final = {"elements": ex.pop("final_elements")}
    report = verifier.verify(Project("check", f"page: {page}"), Evidence(ex["utterance"], final, ex))
    return ws._raw_reward, report.verdict


def check_instance(
    ws: MiniwobWorkspace, page: str, seed: int, max_candidates: int, verifier: MiniwobVerifier
) -> dict[str, Any]:
    """Try the generic candidates on one instance until one reaches raw reward 1."""
    ws.seed = seed
    obs = ws.observe()
    found = candidates(obs)
    tried: list[dict[str, Any]] = []
    first_success = None
    for k, c in enumerate(found[:max_candidates]):
        raw, verdict = _try(ws, page, c.steps, verifier)
        tried.append({"candidate": c.id, "raw_reward": raw, "verdict": verdict})
        if raw is not None and raw >= 1.0:
            first_success = k
            break
    return {
        "seed": seed,
        "template": template_key(obs.utterance, obs.fields),
        "fields": [k for k, _ in obs.fields],
        "n_candidates": len(found),
        "first_success_rank": first_success,
        "first_candidate_success": first_success == 0,
        "tried": tried,
    }


def check_page(page: str, instances: int, max_candidates: int, *, reload: bool = False) -> dict[str, Any]:
    """Every check instance of one page in one browser (reloaded before each episode with ``reload``)."""
    t0 = time.perf_counter()
    seeds = check_seeds(page, instances)
    verifier = MiniwobVerifier()
    rows: list[dict[str, Any]] = []
    error = None
    try:
        ws = MiniwobWorkspace(page, seeds[0], "check", EpisodeLimits(max_actions=20, page_timer_s=60.0))
    except InfraFailure as e:
        return {"page": page, "error": str(e), "reachable": False, "instances": []}
    if reload:
        ws.env.reload_every = 1
    try:
        for s in seeds:
            rows.append(check_instance(ws, page, s, max_candidates, verifier))
    except InfraFailure as e:
        error = str(e)
    except Exception as e:  # a page whose fields the search cannot read: not reachable, say why
        error = f"{type(e).__name__}: {e}"
    finally:
        ws.close()
    reached = sum(r["first_success_rank"] is not None for r in rows)
    decided = [t for r in rows for t in r["tried"] if t["verdict"] != "UNVERIFIED"]
    agree = sum((t["verdict"] == "PASS") == ((t["raw_reward"] or 0) >= 1.0) for t in decided)
    return {
        "page": page,
        "verifier_family": family(page),
        "checked": len(rows),
        "reached": reached,
        "reachable": error is None and reached == instances,
        "first_candidate_successes": sum(r["first_candidate_success"] for r in rows),
        "templates": len({r["template"] for r in rows}),
        "verifier_agreement": [agree, len(decided)],
        "error": error,
        "wall_s": round(time.perf_counter() - t0, 1),
        "instances": rows,
    }


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
        )
        return out.stdout.strip()
    except OSError:
        return ""


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (module docstring)."""
    ap = argparse.ArgumentParser(prog="python studies/rsiagent_page_check/page_check.py")
    ap.add_argument("pages", nargs="+")
    ap.add_argument("--instances", type=int, default=3)
    ap.add_argument("--max-candidates", type=int, default=16)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--reload", action="store_true", help="reload the page before every episode")
    args = ap.parse_args(argv)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    results = []
    for page in args.pages:
        r = check_page(page, args.instances, args.max_candidates, reload=args.reload)
        results.append(r)
        print(
            f"{page}: reached {r.get('reached', 0)}/{args.instances}, first candidate "
            f"{r.get('first_candidate_successes', 0)}, family {r.get('verifier_family')}, "
            f"{r.get('wall_s', '-')} s{'; ' + str(r['error']) if r.get('error') else ''}",
            flush=True,
        )
    body = {
        "command": "python studies/rsiagent_page_check/page_check.py "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "started": started,
        "commit": _commit(),
        "instances": args.instances,
        "max_candidates": args.max_candidates,
        "reload": args.reload,
        "rule": "reachable: every checked instance reached raw reward 1 with some candidate",
        "reachable": [r["page"] for r in results if r["reachable"]],
        "pages": results,
    }
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(body, indent=1) + "\n")
    print("reachable:", ", ".join(body["reachable"]) or "none")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
