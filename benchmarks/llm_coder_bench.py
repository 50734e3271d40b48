"""LLM coder benchmark: repair candidates/s of ``LLMCoder`` on CPU, batched vs one call per sample.

Run: ``python benchmarks/llm_coder_bench.py [--tasks 2] [--k 4] [--max-tokens 128] [--threads 1]``.
The offline default model (SmolLM2-135M-Instruct) on CPU proposes ``k`` samples (``sample_cap = k``,
so both modes draw exactly the same number of samples) for each of the first ``--tasks``
HumanEvalFix tasks, from the tasks' buggy programs and their real public-test feedback:

- batched: one chat call asks for the ``k`` samples (``n = k``, one batched ``generate``);
- one at a time: ``k`` chat calls of ``n = 1``.

It prints samples, valid candidates, generated tokens, seconds, samples/s, valid candidates/s and
tokens/s, and the ratio of the two modes. The model is loaded (and warmed) before any timing.
Tests never assert timings; results go to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import time
from typing import Any


class CountingLM:
    """Wraps a backend and sums the completion tokens of its answers."""

    def __init__(self, lm: Any):
        self.lm, self.tokens = lm, 0

    def chat(self, messages: Any, **kw: Any) -> Any:
        res = self.lm.chat(messages, **kw)
        self.tokens += res.completion_tokens
        return res


def run_mode(
    lm: Any, tasks: list[Any], feedback: list[Any], k: int, max_tokens: int, batched: bool
) -> dict[str, float]:
    from rsi_workbench.domains.code_repair.llm_coder import LLMCoder, is_invalid

    counting = CountingLM(lm)
    coder = LLMCoder(counting, max_tokens=max_tokens, sample_cap=k, batched=batched)
    samples = valid = 0
    t0 = time.perf_counter()
    for i, (task, fb) in enumerate(zip(tasks, feedback, strict=True)):
        cands = coder.propose(task, task.program, fb, k, random.Random(i))
        samples += len(cands)
        valid += sum(is_invalid(c) is None for c in cands)
    wall = time.perf_counter() - t0
    return {"samples": samples, "valid": valid, "tokens": counting.tokens, "wall": wall}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=2)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (0: torch's default)")
    args = ap.parse_args()

    from rsi_workbench.domains.code_repair import RepairFeedback, Sandbox, load_humanevalfix
    from rsi_workbench.models import ModelConfig, load_backend

    tasks = load_humanevalfix()[: args.tasks]
    sb = Sandbox()
    feedback = [
        RepairFeedback(t.program, tuple(sb.run_suite(t.program, t.public_tests, t.entry_point)))
        for t in tasks
    ]
    lm = load_backend(ModelConfig(name="default", device="cpu"))
    if hasattr(lm, "cpu_threads"):
        lm.cpu_threads = args.threads or None
    lm.chat([{"role": "user", "content": "Say hi."}], max_tokens=2)  # warm-up: load before timing
    rows = [
        ("batched (one call, n = k)", run_mode(lm, tasks, feedback, args.k, args.max_tokens, True)),
        ("one at a time (k calls, n = 1)", run_mode(lm, tasks, feedback, args.k, args.max_tokens, False)),
    ]
    print(
        f"\n{platform.machine()}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
        f"SmolLM2-135M-Instruct on CPU ({args.threads or 'default'} threads), {args.tasks} HumanEvalFix tasks, "
        f"k={args.k} samples each, max_tokens {args.max_tokens}, temperature 0.8"
    )
    print(
        "\n| mode | samples | valid candidates | generated tokens | seconds | samples/s | valid candidates/s | tokens/s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in rows:
        w = r["wall"]
        print(
            f"| {name} | {r['samples']:.0f} | {r['valid']:.0f} | {r['tokens']:.0f} | {w:.1f} | "
            f"{r['samples'] / w:.3f} | {r['valid'] / w:.3f} | {r['tokens'] / w:.1f} |"
        )
    b, s = rows[0][1], rows[1][1]
    print(
        f"\nbatched / one at a time, samples/s: {(b['samples'] / b['wall']) / (s['samples'] / s['wall']):.2f}x"
    )


if __name__ == "__main__":
    main()
