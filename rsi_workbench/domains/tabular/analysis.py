"""The executed analysis: nested model comparison on fixed patient-level splits, bootstrap interval.

For "feature group X adds information about outcome Y beyond baseline B": every patient is
assigned once to one of K outer folds (seeded, stratified for binary outcomes, the same file for
every hypothesis of a direction); in each outer fold the baseline model (B) and the extended
model (B + X) are tuned by an inner cross-validation on the training patients only and predict the
held-out patients. The held-out metric (AUC or R²) of the pooled out-of-fold predictions gives
Δ = metric(B + X) − metric(B), with a paired patient-level bootstrap interval. Controls are real
comparisons too: ``permutation`` refits B + X with X shuffled across patients (the chance
alternative), ``added_alone`` fits X without B (no information vs. redundant with B).
"""

from __future__ import annotations

import io
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from rsi_workbench.domains.tabular.catalog import Direction, direction, load_direction

CONTROLS = ("permutation", "added_alone")
_MODEL_CACHE: dict[tuple[Any, ...], np.ndarray] = {}


@dataclass(frozen=True)
class AnalysisSpec:
    """Machine-readable plan π of a tabular hypothesis (what the Compiler turns into a task)."""

    direction: str
    baseline: tuple[str, ...]
    added: tuple[str, ...]
    threshold: float
    controls: tuple[str, ...] = CONTROLS
    interval: float = 0.95
    outer_folds: int = 5
    inner_folds: int = 3
    split_seed: int = 0
    n_bootstrap: int = 400
    deferred: tuple[str, ...] = field(default=())  # unavailable groups kept as explicit dependencies

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> AnalysisSpec:
        kw = {k: tuple(v) if isinstance(v, list) else v for k, v in d.items()}
        return cls(**kw)  # type: ignore[arg-type]

    def required_groups(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.baseline + self.added))


def fixed_splits(name: str, outer_folds: int, split_seed: int) -> np.ndarray:
    """Outer fold of every patient — seeded, stratified for binary outcomes, shared by a direction."""
    from sklearn.model_selection import KFold, StratifiedKFold

    X, y = load_direction(name)
    d = direction(name)
    folds = np.empty(len(y), dtype=int)
    splitter = (StratifiedKFold if d.task == "binary" else KFold)(
        n_splits=outer_folds, shuffle=True, random_state=split_seed
    )
    for k, (_, test) in enumerate(splitter.split(np.zeros(len(y)), y if d.task == "binary" else None)):
        folds[test] = k
    return folds


def splits_csv(name: str, outer_folds: int, split_seed: int) -> bytes:
    """The split file (patient_id, fold) as bytes; its sha256 pins the splits in a compiled task."""
    folds = fixed_splits(name, outer_folds, split_seed)
    buf = io.StringIO()
    buf.write("patient_id,fold\n")
    for i, k in enumerate(folds):
        buf.write(f"{i},{k}\n")
    return buf.getvalue().encode()


def _make_model(d: Direction, reg: float) -> Any:
    from sklearn.linear_model import LogisticRegression, Ridge

    if d.task == "binary":
        return LogisticRegression(C=reg, solver="liblinear", max_iter=1000)
    return Ridge(alpha=reg)


def _fit_predict(d: Direction, reg: float, Xtr: np.ndarray, ytr: np.ndarray, Xte: np.ndarray) -> np.ndarray:
    mu, sd = Xtr.mean(axis=0), Xtr.std(axis=0)
    sd[sd == 0] = 1.0
    model = _make_model(d, reg).fit((Xtr - mu) / sd, ytr)
    Z = (Xte - mu) / sd
    return model.predict_proba(Z)[:, 1] if d.task == "binary" else model.predict(Z)


GRID = {"binary": (0.01, 0.1, 1.0, 10.0), "regression": (0.1, 1.0, 10.0, 100.0)}


def _oof(
    d: Direction,
    X: np.ndarray,
    y: np.ndarray,
    folds: np.ndarray,
    inner_folds: int,
    seed: int,
) -> np.ndarray:
    """Out-of-fold predictions; the regularisation is tuned by an inner CV on each outer training set."""
    from sklearn.model_selection import KFold, StratifiedKFold

    pred = np.empty(len(y), dtype=float)
    for k in np.unique(folds):
        tr, te = np.flatnonzero(folds != k), np.flatnonzero(folds == k)
        Xtr, ytr = X[tr], y[tr]
        inner = (StratifiedKFold if d.task == "binary" else KFold)(
            inner_folds, shuffle=True, random_state=seed
        )
        best, best_score = GRID[d.task][0], -np.inf
        for reg in GRID[d.task]:
            score = 0.0
            for itr, ite in inner.split(Xtr, ytr if d.task == "binary" else None):
                p = _fit_predict(d, reg, Xtr[itr], ytr[itr], Xtr[ite])
                score += metric(d, ytr[ite], p)
            if score > best_score + 1e-12:
                best, best_score = reg, score
        pred[te] = _fit_predict(d, best, Xtr, ytr, X[te])
    return pred


def _predict(spec: AnalysisSpec, cols: list[str], *, permute: list[str] | None = None) -> np.ndarray:
    key = (
        spec.direction,
        tuple(cols),
        tuple(permute or ()),
        spec.outer_folds,
        spec.inner_folds,
        spec.split_seed,
    )
    if key not in _MODEL_CACHE:
        d = direction(spec.direction)
        frame, y = load_direction(spec.direction)
        frame = frame[cols].copy()
        if permute:
            rng = np.random.default_rng(spec.split_seed + 7919)
            perm = rng.permutation(len(frame))
            frame[permute] = frame[permute].to_numpy()[perm]
        folds = fixed_splits(spec.direction, spec.outer_folds, spec.split_seed)
        _MODEL_CACHE[key] = _oof(d, frame.to_numpy(float), y, folds, spec.inner_folds, spec.split_seed)
    return _MODEL_CACHE[key]


def metric(d: Direction, y: np.ndarray, p: np.ndarray) -> float:
    """Held-out AUC (binary outcomes) or R² (continuous outcomes), by :mod:`sklearn.metrics`."""
    from sklearn.metrics import r2_score, roc_auc_score

    if d.metric == "auc":
        return float(roc_auc_score(y, p))
    return float(r2_score(y, p))


def bootstrap_delta(
    d: Direction, y: np.ndarray, base: np.ndarray, ext: np.ndarray, n: int, interval: float, seed: int
) -> tuple[float, float]:
    """Paired patient-level bootstrap interval of metric(ext) − metric(base)
    (:func:`rsi_workbench.metrics.bootstrap.paired_interval`; one-class resamples are skipped)."""
    from rsi_workbench.metrics.bootstrap import paired_interval

    def delta(yy: np.ndarray, bb: np.ndarray, ee: np.ndarray) -> float:
        if d.task == "binary" and yy.min() == yy.max():
            return float("nan")
        return metric(d, yy, ee) - metric(d, yy, bb)

    return paired_interval((y, base, ext), delta, n_resamples=n, confidence=interval, seed=seed)


def verdict(ci_lo: float, ci_hi: float, threshold: float) -> str:
    """The pre-registered decision rule: supports / weakens / inconclusive."""
    if ci_lo > threshold:
        return "supports"
    if ci_hi < threshold:
        return "weakens"
    return "inconclusive"


def run_analysis(spec: AnalysisSpec) -> tuple[dict[str, Any], np.ndarray, dict[str, np.ndarray]]:
    """Run the nested comparison and its controls; returns (results, folds, predictions)."""
    d = direction(spec.direction)
    missing = [g for g in spec.required_groups() if not d.available(g)]
    if missing:
        raise ValueError(f"groups {missing} are not available in {spec.direction}")
    _, y = load_direction(spec.direction)
    base_cols, add_cols = d.columns(spec.baseline), d.columns(spec.added)
    overlap = sorted(set(base_cols) & set(add_cols))
    if overlap:
        raise ValueError(f"baseline and added feature groups overlap on {overlap}")
    base = _predict(spec, base_cols)
    ext = _predict(spec, base_cols + add_cols)
    m_b, m_e = metric(d, y, base), metric(d, y, ext)
    lo, hi = bootstrap_delta(d, y, base, ext, spec.n_bootstrap, spec.interval, spec.split_seed)
    results: dict[str, Any] = {
        "metric": d.metric,
        "n": len(y),
        "baseline": m_b,
        "extended": m_e,
        "delta": m_e - m_b,
        "ci_lo": lo,
        "ci_hi": hi,
        "interval": spec.interval,
        "threshold": spec.threshold,
        "verdict": verdict(lo, hi, spec.threshold),
        "controls": {},
    }
    preds = {"baseline": base, "extended": ext}
    if "permutation" in spec.controls:
        perm = _predict(spec, base_cols + add_cols, permute=add_cols)
        results["controls"]["permutation"] = {
            "extended": metric(d, y, perm),
            "delta": metric(d, y, perm) - m_b,
        }
        preds["permutation"] = perm
    if "added_alone" in spec.controls:
        alone = _predict(spec, add_cols)
        chance = 0.5 if d.metric == "auc" else 0.0
        m_a = metric(d, y, alone)
        results["controls"]["added_alone"] = {
            "metric": m_a,
            "chance": chance,
            "gain_over_chance": m_a - chance,
        }
        preds["added_alone"] = alone
    folds = fixed_splits(spec.direction, spec.outer_folds, spec.split_seed)
    return results, folds, preds
