"""Experiments: each binds one engine to one domain -- its config model, binding, runner and report.

A layer of docs/architecture.md: above the engines (``protocol``, ``replay``, ``discovery``) and the domains,
which know nothing of each other. Every experiment kind that ``rsi-workbench run`` dispatches on
(``experiment:`` in a config) is a module here exposing ``Config``, ``run_experiment`` and ``report``:

- ``code_repair``: RSI-Anything's retained-pair loop on HumanEvalFix-style repair tasks;
- ``reactions``: the same loop choosing which reaction condition to measure on a yield grid;
- ``dreaming``: Dream-RSI's replay and dreaming loop on the math discovery tasks;
- ``discovery`` / ``discovery_round`` / ``discovery_rounds``: DiscoveryRSI's campaign, improvement round
  and closed rounds (eq. 11) on the tabular domain; ``discovery_credit``: whether credit weights carry
  information (theta+ fitted credit-weighted, uniform and shuffled).
"""
