"""RSIAgent memory engine: wave throughput and commit+audit cost as memory grows.

1. **Wave throughput** (branches/min) of one BRS wave of ``--branches`` projects run through
   ``run_rsiagent`` with ``max_parallel`` 1 and 2, measured from the run's own events (from
   ``memory_wave_started`` to ``memory_wave_committed``: materialising the snapshot per branch, the
   branches, the verifier, and the serial audited commits). Each branch does a fixed amount of real
   work in its attempt, in one of two forms:
   - ``subprocess``: a child ``python -S`` running a fixed integer loop (like a sandboxed action
     program or a browser step: the work happens outside this interpreter);
   - ``in-process``: the same loop in the branch thread itself (pure Python, holds the GIL).
2. **Commit + audit cost per branch** as the canonical memory holds 10 / 100 / 1000 files: one
   ``commit_branch`` (distil = one new file and one modified file, shingle audit of the changed files
   against a host-only corpus, snapshot stored as artifacts, outcome record with the file diff), and,
   for contrast, the audit alone: incremental (changed files only, as the engine does) vs every file.

Run: ``python benchmarks/memory_bench.py`` (defaults as recorded in benchmarks/RESULTS.md).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rsi_workbench.memory import (
    Attempt,
    CurriculumRequest,
    Evidence,
    MemoryTree,
    Project,
    ShingleIndex,
    VerifierReport,
    run_rsiagent,
    shingle_audit,
)
from rsi_workbench.memory.branches import BranchResult
from rsi_workbench.memory.commits import commit_branch
from rsi_workbench.records import Run

LOOP = "s = 0\nfor i in range({n}):\n    s += i * i\n"


class BenchWorkspaceDouble:
    def __init__(self, project: Project):
        self.project = project

    def close(self) -> None:
        pass


class BenchEnvDouble:
    name = "bench-double"

    def targets(self) -> list[Project]:
        return [Project("t-bench", "bench target")]

    def open(self, project: Project, *, seed: int, purpose: str) -> BenchWorkspaceDouble:
        return BenchWorkspaceDouble(project)

    def host_only_texts(self) -> list[str]:
        return ["the hidden target utterance nobody may copy"]

    def official_score(self, workspace: Any) -> float:
        return 1.0


class WorkingActorDouble:
    """Does a fixed amount of real work per attempt, then writes one procedure file per project."""

    def __init__(self, mode: str, n: int):
        self.mode, self.n = mode, n

    def attempt(self, project: Project, workspace: Any, memory: MemoryTree, feedback: Any) -> Attempt:
        if project.is_target:
            pass  # evaluation: no work
        elif self.mode == "subprocess":
            subprocess.run([sys.executable, "-S", "-c", LOOP.format(n=self.n)], check=True)
        else:
            exec(LOOP.format(n=self.n), {})
        return Attempt(project, Evidence(project.instruction, {"done": True}, {}), {}, calls=1)

    def distil(self, attempt: Attempt, report: VerifierReport, canonical: MemoryTree) -> MemoryTree:
        return canonical.with_changes(
            {f"procedures/{attempt.project.id}.md": f"how to do {attempt.project.id}"}
        )

    def summarise_failure(self, attempt: Attempt, report: VerifierReport) -> str:
        return ""


class PassVerifierDouble:
    def verify(self, project: Project, evidence: Evidence) -> VerifierReport:
        return VerifierReport("PASS", ("done",))


class OneWaveCurriculumDouble:
    def __init__(self, n: int):
        self.n = n

    def author(self, request: CurriculumRequest) -> str:
        if request.wave > 1:
            return json.dumps({"decision": "SATURATED", "rationale": "", "projects": []})
        projects = [{"id": f"p{i}", "instruction": f"practice {i}"} for i in range(self.n)]
        return json.dumps({"decision": "WAVE", "rationale": "bench", "projects": projects})


def wave_seconds(root: Path, mode: str, max_parallel: int, branches: int, n: int) -> float:
    run = Run.create(root / f"{mode}-{max_parallel}-{time.monotonic_ns()}", {"bench": mode})
    settings = {
        "ablation": "brs_only",
        "max_parallel": max_parallel,
        "max_waves": 1,
        "project_budget": branches,
    }
    run_rsiagent(
        BenchEnvDouble(),
        lambda: WorkingActorDouble(mode, n),
        PassVerifierDouble(),
        OneWaveCurriculumDouble(branches),
        settings,
        run,
    )
    t0 = run.events("memory_wave_started")[0].time
    t1 = run.events("memory_wave_committed")[0].time
    run.close()
    return t1 - t0


def raw_seconds(mode: str, max_parallel: int, branches: int, n: int) -> float:
    """The same branch work alone, in the same thread pool, with no engine around it."""
    actor = WorkingActorDouble(mode, n)
    projects = [Project(f"p{i}", f"practice {i}") for i in range(branches)]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=min(max_parallel, branches)) as pool:
        list(pool.map(lambda p: actor.attempt(p, None, MemoryTree(), None), projects))
    return time.perf_counter() - t0


def throughput_table(root: Path, branches: int, n: int, repeats: int) -> list[str]:
    rows = [
        "| branch work | max_parallel | wave s (median) | branches/min | ratio to max_parallel 1 "
        "| work alone s (median) | engine overhead per branch, ms |"
    ]
    rows.append("|---|---:|---:|---:|---:|---:|---:|")
    for mode in ("subprocess", "in-process"):
        secs: dict[int, list[float]] = {1: [], 2: []}
        raw: dict[int, list[float]] = {1: [], 2: []}
        for _ in range(repeats):  # interleaved, so both settings see the same machine load
            for mp in (1, 2):
                secs[mp].append(wave_seconds(root, mode, mp, branches, n))
                raw[mp].append(raw_seconds(mode, mp, branches, n))
        base = statistics.median(secs[1])
        for mp in (1, 2):
            med, work = statistics.median(secs[mp]), statistics.median(raw[mp])
            rows.append(
                f"| {mode} | {mp} | {med:.2f} | {60 * branches / med:.1f} | {base / med:.2f}× "
                f"| {work:.2f} | {1000 * (med - work) / branches:.0f} |"
            )
    return rows


def _text(rng: random.Random, vocab: list[str], words: int) -> str:
    return " ".join(rng.choice(vocab) for _ in range(words))


def commit_table(root: Path, sizes: list[int], commits: int) -> list[str]:
    rng = random.Random(0)
    vocab = [f"w{i}" for i in range(2000)]
    host = [_text(rng, vocab, 10) for _ in range(50)]
    index = ShingleIndex(host, 8)
    rows = [
        "| memory files | bytes | commit (distil+audit+snapshot+record) ms | audit, changed files ms | audit, every file ms |",
        "|---:|---:|---:|---:|---:|",
    ]
    for size in sizes:
        canonical = MemoryTree({f"facts/f{i:05d}.md": _text(rng, vocab, 60) for i in range(size)})
        run = Run.create(root / f"commit-{size}", {"bench": size})
        total, audit_inc, audit_all = [], [], []
        for k in range(commits):
            project = Project(f"p{k}", "practice")
            first = next(iter(canonical.files))

            class DistilDouble:
                def distil(
                    self, attempt: Any, report: Any, canon: MemoryTree, k: int = k, first: str = first
                ) -> MemoryTree:
                    return canon.with_changes(
                        {f"lessons/new{k}.md": _text(rng, vocab, 60), first: _text(rng, vocab, 60)}
                    )

            res = BranchResult(
                k + 1, project, 1, "ok", actor=DistilDouble(), reports=[VerifierReport("PASS", ())]
            )  # type: ignore[arg-type]
            res.attempt = Attempt(project, Evidence("practice", {}, {}), {})
            t0 = time.perf_counter()
            after, _ = commit_branch(
                run, res, canonical, audit_index=index, wave_key=0, wave=1, phase="broad", unit="brs"
            )
            total.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            shingle_audit(after, index, 8, canonical=canonical)
            audit_inc.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            shingle_audit(after, index, 8)
            audit_all.append(time.perf_counter() - t0)
            canonical = after
        run.close()
        ms = lambda xs: 1000 * statistics.median(xs)  # noqa: E731
        rows.append(
            f"| {canonical.n_files} | {canonical.n_bytes:,} | {ms(total):.1f} | {ms(audit_inc):.2f} | {ms(audit_all):.1f} |"
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--branches", type=int, default=8, help="projects in the wave")
    ap.add_argument(
        "--loop", type=int, default=3_000_000, help="iterations of the fixed work loop per branch"
    )
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sizes", default="10,100,1000")
    ap.add_argument("--commits", type=int, default=10, help="commits measured per memory size")
    ap.add_argument("--out", default=None, help="folder for the bench runs (default: a temporary folder)")
    args = ap.parse_args()
    root = Path(args.out or tempfile.mkdtemp(prefix="memory-bench-"))
    print(f"# {os.cpu_count()} cores, load average before: {os.getloadavg()[0]:.1f}")
    print(
        f"# wave throughput: {args.branches} branches, loop {args.loop:,}, {args.repeats} repeats, runs in {root}"
    )
    print("\n".join(throughput_table(root, args.branches, args.loop, args.repeats)))
    print(
        f"\n# commit + audit per branch ({args.commits} commits per size, host-only corpus 50 x 10 words, n = 8)"
    )
    print("\n".join(commit_table(root, [int(s) for s in args.sizes.split(",")], args.commits)))
    print(f"# load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
