"""domains room of rsi_workbench (see docs/architecture.md)."""
