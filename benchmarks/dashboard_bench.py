"""Gate-tuner recompute latency for one slider move, on the largest code-repair experiment at hand.

Measures, side by side in one run: loading the run's events once; one slider move recomputed cold
(every reliability verdict, trigger and gate of every run, by the protocol's pure functions); the
same move again (cached); the full refresh the dashboard does (recompute + decision matrix figure).
A second block scales the real recorded inputs up to the full experiment's size (164 tasks × 3
seeds: each run's reliability units and runs replicated) to project the latency there.

    python benchmarks/dashboard_bench.py [EXPERIMENT_DIR]
"""

from __future__ import annotations

import platform
import statistics
import sys
import time
from pathlib import Path

from rsi_workbench.viz.gates import GateInputs, gate_inputs, gate_matrix_info, plot_gate_matrix, recompute
from rsi_workbench.viz.protocol import load_protocol_runs, protocol_run_paths


def _largest() -> Path:
    cands = [
        Path("runs/code_repair/full"),
        Path("runs/code_repair/small"),
        *sorted(Path("tests/artifacts/runs").glob("code_repair-*")),
    ]
    have = [c for c in cands if c.exists() and protocol_run_paths(c)]
    if not have:
        sys.exit(
            "no code-repair experiment found: run `rsi-workbench run configs/code_repair/small.yaml` first"
        )
    return max(have, key=lambda c: sum((p / "events.jsonl").stat().st_size for p in protocol_run_paths(c)))


def _time(fn, repeat: int = 5) -> float:
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def _scaled(inputs: list[GateInputs], factor: int, copies: int) -> list[GateInputs]:
    out = []
    for c in range(copies):
        for gi in inputs:
            cycles = [
                type(x)(
                    x.cycle,
                    x.units * factor,
                    x.reliability,
                    x.adaptation,
                    x.policy_trigger,
                    x.gates,
                    x.assembly,
                )
                for x in gi.cycles
            ]
            out.append(GateInputs(f"{gi.run}#{c}", gi.declared, cycles))
    return out


def main() -> None:
    exp = Path(sys.argv[1]) if len(sys.argv) > 1 else _largest()
    t0 = time.perf_counter()
    runs = load_protocol_runs(exp)
    inputs = [gate_inputs(r) for r in runs]
    load_s = time.perf_counter() - t0
    declared = inputs[0].declared
    units = sum(len(c.units) for gi in inputs for c in gi.cycles)
    n_dec = sum(len(recompute(gi, declared)) for gi in inputs)

    def move(t):  # one slider move: every decision of every run
        return [d for gi in inputs for d in recompute(gi, t)]

    cache: dict = {}

    def cached(t):
        if t not in cache:
            cache[t] = move(t)
        return cache[t]

    moved = declared.with_(max_brier=declared.max_brier + 0.05)
    cold = _time(lambda: move(moved))
    cached(moved)
    warm = _time(lambda: cached(moved))
    full = _time(lambda: plot_gate_matrix(gate_matrix_info(move(moved))))
    print(
        f"# dashboard bench — {exp} — {platform.node()} {platform.processor() or platform.machine()}, {time.strftime('%Y-%m-%d %H:%M')}"
    )
    print(
        f"runs {len(runs)}, decisions {n_dec}, reliability units (summed over cycles) {units}, load {load_s * 1e3:.0f} ms\n"
    )
    print(f"{'what':<52} {'median ms':>10} {'× cold':>8}")
    for name, v in (("slider move, cold recompute", cold), ("slider move, cached (same thresholds)", warm),
                    ("slider move + decision-matrix figure (dashboard)", full)):  # fmt: skip
        print(f"{name:<52} {v * 1e3:>10.2f} {v / cold:>8.3f}")
    # projection to the full experiment (164 tasks x 3 seeds)
    tasks = len(runs[0].of("initial_observation")) or 1
    factor = max(1, round(164 / tasks))
    big = _scaled(inputs, factor, 3)
    big_units = sum(len(c.units) for gi in big for c in gi.cycles)
    big_cold = _time(lambda: [d for gi in big for d in recompute(gi, moved)], repeat=3)
    print(f"\nscaled to the full experiment: units ×{factor}, runs ×3 -> {len(big)} runs, {big_units} units")
    print(
        f"{'slider move, cold recompute (projected full size)':<52} {big_cold * 1e3:>10.2f} {big_cold / cold:>8.3f}"
    )


if __name__ == "__main__":
    main()
