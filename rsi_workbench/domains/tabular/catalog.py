"""Research directions on scikit-learn's bundled datasets: outcomes, feature groups, baselines.

Clinical cohorts (breast cancer, diabetes) plus the other bundled tables (wine, iris, digits,
linnerud: no download), so closed rediscovery rounds get fresh directions and disjoint dev sets.

A *direction* is (dataset, outcome). Its feature groups are the documented measurements of the
dataset; *unavailable* groups are measurements a hypothesis may ask for that the cohort never
recorded (they stay explicit dependencies); the ``noise`` group is a deliberate control of seeded
pure-noise columns that carry no information by construction.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

NOISE_GROUP = "noise"
NOISE_COLUMNS = 3


@dataclass(frozen=True)
class Direction:
    """One research direction: a dataset, an outcome, its feature groups and candidate baselines."""

    dataset: str
    outcome: str
    task: Literal["binary", "regression"]
    metric: Literal["auc", "r2"]
    population: str
    outcome_text: str
    groups: dict[str, tuple[str, ...]]  # group -> dataset columns
    group_text: dict[str, str]
    baselines: tuple[tuple[str, ...], ...]  # candidate baselines (tuples of group names)
    unavailable: dict[str, str]  # group -> why the cohort lacks it
    threshold: float  # default minimal important difference of the metric
    positive: int | None = None  # binary one-vs-rest outcome: the positive class of ``target``
    target_column: str | None = None  # multi-output tables (linnerud): the outcome's column

    @property
    def name(self) -> str:
        return f"{self.dataset}/{self.outcome}"

    def columns(self, groups: tuple[str, ...] | list[str]) -> list[str]:
        cols: list[str] = []
        for g in groups:
            if g == NOISE_GROUP:
                cols += [f"noise_{i}" for i in range(NOISE_COLUMNS)]
            else:
                cols += list(self.groups[g])
        return cols

    def describe(self, g: str) -> str:
        if g == NOISE_GROUP:
            return "seeded pure-noise columns (deliberate control: no information by construction)"
        if g in self.unavailable:
            return f"{g.replace('_', ' ')} (not recorded in this cohort: {self.unavailable[g]})"
        return self.group_text.get(g, g)

    def available(self, g: str) -> bool:
        return g in self.groups or g == NOISE_GROUP


def _wdbc_groups() -> dict[str, tuple[str, ...]]:
    props = {
        "size": ("radius", "perimeter", "area"),
        "texture": ("texture",),
        "smoothness": ("smoothness",),
        "compactness": ("compactness",),
        "concavity": ("concavity",),
        "concave_points": ("concave points",),
        "symmetry": ("symmetry",),
        "fractal_dimension": ("fractal dimension",),
    }
    return {
        g: tuple(c for p in ps for c in (f"mean {p}", f"{p} error", f"worst {p}")) for g, ps in props.items()
    }


_WDBC_TEXT = {
    "size": "nucleus size (radius, perimeter, area: mean, standard error, worst)",
    "texture": "nuclear texture (grey-level standard deviation: mean, standard error, worst)",
    "smoothness": "nuclear smoothness (local radius variation)",
    "compactness": "nuclear compactness (perimeter²/area − 1)",
    "concavity": "severity of concave portions of the nuclear contour",
    "concave_points": "number of concave portions of the nuclear contour",
    "symmetry": "nuclear symmetry",
    "fractal_dimension": "contour fractal dimension ('coastline approximation' − 1)",
}
_DIAB_TEXT = {
    "demographics": "age and sex",
    "bmi": "body-mass index",
    "bp": "average blood pressure",
    "lipids": "serum lipids (total cholesterol s1, LDL s2, HDL s3, TC/HDL s4)",
    "triglycerides": "log serum triglycerides (s5)",
    "glucose": "blood glucose (s6)",
}
_DIAB_GROUPS = {
    "demographics": ("age", "sex"),
    "bmi": ("bmi",),
    "bp": ("bp",),
    "lipids": ("s1", "s2", "s3", "s4"),
    "triglycerides": ("s5",),
    "glucose": ("s6",),
}


def _digits_groups() -> dict[str, tuple[str, ...]]:
    """The 8x8 image in four 4x4 quadrants (16 pixel intensities each)."""
    quads = {"top_left": (0, 0), "top_right": (0, 4), "bottom_left": (4, 0), "bottom_right": (4, 4)}
    return {
        q: tuple(f"pixel_{r}_{c}" for r in range(r0, r0 + 4) for c in range(c0, c0 + 4))
        for q, (r0, c0) in quads.items()
    }


_WINE_GROUPS: dict[str, tuple[str, ...]] = {
    "alcohol": ("alcohol",),
    "acidity": ("malic_acid",),
    "ash": ("ash", "alcalinity_of_ash"),
    "magnesium": ("magnesium",),
    "phenols": ("total_phenols", "flavanoids", "nonflavanoid_phenols", "proanthocyanins"),
    "colour": ("color_intensity", "hue"),
    "od280": ("od280/od315_of_diluted_wines",),
    "proline": ("proline",),
}
_WINE_TEXT = {
    "alcohol": "alcohol content",
    "acidity": "malic acid",
    "ash": "ash and its alkalinity",
    "magnesium": "magnesium",
    "phenols": "phenolic content (total phenols, flavanoids, non-flavanoid phenols, proanthocyanins)",
    "colour": "colour intensity and hue",
    "od280": "OD280/OD315 of diluted wines (protein content)",
    "proline": "proline",
}
_IRIS_GROUPS: dict[str, tuple[str, ...]] = {
    "sepal_length": ("sepal length (cm)",),
    "sepal_width": ("sepal width (cm)",),
    "petal_length": ("petal length (cm)",),
    "petal_width": ("petal width (cm)",),
}
_LINNERUD_GROUPS: dict[str, tuple[str, ...]] = {
    "weight": ("Weight",),
    "pulse": ("Pulse",),
    "chins": ("Chins",),
    "situps": ("Situps",),
    "jumps": ("Jumps",),
}
_LINNERUD_TEXT = {
    "weight": "body weight (lb)",
    "pulse": "resting pulse",
    "chins": "chin-ups",
    "situps": "sit-ups",
    "jumps": "jumping jacks",
}
_MORE_DIRECTIONS = (
    Direction(
        dataset="sklearn-wine",
        outcome="cultivar_2",
        task="binary",
        metric="auc",
        population="178 wines from three cultivars grown in one region of Italy (Forina et al.)",
        outcome_text="wine from the second cultivar",
        groups=_WINE_GROUPS,
        group_text=_WINE_TEXT,
        baselines=(("alcohol",), ("alcohol", "acidity")),
        unavailable={"vintage": "the vintage year is not recorded", "soil": "vineyard soil was not analysed"},
        threshold=0.01,
        positive=1,
    ),
    Direction(
        dataset="sklearn-iris",
        outcome="virginica",
        task="binary",
        metric="auc",
        population="150 iris flowers of three species measured by Anderson (Fisher, 1936)",
        outcome_text="Iris virginica (vs setosa and versicolor)",
        groups=_IRIS_GROUPS,
        group_text={g: g.replace("_", " ") + " (cm)" for g in _IRIS_GROUPS},
        baselines=(("sepal_length",), ("sepal_length", "sepal_width")),
        unavailable={
            "flower_age": "flower age was not recorded",
            "site": "the collection site is not recorded",
        },
        threshold=0.01,
        positive=2,
    ),
    Direction(
        dataset="sklearn-digits",
        outcome="eight",
        task="binary",
        metric="auc",
        population="1,797 8x8 handwritten digit images (UCI optical recognition, test set)",
        outcome_text="the digit 8 (vs the nine other digits)",
        groups=_digits_groups(),
        group_text={g: f"{g.replace('_', ' ')} 4x4 quadrant of pixel intensities" for g in _digits_groups()},
        baselines=(("top_left",), ("top_left", "top_right")),
        unavailable={"writer": "the writer of each digit is not in the released table"},
        threshold=0.005,
        positive=8,
    ),
    Direction(
        dataset="sklearn-linnerud",
        outcome="waist",
        task="regression",
        metric="r2",
        population="20 middle-aged men in a fitness club (Linnerud; Tenenhaus, 1998)",
        outcome_text="waist circumference (in)",
        groups=_LINNERUD_GROUPS,
        group_text=_LINNERUD_TEXT,
        baselines=(("weight",), ("weight", "pulse")),
        unavailable={"diet": "diet was not recorded"},
        threshold=0.02,
        target_column="Waist",
    ),
)

DIRECTIONS: dict[str, Direction] = {
    d.name: d
    for d in (
        Direction(
            dataset="sklearn-breast-cancer",
            outcome="malignant",
            task="binary",
            metric="auc",
            population="569 patients with a breast mass sampled by fine-needle aspiration "
            "(Wisconsin Diagnostic Breast Cancer cohort)",
            outcome_text="malignant diagnosis",
            groups=_wdbc_groups(),
            group_text=_WDBC_TEXT,
            baselines=(("size",), ("size", "concave_points")),
            unavailable={
                "brca_status": "germline BRCA1/2 testing was not part of the FNA study",
                "patient_age": "age at biopsy is not in the released feature table",
            },
            threshold=0.005,
        ),
        Direction(
            dataset="sklearn-diabetes",
            outcome="progression",
            task="regression",
            metric="r2",
            population="442 diabetes patients with baseline measurements (Efron et al., 2004)",
            outcome_text="disease progression one year after baseline",
            groups=_DIAB_GROUPS,
            group_text=_DIAB_TEXT,
            baselines=(("demographics",), ("demographics", "bmi")),
            unavailable={
                "hba1c": "glycated haemoglobin was not measured in the released data",
                "medication": "treatment history is not recorded",
            },
            threshold=0.01,
        ),
        Direction(
            dataset="sklearn-diabetes",
            outcome="high_progression",
            task="binary",
            metric="auc",
            population="442 diabetes patients with baseline measurements (Efron et al., 2004)",
            outcome_text="progression above the cohort median one year after baseline",
            groups=_DIAB_GROUPS,
            group_text=_DIAB_TEXT,
            baselines=(("demographics",), ("demographics", "bmi")),
            unavailable={"hba1c": "glycated haemoglobin was not measured in the released data"},
            threshold=0.01,
        ),
        *_MORE_DIRECTIONS,
    )
}


def direction(name: str) -> Direction:
    """The direction named ``dataset/outcome``; a clear error lists the known ones."""
    from rsi_workbench.domains.tabular.synthetic import STATEFUL_DIRECTIONS, SYNTHETIC_DIRECTIONS

    if name in SYNTHETIC_DIRECTIONS:  # planted synthetic directions (known ground truth)
        return SYNTHETIC_DIRECTIONS[name]
    if name in STATEFUL_DIRECTIONS:  # the same, with state-dependent planted operators
        return STATEFUL_DIRECTIONS[name]
    if name not in DIRECTIONS:
        raise KeyError(
            f"unknown tabular direction {name!r}; known: {sorted(DIRECTIONS)} "
            f"and synthetic-planted-00..{len(SYNTHETIC_DIRECTIONS) - 1:02d}/outcome "
            f"(or synthetic-stateful-NN/outcome)"
        )
    return DIRECTIONS[name]


@lru_cache(maxsize=32)
def load_direction(name: str) -> tuple[pd.DataFrame, np.ndarray]:
    """Features (documented columns plus the seeded noise control) and the outcome vector."""
    from rsi_workbench.domains.tabular.synthetic import is_synthetic, load_synthetic

    d = direction(name)
    if is_synthetic(name):
        X, y = load_synthetic(name)
        X = X.copy()
    else:
        X, y = _load_bundled(d)
    rng = np.random.default_rng(_stable_seed(d.dataset))
    for i in range(NOISE_COLUMNS):
        X[f"noise_{i}"] = rng.standard_normal(len(X))
    X.index.name = "patient_id"
    return X, y


def _load_bundled(d: Direction) -> tuple[pd.DataFrame, np.ndarray]:
    from rsi_workbench import datasets

    bunch = datasets.load(d.dataset)
    if d.target_column is not None:  # multi-output table: the other outcome columns are features
        X = bunch.frame.drop(columns=[d.target_column]).copy()
        target = bunch.frame[d.target_column].to_numpy()
    else:
        X = bunch.frame.drop(columns=["target"]).copy()
        target = bunch.frame["target"].to_numpy()
    if d.positive is not None:
        y = (target == d.positive).astype(int)
    elif d.outcome == "malignant":
        y = (target == 0).astype(int)  # scikit-learn codes malignant as 0
    elif d.outcome == "high_progression":
        y = (target > np.median(target)).astype(int)
    else:
        y = target.astype(float)
    return X, y


def _stable_seed(text: str) -> int:
    import hashlib

    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
