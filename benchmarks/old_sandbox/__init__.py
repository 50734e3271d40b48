"""Frozen copy of the code-repair sandbox as it was before issue 15 (commit 87a1af7), kept only so
``benchmarks/sandbox_bench.py`` can measure the new sandbox side by side with the old runner.
Never import it from the package."""
