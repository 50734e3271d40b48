"""The GUI experiment's learnable components: the action-scoring policy θ and the outcome world model φ.

- :class:`ActionScoringPolicy` — θ: a linear score over DOM features of each candidate action
  (:data:`~.features.POLICY_FEATURES`); ``propose`` returns the top-K actions (Gumbel-perturbed at
  a declared temperature while training, deterministic at test); ``update`` refits the weights by
  ridge regression of each executed action's observed utility gain (eq. 7's utility after the
  action minus the utility of submitting before it) on the update data it is handed. With
  ``oracle`` set (the pilot's oracle arm) ``update`` instead labels *every* candidate action of each
  state in the update data with its true worth, read from the utterance (:func:`oracle_labels`):
  the best policy update the same episodes allow, never used at test time.
- :func:`exact_checkbox_world` — a φ whose weights are set to the checkbox rule (a click toggles
  the box it hits; a box is wanted when the utterance mentions its label): a world model already
  right for click-checkboxes pages, for starts where only the policy can improve.
- :class:`OutcomeWorldModel` — φ: predicts an action's effect on the page — each control's checked
  state after it (a logistic toggle head; a submit toggles nothing) — and, through a logistic "is this control asked for"
  head, whether a submit right after it would succeed and what it would score. ``adapt`` fits both
  heads jointly (torch, full batch) on observed checkbox states and submit outcomes (E0).

Both are versioned by content and serialise to JSON (weights as lists), so the loop can store them
as artifacts and every resumed run rebuilds identical objects.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rsi_workbench.domains.gui.features import (
    POLICY_FEATURES,
    TOGGLE_FEATURES,
    WANT_FEATURES,
    StepState,
    candidate_actions,
    controls,
    policy_features,
    target_control,
    world_features,
)
from rsi_workbench.domains.gui.policies import checkbox_targets
from rsi_workbench.protocol.spec import ImaginedRecord, Observation, PairRecord, Prediction

UTILITY_TERMS = ("p_success", "submit_score", "ends_success")


def _short(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:8]


def observed_gain(obs: Observation, weights: Mapping[str, float]) -> float:
    """Eq. 7's observed utility of an executed action minus that of submitting instead (its gain)."""
    after = sum(w * float(obs.utility_terms.get(k, 0.0)) for k, w in weights.items())
    before = obs.detail.get("score_before")
    if before is None:
        return after
    b = float(before)
    base = {"p_success": float(b >= 1.0), "submit_score": b, "ends_success": 0.0}
    return after - sum(w * base.get(k, 0.0) for k, w in weights.items())


def oracle_labels(state: StepState, actions: Sequence[Mapping[str, Any]]) -> list[float]:
    """The true worth of each candidate action on a checkbox page, read from the utterance's targets:
    a click that fixes a box (ticks a wanted one, unticks an unwanted one) +1, any other click −1,
    a submit +2 when every box is as asked, else −1."""
    wanted = {t.lower() for t in checkbox_targets(state.utterance)}
    ctrls = controls(state)
    right = all((c.text.lower() in wanted) == c.checked for c in ctrls)
    out = []
    for a in actions:
        if a.get("type") == "submit":
            out.append(2.0 if right else -1.0)
            continue
        c = target_control(a, ctrls)
        out.append(1.0 if c is not None and (c.text.lower() in wanted) != c.checked else -1.0)
    return out


class ActionScoringPolicy:
    """θ: linear action scores over DOM features; proposes the K best-scoring candidate actions."""

    def __init__(
        self,
        weights: Sequence[float] | np.ndarray | None = None,
        *,
        utility: Mapping[str, float],
        seed: int = 0,
        n_updates: int = 0,
        temperature: float = 1.0,
        max_actions: int = 8,
        ridge: float = 1.0,
        always_submit: bool = False,
        oracle: bool = False,
    ) -> None:
        w = np.zeros(len(POLICY_FEATURES)) if weights is None else np.asarray(weights, dtype=np.float64)
        self.weights = w
        self.utility = dict(utility)
        self.seed, self.n_updates = int(seed), int(n_updates)
        self.temperature, self.max_actions, self.ridge = float(temperature), int(max_actions), float(ridge)
        self.always_submit = bool(always_submit)
        self.oracle = bool(oracle)
        self.version: str = f"policy-v{self.n_updates}-{_short(np.round(w, 6).tolist())}"

    def scores(self, state: StepState, actions: Sequence[Mapping[str, Any]]) -> np.ndarray:
        return policy_features(state, actions, self.max_actions) @ self.weights

    def propose(self, task_id: str, state: StepState, k: int, rng: random.Random) -> list[dict[str, Any]]:
        acts = candidate_actions(state)
        if not acts:
            return []
        s = self.scores(state, acts)
        keyed = []
        for i, v in enumerate(s):
            u = rng.random()
            noise = -self.temperature * math.log(-math.log(min(max(u, 1e-12), 1 - 1e-12)))
            keyed.append((-(v + noise), u, i))  # Gumbel-top-K; temperature 0: ties broken at random
        order = [acts[i] for _, _, i in sorted(keyed)]
        if not self.always_submit:
            return order[:k]
        clicks = [a for a in order if a.get("type") != "submit"][:k]
        return clicks + [a for a in order if a.get("type") == "submit"]

    def update(
        self, records: Sequence[PairRecord], imagined: Sequence[ImaginedRecord], *, seed: int
    ) -> ActionScoringPolicy:
        """θ' = Update(θ, D_policy) (eq. 9): ridge regression of observed utility gains on features."""
        xs: list[Any] = []
        ys: list[float] = []
        seen: set[str] = set()
        for r in records:
            st = StepState.from_json(r.state)
            if self.oracle:  # every candidate of each distinct state, labelled by its true worth
                key = json.dumps([st.task_id, [dict(a) for a in st.actions]], sort_keys=True, default=str)
                if key in seen:
                    continue
                seen.add(key)
                acts = candidate_actions(st)
                xs.extend(policy_features(st, acts, self.max_actions))
                ys.extend(oracle_labels(st, acts))
                continue
            xs.append(policy_features(st, [r.action], self.max_actions)[0])
            ys.append(observed_gain(r.observation, self.utility))
        if not xs:
            return self
        x, y = np.asarray(xs), np.asarray(ys)
        reg = self.ridge * np.eye(x.shape[1])
        w = np.linalg.solve(x.T @ x + reg, x.T @ y)
        return ActionScoringPolicy(
            w,
            utility=self.utility,
            seed=self.seed,
            n_updates=self.n_updates + 1,
            temperature=self.temperature,
            max_actions=self.max_actions,
            ridge=self.ridge,
            always_submit=self.always_submit,
            oracle=self.oracle,
        )

    def to_bytes(self) -> bytes:
        d: dict[str, Any] = {
            "always_submit": self.always_submit,
            "weights": self.weights.tolist(),
            "utility": self.utility,
            "seed": self.seed,
            "n_updates": self.n_updates,
            "temperature": self.temperature,
            "max_actions": self.max_actions,
            "ridge": self.ridge,
        }
        if self.oracle:  # only when set, so artifacts made before the flag existed keep their bytes
            d["oracle"] = True
        return json.dumps(d, sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> ActionScoringPolicy:
        d = json.loads(data)
        return cls(
            d["weights"],
            utility=d["utility"],
            seed=d["seed"],
            n_updates=d["n_updates"],
            temperature=d["temperature"],
            max_actions=d["max_actions"],
            ridge=d["ridge"],
            always_submit=d.get("always_submit", False),
            oracle=d.get("oracle", False),
        )

    def as_oracle(self) -> ActionScoringPolicy:
        """The same weights and version, updating from oracle labels (:func:`oracle_labels`)."""
        p = ActionScoringPolicy.from_bytes(self.to_bytes())
        p.oracle = True
        return p

    def with_temperature(self, temperature: float) -> ActionScoringPolicy:
        """The same weights and version, proposing at another temperature (0 for test episodes)."""
        p = ActionScoringPolicy.from_bytes(self.to_bytes())
        p.temperature = float(temperature)
        return p


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))


def exact_checkbox_world(seed: int = 0, *, steps: int = 300, scale: float = 8.0) -> OutcomeWorldModel:
    """φ set to the checkbox rule, right for click-checkboxes pages before any data: a click toggles
    the box it hits (a radio button unticks the others in its group); a box is wanted when the
    utterance mentions its label (``mention`` ≥ 0.5). ``scale``: the logits' magnitude."""
    b = float(scale)
    t = dict.fromkeys(TOGGLE_FEATURES, 0.0)
    t.update({"bias": -b, "checked": 2 * b, "hit": 2 * b, "hit_checked": -4 * b, "radio_other": -4 * b})
    w = dict.fromkeys(WANT_FEATURES, 0.0)
    w.update({"bias": -b, "mention": 2 * b})
    return OutcomeWorldModel(
        [t[k] for k in TOGGLE_FEATURES], [w[k] for k in WANT_FEATURES], seed=seed, steps=steps
    )


class OutcomeWorldModel:
    """φ: each control's checked state after an action, and the outcome of a submit right after it."""

    def __init__(
        self,
        toggle: Sequence[float] | np.ndarray | None = None,
        want: Sequence[float] | np.ndarray | None = None,
        *,
        seed: int = 0,
        n_fits: int = 0,
        steps: int = 300,
        lr: float = 0.1,
        l2: float = 1e-3,
    ) -> None:
        self.toggle = (
            np.zeros(len(TOGGLE_FEATURES)) if toggle is None else np.asarray(toggle, dtype=np.float64)
        )
        self.want = np.zeros(len(WANT_FEATURES)) if want is None else np.asarray(want, dtype=np.float64)
        self.seed, self.n_fits, self.steps, self.lr, self.l2 = int(seed), int(n_fits), int(steps), lr, l2
        digest = _short([np.round(self.toggle, 6).tolist(), np.round(self.want, 6).tolist()])
        self.version: str = f"world-v{self.n_fits}-{digest}"

    def outcome(self, state: StepState, action: Mapping[str, Any]) -> dict[str, Any]:
        """Predicted checked states after ``action`` and the submit outcome after it."""
        tog, want, checked, is_submit = world_features(state, action)
        ca = checked.copy() if is_submit else _sigmoid(tog @ self.toggle)  # a submit toggles nothing
        w = _sigmoid(want @ self.want)
        m = ca * w + (1 - ca) * (1 - w)
        p = float(np.prod(m)) if len(m) else 0.5
        score = float(np.mean(2 * m - 1)) if len(m) else 0.0
        return {
            "checked_after": ca.tolist(),
            "wanted": w.tolist(),
            "p_success": p,
            "submit_score": score,
            "submit": is_submit,
        }

    def predict(
        self, task_id: str, state: StepState, actions: Sequence[Mapping[str, Any]]
    ) -> list[Prediction]:
        out = []
        for a in actions:
            o = self.outcome(state, a)
            p = o["p_success"]
            probs = [[1 - c, c] for c in o["checked_after"]] + [[1 - p, p]]
            terms = {
                "p_success": p,
                "submit_score": o["submit_score"],
                "ends_success": p if o["submit"] else 0.0,
            }
            out.append(
                Prediction(
                    terms,
                    self.version,
                    probs=probs,
                    evidence="E1",
                    extra={"checked_after": [round(c, 4) for c in o["checked_after"]]},
                )
            )
        return out

    def _rows(self, records: Sequence[PairRecord]) -> dict[str, Any]:
        tog: list[np.ndarray] = []
        want: list[np.ndarray] = []
        lab: list[int] = []
        chk: list[np.ndarray] = []
        sub: list[bool] = []
        rec: list[int] = []
        succ: list[int] = []
        score: list[float] = []
        for r in records:
            st = StepState.from_json(r.state)
            t, w, c, is_submit = world_features(st, r.action)
            labels = list(r.observation.labels)
            if len(labels) != len(t) + 1:
                continue  # a page whose controls changed under the action: no aligned units
            tog.append(t)
            want.append(w)
            lab += labels[:-1]
            chk.append(c)
            sub += [is_submit] * len(t)
            rec += [len(succ)] * len(t)
            succ.append(labels[-1])
            score.append(float(r.observation.utility_terms.get("submit_score", 0.0)))
        return {
            "tog": tog,
            "want": want,
            "lab": lab,
            "chk": chk,
            "sub": sub,
            "rec": rec,
            "succ": succ,
            "score": score,
        }

    def adapt(self, records: Sequence[PairRecord], *, seed: int) -> OutcomeWorldModel:
        """φ' = Adapt(φ, D_adapt) (eq. 12): both heads fitted jointly, warm-started, on these records."""
        import torch

        d = self._rows(records)
        if not d["succ"]:
            return self
        torch.manual_seed(seed % (2**31))
        xt = torch.tensor(np.concatenate(d["tog"]), dtype=torch.float64)
        xw = torch.tensor(np.concatenate(d["want"]), dtype=torch.float64)
        lab = torch.tensor(d["lab"], dtype=torch.float64)
        chk = torch.tensor(np.concatenate(d["chk"]), dtype=torch.float64)
        sub = torch.tensor(d["sub"], dtype=torch.bool)
        rec = torch.tensor(d["rec"], dtype=torch.long)
        succ = torch.tensor(d["succ"], dtype=torch.float64)
        score = torch.tensor(d["score"], dtype=torch.float64)
        n_rec = len(d["succ"])
        counts = torch.zeros(n_rec, dtype=torch.float64).index_add_(0, rec, torch.ones_like(lab))
        wt = torch.tensor(self.toggle, dtype=torch.float64, requires_grad=True)
        ww = torch.tensor(self.want, dtype=torch.float64, requires_grad=True)
        opt = torch.optim.Adam([wt, ww], lr=self.lr)
        clicks = bool((~sub).any())
        eps = 1e-9
        for _ in range(self.steps):
            opt.zero_grad()
            ca = torch.where(sub, chk, torch.sigmoid(xt @ wt))  # a submit toggles nothing
            w = torch.sigmoid(xw @ ww)
            m = ca * w + (1 - ca) * (1 - w)
            logp = torch.zeros(n_rec, dtype=torch.float64).index_add_(0, rec, torch.log(m + eps))
            p = torch.exp(logp).clamp(eps, 1 - eps)
            sc = torch.zeros(n_rec, dtype=torch.float64).index_add_(0, rec, 2 * m - 1) / counts.clamp(min=1)
            toggle_loss = (
                torch.nn.functional.binary_cross_entropy(ca[~sub].clamp(eps, 1 - eps), lab[~sub])
                if clicks
                else torch.zeros((), dtype=torch.float64)
            )
            loss = (
                toggle_loss
                + torch.nn.functional.binary_cross_entropy(p, succ)
                + ((sc - score) ** 2).mean()
                + self.l2 * ((wt**2).sum() + (ww**2).sum())
            )
            loss.backward()
            opt.step()
        return OutcomeWorldModel(
            wt.detach().numpy().copy(),
            ww.detach().numpy().copy(),
            seed=self.seed,
            n_fits=self.n_fits + 1,
            steps=self.steps,
            lr=self.lr,
            l2=self.l2,
        )

    def adapt_cost(self, n_records: int) -> float:
        return 1.0  # one fit, in update-compute units

    def to_bytes(self) -> bytes:
        return json.dumps(
            {
                "toggle": self.toggle.tolist(),
                "want": self.want.tolist(),
                "seed": self.seed,
                "n_fits": self.n_fits,
                "steps": self.steps,
                "lr": self.lr,
                "l2": self.l2,
            },
            sort_keys=True,
        ).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> OutcomeWorldModel:
        d = json.loads(data)
        return cls(
            d["toggle"],
            d["want"],
            seed=d["seed"],
            n_fits=d["n_fits"],
            steps=d["steps"],
            lr=d["lr"],
            l2=d["l2"],
        )
