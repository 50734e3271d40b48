"""Reaction-condition optimisation bound to the protocol engine's task spec T_d (eq. 1).

One campaign (a measured condition grid) is one task; one protocol run = one (method, seed) over
that single task; one cycle = one experiment (one condition run, one unit of the experiment budget),
then the learn and retain decisions. The pieces:

- :class:`ReactionEnvironment` — X_d/S_d and external feedback: the state is the tuple of
  (condition, measured yield) pairs run so far; :meth:`~ReactionEnvironment.evaluate` is the only
  place a yield leaves the grid (evidence E3, replayed), and it refuses a condition already run;
- :class:`AllUnrunPolicy` — θ, fixed (u^π = 0): the candidate set is every condition not yet run;
- :class:`EnsemblePredictor` — φ_d: the deep-ensemble yield predictor with a Gaussian readout
  (mean, std), ``adapt`` refits (first time from scratch, then warm-started) on the update-split
  observations it is given, every version content-addressed by the loop;
- :class:`GPPredictor` — φ_d as the GP-EI baseline's model family (BoTorch ``SingleTaskGP``) with
  the same Gaussian readout, refitted on the observations it is given;
- :class:`PriorGPPredictor` — φ_d as a GP whose mean function is a transfer prior
  (:mod:`rsi_workbench.domains.reactions.prior_gp`): adaptation is the residual posterior on the
  target's observations, so the prior stays where they say nothing;
- :class:`EmbeddingPredictor` — φ_d as an ensemble over learned condition embeddings (one learned
  vector per ligand/base/solvent level, :mod:`rsi_workbench.domains.reactions.embed`), same readout.

The loop runs with ``gate_data: held_out_observations`` (a held-out share of the campaign's own
rounds is gate data: gates re-predict those recorded measurements and never run a condition) or
``prequential`` (every measurement first judges the versions that predicted it, then trains),
``readout: gaussian`` (reliability from MAE and mean |z|; gates on Gaussian NLL), an
``initial_design`` of random conditions identical for every method of a seed, and
``record_candidates`` so a proposal event keeps only the best-ranked few of a pool of thousands.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rsi_workbench.domains.reactions.baselines import BOConfig
from rsi_workbench.domains.reactions.corruption import Corruption
from rsi_workbench.domains.reactions.embed import (
    CodedConditions,
    EmbedConfig,
    EmbeddingEnsemble,
    code_conditions,
)
from rsi_workbench.domains.reactions.gp import GPYieldModel
from rsi_workbench.domains.reactions.grid import ConditionGrid, encode_conditions
from rsi_workbench.domains.reactions.prior_gp import PriorGPConfig, PriorMeanGP
from rsi_workbench.domains.reactions.replay import ReplayError
from rsi_workbench.protocol.spec import ImaginedRecord, Observation, PairRecord, Prediction
from rsi_workbench.world.ensemble import EnsembleConfig, GaussianEnsemble

YIELD = "yield"


@dataclass(frozen=True)
class ReactionState:
    """What the selector may know about a campaign: the conditions run so far, with their yields."""

    observed: tuple[tuple[int, float], ...] = ()

    @property
    def indices(self) -> list[int]:
        return [i for i, _ in self.observed]

    @property
    def yields(self) -> list[float]:
        return [y for _, y in self.observed]


class ReactionEnvironment:
    """The measured grid behind a wall: :meth:`evaluate` reveals one run condition's yield."""

    def __init__(self, grid: ConditionGrid, corruption: Corruption | None = None) -> None:
        """``corruption``: the run's declared misreading of its measurements
        (:mod:`~rsi_workbench.domains.reactions.corruption`); the state and every observation hold
        the reading, the final audit the true yields of the conditions run."""
        self.corruption = corruption
        features, names = encode_conditions(grid)
        features.flags.writeable = False
        self.features = features
        self.feature_names = tuple(names)
        self.__yields = grid.yields.copy()  # name-mangled: the oracle, never handed to a selector
        self._conditions = grid.conditions
        self.pool_max = float(grid.pool_max)
        self.n = len(features)

    # -- Environment protocol -------------------------------------------------------------
    def initial(self, task_id: str) -> tuple[ReactionState, Observation]:
        """Nothing has run yet: the initial experiments are the loop's ``initial_design`` cycles."""
        return ReactionState(), Observation({}, cost=0.0, evidence="E3", detail={"pool_size": self.n})

    def evaluate(self, task_id: str, state: ReactionState, action: int) -> Observation:
        i = int(action)
        if not 0 <= i < self.n:
            raise ReplayError(f"condition {i} is not in the pool (0..{self.n - 1})")
        if i in state.indices:
            raise ReplayError(f"condition {i} was already run; replay reveals each yield once")
        experiment = len(state.observed) + 1
        y = float(self.__yields[i])
        misread = {}
        if self.corruption is not None:
            y, bad = self.corruption.read(experiment, y)
            misread = {"corrupted": bad}
        return Observation(
            {YIELD: y},
            cost=1.0,
            evidence="E3",
            detail={
                "index": i,
                "condition": {str(k): _plain(v) for k, v in self._conditions.iloc[i].items()},
                "yield": y,
                "experiment": experiment,
                **misread,
            },
        )

    def uncorrupted(self, record: PairRecord) -> Observation:
        """``record``'s observation with the true yield of its condition in place of the reading: the
        oracle gates' view (:func:`~rsi_workbench.domains.reactions.corruption.oracle_gate_parts`),
        never a predictor's training data."""
        y = float(self.__yields[int(record.action["index"])])
        o = record.observation
        return Observation({**o.utility_terms, YIELD: y}, o.labels, o.solved, o.cost, o.evidence, o.detail)

    def advance(
        self, task_id: str, state: ReactionState, action: int, observation: Observation
    ) -> ReactionState:
        return ReactionState((*state.observed, (int(action), float(observation.utility_terms[YIELD]))))

    def signature(self, task_id: str, state: ReactionState) -> str:
        return hashlib.sha256(json.dumps([task_id, sorted(state.indices)]).encode()).hexdigest()[:16]

    def audit(self, task_id: str, state: ReactionState, actions: Sequence[int]) -> list[dict[str, Any]]:
        return []  # no per-round audit: the pool's yields are only revealed by running a condition

    def final_audit(self, task_id: str, state: ReactionState) -> dict[str, Any]:
        """Metrics only: the run's best observed yield and whether/when it reached the pool maximum.
        Under a declared corruption ``yields`` are the true yields of the conditions run (the outcome),
        ``readings`` what the run saw and ``corrupted_experiments`` which measurements were misread."""
        ys = np.array(state.yields, dtype=float)
        extra: dict[str, Any] = {}
        if self.corruption is not None:
            extra = {"readings": ys.tolist(), "corrupted_experiments": sorted(self.corruption.experiments)}
            ys = np.array([float(self.__yields[i]) for i in state.indices], dtype=float)
        hit = np.flatnonzero(ys >= self.pool_max - 1e-9)
        return {
            "indices": state.indices,
            "yields": ys.tolist(),
            "best_yield": float(ys.max()) if len(ys) else None,
            "pool_max": self.pool_max,
            "first_hit": int(hit[0]) + 1 if len(hit) else None,
            **extra,
        }

    def dump_state(self, state: ReactionState) -> dict[str, Any]:
        return {"observed": [[i, y] for i, y in state.observed]}

    def load_state(self, data: Mapping[str, Any]) -> ReactionState:
        return ReactionState(tuple((int(i), float(y)) for i, y in data["observed"]))

    def dump_action(self, action: int) -> dict[str, Any]:
        return {"index": int(action)}

    def load_action(self, data: Mapping[str, Any]) -> int:
        return int(data["index"])


def _plain(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v


class AllUnrunPolicy:
    """θ for reaction optimisation: propose every condition not yet run, in pool order (fixed)."""

    version = "all-unrun"

    def __init__(self, n_pool: int) -> None:
        self.n_pool = n_pool

    def propose(self, task_id: str, state: ReactionState, k: int, rng: random.Random) -> list[int]:
        run = set(state.indices)
        return [i for i in range(self.n_pool) if i not in run][:k]

    def update(
        self, records: Sequence[PairRecord], imagined: Sequence[ImaginedRecord], *, seed: int
    ) -> AllUnrunPolicy:
        raise NotImplementedError("the reaction proposer is fixed (u^π = 0)")

    def to_bytes(self) -> bytes:
        return json.dumps({"policy": self.version, "n_pool": self.n_pool}).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> AllUnrunPolicy:
        return cls(int(json.loads(data)["n_pool"]))


class EnsemblePredictor:
    """φ_d: a deep-ensemble yield predictor over the shared condition encoding, Gaussian readout.

    Version ``ens-s{seed}-v{n}`` counts its fits: v0 is the untrained prior, the first adaptation
    fits from scratch, later ones warm-start (``adapt_steps``). ``adapt`` trains only on the
    records it is handed (the loop hands the update split; held-out gate rounds never train it).
    """

    def __init__(
        self,
        features: np.ndarray,
        seed: int,
        config: EnsembleConfig,
        core: GaussianEnsemble | None = None,
    ):
        self.features = features
        self.seed = int(seed)
        self.config = config
        if core is None:
            core = GaussianEnsemble(features.shape[1], [self.seed], config)
            core.init_prior()
        self.core = core
        self.version: str = core.version(0).replace("ensemble-", "ens-")

    def predict(self, task_id: str, state: ReactionState, actions: Sequence[int]) -> list[Prediction]:
        if not actions:
            return []
        idx = np.asarray([int(a) for a in actions])
        yp = self.core.predict(self.features[idx])
        v = self.version
        return [
            Prediction(
                {YIELD: float(m)},
                v,
                uncertainty=float(sd),
                evidence="E1",
                gaussian={YIELD: [float(m), float(sd)]},
            )
            for m, sd in zip(yp.mean[0], yp.std[0], strict=True)
        ]

    def adapt(self, records: Sequence[PairRecord], *, seed: int) -> EnsemblePredictor:
        """φ' = Adapt(φ, D_adapt) (eq. 12) on the given records' (condition, yield) pairs; self unchanged."""
        idx = np.asarray([int(r.action["index"]) for r in records])
        y = np.asarray([float(r.observation.utility_terms[YIELD]) for r in records])
        core = copy.deepcopy(self.core)
        x = self.features[idx][None]
        (core.fit if core.fits[0] == 0 else core.adapt)([0], x, y[None])
        return EnsemblePredictor(self.features, self.seed, self.config, core)

    def adapt_cost(self, n_records: int) -> float:
        return 1.0  # one fit, in update-compute units

    def to_bytes(self) -> bytes:
        import torch

        buf = io.BytesIO()
        torch.save({"seed": self.seed, "core": self.core.state_dict()}, buf)
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes, features: np.ndarray) -> EnsemblePredictor:
        import torch

        st = torch.load(io.BytesIO(data), weights_only=True)
        core = GaussianEnsemble.from_state_dict(st["core"])
        return cls(features, int(st["seed"]), core.config, core)


def _gaussian_predictions(version: str, mean: np.ndarray, sd: np.ndarray) -> list[Prediction]:
    """One E1 prediction per condition with the Gaussian readout N(mean, sd²) of the yield."""
    return [
        Prediction(
            {YIELD: float(m)},
            version,
            uncertainty=float(s),
            evidence="E1",
            gaussian={YIELD: [float(m), float(s)]},
        )
        for m, s in zip(mean, sd, strict=True)
    ]


def _fit_data(records: Sequence[PairRecord]) -> tuple[list[int], list[float]]:
    """The (condition index, measured yield) pairs of the records an adaptation is handed."""
    return [int(r.action["index"]) for r in records], [
        float(r.observation.utility_terms[YIELD]) for r in records
    ]


class GPPredictor:
    """φ_d as a Gaussian process (:class:`~rsi_workbench.domains.reactions.gp.GPYieldModel`): the GP-EI
    baseline's model family under the protocol, with the same Gaussian readout as the ensemble.

    Version ``gp-s{seed}-v{n}`` counts its fits: v0 is the declared prior, every adaptation refits
    the GP on exactly the records it is handed (hyperparameters warm-started from the previous fit).
    """

    def __init__(self, features: np.ndarray, seed: int, config: BOConfig, model: GPYieldModel | None = None):
        self.features = features
        self.model = model if model is not None else GPYieldModel(features, seed, config)
        self.seed, self.config = self.model.seed, self.model.config
        self.version: str = f"gp-s{self.seed}-v{self.model.fits}"

    def predict(self, task_id: str, state: ReactionState, actions: Sequence[int]) -> list[Prediction]:
        if not actions:
            return []
        return _gaussian_predictions(self.version, *self.model.predict(np.asarray([int(a) for a in actions])))

    def adapt(self, records: Sequence[PairRecord], *, seed: int) -> GPPredictor:
        """φ' = Adapt(φ, D_adapt) (eq. 12): the GP refitted on the given records; self unchanged."""
        return GPPredictor(self.features, self.seed, self.config, self.model.fit(*_fit_data(records)))

    def adapt_cost(self, n_records: int) -> float:
        return 1.0  # one fit, in update-compute units (as the ensemble)

    def to_bytes(self) -> bytes:
        return self.model.to_bytes()

    @classmethod
    def from_bytes(cls, data: bytes, features: np.ndarray) -> GPPredictor:
        model = GPYieldModel.from_bytes(data, features)
        return cls(features, model.seed, model.config, model)


class PriorGPPredictor:
    """φ_d as a GP with the transfer prior as its mean function
    (:class:`~rsi_workbench.domains.reactions.prior_gp.PriorMeanGP`), the same Gaussian readout.

    Version ``pgp-s{seed}-v{n}`` counts its fits: v0 is the prior itself, N(m(x), s²); every
    adaptation is the residual posterior on exactly the records it is handed (eq. 12 as a Bayesian
    update on top of the prior, hyperparameters warm-started from the previous fit).
    """

    def __init__(
        self,
        features: np.ndarray,
        mean: np.ndarray | None = None,
        seed: int = 0,
        config: PriorGPConfig | None = None,
        model: PriorMeanGP | None = None,
    ) -> None:
        if model is None:
            if mean is None:
                raise ValueError("a prior-mean GP predictor needs the prior's mean over the pool")
            model = PriorMeanGP(features, mean, seed, config or PriorGPConfig())
        self.features = features
        self.model = model
        self.seed, self.config = model.seed, model.config
        self.version: str = f"pgp-s{self.seed}-v{model.fits}"

    def predict(self, task_id: str, state: ReactionState, actions: Sequence[int]) -> list[Prediction]:
        if not actions:
            return []
        return _gaussian_predictions(self.version, *self.model.predict(np.asarray([int(a) for a in actions])))

    def adapt(self, records: Sequence[PairRecord], *, seed: int) -> PriorGPPredictor:
        """φ' = Adapt(φ, D_adapt) (eq. 12): the residual posterior on the given records; self unchanged."""
        return PriorGPPredictor(self.features, model=self.model.fit(*_fit_data(records)))

    def adapt_cost(self, n_records: int) -> float:
        return 1.0  # one fit, in update-compute units (as the ensemble)

    def to_bytes(self) -> bytes:
        return self.model.to_bytes()

    @classmethod
    def from_bytes(cls, data: bytes, features: np.ndarray) -> PriorGPPredictor:
        return cls(features, model=PriorMeanGP.from_bytes(data, features))


class EmbeddingPredictor:
    """φ_d as an ensemble over learned condition embeddings
    (:class:`~rsi_workbench.domains.reactions.embed.EmbeddingEnsemble`), with the same Gaussian readout.

    Version ``emb-s{seed}-v{n}`` counts its fits: v0 is the untrained initialisation on the declared
    prior scale, the first adaptation trains from scratch, later ones warm-start, each on exactly the
    records it is handed (as the deep ensemble).
    """

    def __init__(
        self, pool: CodedConditions, seed: int, config: EmbedConfig, model: EmbeddingEnsemble | None = None
    ) -> None:
        self.pool = pool
        self.model = model if model is not None else EmbeddingEnsemble(pool, seed, config)
        self.seed, self.config = self.model.seed, self.model.config
        self.version: str = f"emb-s{self.seed}-v{self.model.fits}"

    def predict(self, task_id: str, state: ReactionState, actions: Sequence[int]) -> list[Prediction]:
        if not actions:
            return []
        return _gaussian_predictions(self.version, *self.model.predict(np.asarray([int(a) for a in actions])))

    def adapt(self, records: Sequence[PairRecord], *, seed: int) -> EmbeddingPredictor:
        """φ' = Adapt(φ, D_adapt) (eq. 12) on the given records' (condition, yield) pairs; self unchanged."""
        return EmbeddingPredictor(self.pool, self.seed, self.config, self.model.fit(*_fit_data(records)))

    def adapt_cost(self, n_records: int) -> float:
        return 1.0  # one fit, in update-compute units (as the ensemble)

    def to_bytes(self) -> bytes:
        return self.model.to_bytes()

    @classmethod
    def from_bytes(cls, data: bytes, pool: CodedConditions) -> EmbeddingPredictor:
        model = EmbeddingEnsemble.from_bytes(data, pool)
        return cls(pool, model.seed, model.config, model)


def make_predictor(
    env: ReactionEnvironment,
    grid: ConditionGrid,
    kind: str,
    seed: int,
    predictor: EnsembleConfig,
    bo: BOConfig,
    embed: EmbedConfig,
) -> tuple[EnsemblePredictor | GPPredictor | EmbeddingPredictor, Any]:
    """A protocol method's φ_d over ``env``'s pool and its loader (bytes -> predictor): the GP
    (``*_gp``), the condition embeddings (``*_embed``) or the deep ensemble, each from its own block."""
    features = env.features
    if kind.endswith("_gp"):
        return GPPredictor(features, seed, bo), lambda b: GPPredictor.from_bytes(b, features)
    if kind.endswith("_embed"):
        pool = code_conditions(grid)
        return EmbeddingPredictor(pool, seed, embed), lambda b: EmbeddingPredictor.from_bytes(b, pool)
    return EnsemblePredictor(features, seed, predictor), lambda b: EnsemblePredictor.from_bytes(b, features)


def protocol_outcome(events: Sequence[Any]) -> dict[str, Any]:
    """What a finished protocol run of a campaign did, from its effective events: the conditions run
    and their yields (the final audit), the best-so-far curve, the first pool-maximum hit, the cycles
    whose proposed predictor the retained pair now holds (eq. 18), triggers and gate outcomes."""
    evs = {
        k: [(e.cycle, e.payload) for e in events if e.kind == k]
        for k in ("adaptation_trigger", "gate", "retain")
    }
    audit = [e.payload for e in events if e.kind == "final_audit"][-1]
    ys = np.array(audit["yields"], dtype=float)
    gates = [g for _, g in evs["gate"]]
    kept = [
        c
        for c, r in evs["retain"]
        if r["proposed_predictor_version"] is not None
        and r["predictor_version"] == r["proposed_predictor_version"]
    ]
    return {
        **({"readings": audit["readings"]} if "readings" in audit else {}),
        "indices": audit["indices"],
        "yields": ys.tolist(),
        "best_curve": np.maximum.accumulate(ys).tolist(),
        "first_hit": audit["first_hit"],
        "adaptations": len(kept),
        "adapted_at": kept,
        "adaptations_triggered": sum(1 for _, t in evs["adaptation_trigger"] if t["triggered"]),
        "predictor_gate_passed": sum(1 for g in gates if g["gate"] == "predictor" and g["passed"]),
        "pair_gate_failed": sum(
            1 for g in gates if g["gate"] == "pair" and not g["skipped"] and not g["passed"]
        ),
    }
