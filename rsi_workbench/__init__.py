"""RSI Workbench: runnable, inspectable recursive self-improvement protocols on one record spine.

``rsi_workbench.widgets`` is the top-level ``widgets/`` folder of the repository, reached through the
symlink ``rsi_workbench/widgets -> ../widgets`` (so an editable install and a wheel both see it as
an ordinary subpackage, and the import-linter contracts cover it).
"""

__version__ = "0.1.0"
