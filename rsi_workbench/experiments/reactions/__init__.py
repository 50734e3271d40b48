"""The reactions experiment of RSI-Anything (``experiment: reactions``): which reaction condition to
measure next on a measured yield grid, through the retained-pair protocol engine
(:mod:`.experiment` runs and reports it, :mod:`.binding` binds the engine to the grid)."""
