"""RSIAgent's MiniWoB++ environment and its roles, plug-ins of the memory engine (:mod:`rsi_workbench.memory`).

:mod:`.miniwob` (the environment: targets, practice, workspaces running action programs in the
sandbox), :mod:`.miniwob_llm` (text workspaces for a model actor), :mod:`.search` and
:mod:`.interpreter` (the generic action-program search), the built-in roles :mod:`.actor`,
:mod:`.verifier` and :mod:`.curriculum`, :mod:`.matched` (matched learning budgets, the verifier
audit, fresh-instance evaluation) and :mod:`.settings` (the settings blocks and the built-in arm).
The ``rsiagent`` experiment composes them. Model-backed roles are the engine's
(:mod:`rsi_workbench.memory.llm_roles`).
"""
