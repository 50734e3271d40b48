# A researcher's own domain for the protocol engine: tuning the step size of minibatch SGD on a real
# regression (scikit-learn's diabetes data, standardised). A task is a batch size; an action is a
# log10 step size; one evaluation runs 50 steps of SGD on sampled minibatches (a noisy measurement,
# seeded by task and action) and scores -log10 of the training MSE (at least -1: diverged); it
# passes or fails three targets (score >= 0.1, 0.2, 0.3), the units the predictor is scored on.
# The state is the best step size so far. The predictor is a kernel regression of the score on
# (log10 step size, log2 batch size) over what it was adapted on, so what it learns on some batch
# sizes transfers to the others; P(target met) is normal around its mean.
import numpy as np
from scipy.stats import norm
from sklearn.datasets import load_diabetes

from rsi_workbench.protocol import BaseEnvironment, BasePolicy, BasePredictor, Observation, Prediction

X, Y = ((a - a.mean(0)) / a.std(0) for a in load_diabetes(return_X_y=True))
TARGETS = np.array([0.1, 0.2, 0.3])


class SGDStepSize(BaseEnvironment):
    def initial(self, task_id):
        obs = self.evaluate(task_id, None, -3.0)
        return {"lr": -3.0, "score": obs.utility_terms["score"]}, obs

    def evaluate(self, task_id, state, action):
        rng, w = np.random.default_rng([int(task_id), round(1000 * action) % 2**31]), np.zeros(X.shape[1])
        for i in rng.integers(0, len(Y), (50, int(task_id))):
            w = np.clip(w - 10**action * X[i].T @ (X[i] @ w - Y[i]) / len(i), -1e6, 1e6)
        score = max(-1.0, -float(np.log10(np.mean((X @ w - Y) ** 2))))
        return Observation({"score": score}, [int(score < t) for t in TARGETS], solved=score >= 0.31)

    def advance(self, task_id, state, action, observation):
        s = observation.utility_terms["score"]
        return {"lr": action, "score": s} if s > state["score"] else state


class LocalSearch(BasePolicy):  # step sizes around the best so far; an update narrows the spread
    def __init__(self, spread=1.0):
        self.spread = spread

    def propose(self, task_id, state, k, rng):
        return [round(state["lr"] + rng.uniform(-self.spread, self.spread), 3) for _ in range(k)]

    def update(self, records, imagined, *, seed):
        return LocalSearch(self.spread / 2)


class KernelPredictor(BasePredictor):  # kernel regression of the score on (step size, batch size)
    def __init__(self, data=(), width=0.4):
        self.data, self.width = [list(d) for d in data], width

    def predict(self, task_id, state, actions):
        pts = np.array(self.data or [[-3.0, int(task_id), 0.0]])  # before any data: no gain anywhere
        near = np.log2(int(task_id) / pts[:, 1]) ** 2 / 4  # batch sizes 2x apart: weight e^-1/4
        k = np.exp(-(((np.array(actions)[:, None] - pts[:, 0]) / self.width) ** 2) - near)
        mean, std = k @ pts[:, 2] / (k.sum(1) + 0.05), 0.05 + 1 / (1 + 4 * k.sum(1))  # far away: 0
        p = norm.cdf((mean[:, None] - TARGETS) / std[:, None]).tolist()  # P(target met), per target
        return [Prediction({"score": m}, self.version, [[q, 1 - q] for q in ps]) for m, ps in zip(mean, p)]

    def adapt(self, records, *, seed):
        rows = [[r.action["action"], int(r.task_id), r.observation.utility_terms["score"]] for r in records]
        return KernelPredictor(rows, self.width)
