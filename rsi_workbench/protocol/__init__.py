"""protocol room of rsi_workbench (see DESIGN.md)."""
