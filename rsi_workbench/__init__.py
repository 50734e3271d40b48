"""RSI Workbench: runnable, inspectable recursive self-improvement protocols on one record spine."""

__version__ = "0.1.0"


def _mount_widgets() -> None:
    """Make ``widgets/`` importable as ``rsi_workbench.widgets`` in a checkout / editable install.

    pyproject maps it with ``package-dir``, which regular installs honour but setuptools' editable
    finder does not for a nested package living outside the package folder.
    """
    import importlib.util
    import os
    import sys

    init = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "widgets", "__init__.py")
    if "rsi_workbench.widgets" in sys.modules or not os.path.isfile(init):
        return
    spec = importlib.util.spec_from_file_location(
        "rsi_workbench.widgets", init, submodule_search_locations=[os.path.dirname(init)]
    )
    if spec is None or spec.loader is None:  # pragma: no cover
        return
    try:
        importlib.import_module("rsi_workbench.widgets")  # an installed (non-editable) copy wins
        return
    except ImportError:
        pass
    mod = importlib.util.module_from_spec(spec)
    sys.modules["rsi_workbench.widgets"] = mod
    spec.loader.exec_module(mod)


_mount_widgets()
