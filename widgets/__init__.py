"""Panel dashboards and ipywidgets components, installed as ``rsi_workbench.widgets``."""
