"""Schema-constrained vs plain generation of the RSIAgent curriculum handoff on the local backend.

    python benchmarks/constrained_bench.py [--model default] [--max-tokens 160] [--repeats 3] [--threads 1]

The prompt is the curriculum template rendered for the code-repair smoke's first broad turn
(``configs/rsiagent/llm_smoke.yaml``: target Python/111, pool Python/15 and Python/41); each repeat runs
plain greedy generation, then the same call under ``handoff_decoding_schema`` (llguidance), and reports
completion tokens, seconds (prompt prefill included), generated tokens/s, the constraint's own time
(llguidance matching + logit masking, inside those seconds) and whether the engine's ``parse_handoff``
accepts the answer. The one-off cost of building llguidance's tokenizer is timed apart (it happens on a model's
first constrained call).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="default")
    ap.add_argument("--max-tokens", type=int, default=160)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()

    from rsi_workbench.memory.handoff import HANDOFF_SCHEMA, HandoffError, parse_handoff
    from rsi_workbench.memory.llm_roles import _template, handoff_decoding_schema
    from rsi_workbench.models import ModelConfig, constrain
    from rsi_workbench.models.local import TransformersLM

    lm = TransformersLM.load(ModelConfig(name=args.model, device="cpu", cpu_threads=args.threads))
    prompt = _template("rsiagent_curriculum").render(
        phase="broad",
        wave=1,
        targets="- python-111: Repair the program of HumanEvalFix task Python/111 (entry point histogram).",
        accepts="'repair <task>' for a pool task (Python/15, Python/41) or 'practise a <bug type> bug'",
        results="(none yet)",
        memory="(empty)",
        memory_note="0 of 0 files shown",
        failure="none",
        passed=None,
        schema=json.dumps(HANDOFF_SCHEMA, separators=(",", ":")),
    )
    msgs = [{"role": "user", "content": prompt}]
    schema = handoff_decoding_schema(3, args.max_tokens)
    t0 = time.perf_counter()
    lm._constraint = constrain.SchemaConstraint(lm.tokenizer, int(lm.model.config.vocab_size), lm._eos_ids())
    lm._constraint.grammar(schema)
    setup = time.perf_counter() - t0
    print(
        f"model {args.model}, max_tokens {args.max_tokens}, {args.threads} thread(s), load {os.getloadavg()[0]:.1f}"
    )
    print(f"llguidance tokenizer + grammar build (once per model/schema): {setup:.2f} s")
    rates: dict[str, list[float]] = {"plain": [], "constrained": []}
    for rep in range(args.repeats):
        for mode in ("plain", "constrained"):
            kw = {"json_schema": schema} if mode == "constrained" else {}
            r = lm.chat(msgs, max_tokens=args.max_tokens, seed=1, **kw)
            try:
                parse_handoff(r.text)
                ok = "valid handoff"
            except HandoffError as e:
                ok = f"failed turn: {e.reason[:70]}"
            rate = r.completion_tokens / r.latency_s
            rates[mode].append(rate)
            mask = r.meta.get("constraint_s")
            print(
                f"repeat {rep} {mode:11s} {r.completion_tokens:4d} tokens {r.latency_s:6.1f} s "
                f"{rate:5.2f} tok/s finish {r.finish_reasons[0]:6s} {ok}"
                + (
                    ""
                    if mask is None
                    else f"; matching+masking {mask:.2f} s = {1000 * mask / r.completion_tokens:.1f} ms/token"
                )
            )
            if rep == 0:
                print(f"    {r.text[:300]!r}")
    for mode, xs in rates.items():
        print(f"median {mode}: {statistics.median(xs):.2f} tok/s")


if __name__ == "__main__":
    main()
