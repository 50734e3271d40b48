"""RSI Workbench: runnable, inspectable recursive self-improvement protocols on one record spine."""

__version__ = "0.1.0"
