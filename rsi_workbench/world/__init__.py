"""World models (predictors phi of RSI-Anything, equations 2-5 and 12).

Encoders (``minilm`` default, ``tiny``, a local HF checkpoint with LoRA), the OPF latent predictor
with an EMA target, status/runtime and whole-suite readouts, temperature calibration, training and
``adapt``, checkpoints as sha256 artifacts, the capacity-matched static verifier and the quality
metrics. torch is imported by the submodules; import them directly for a lighter import.
"""

from __future__ import annotations

from rsi_workbench.world.metrics import ECEResult, brier_5class, ece, nll, ranking_accuracy, runtime_error

__all__ = ["ECEResult", "brier_5class", "ece", "nll", "ranking_accuracy", "runtime_error"]
