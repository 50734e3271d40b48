"""RSI Workbench's OpenEvolve compatibility package (NOT OpenEvolve itself).

It is put on the path of a sandboxed OpenEvolve evaluator only when a real ``openevolve`` package is
not importable there, so that ``from openevolve.evaluation_result import EvaluationResult`` works
without OpenEvolve's controller and its dependencies. It holds only
:mod:`openevolve.evaluation_result`; see docs/extending-dreaming.md.
"""

RSI_WORKBENCH_COMPAT = True
