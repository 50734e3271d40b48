"""``configs/dreaming/llm_smoke.yaml`` end to end with a scripted model double as the policy writer:
written programs replayed in the sandbox, failures recorded with their reason, model calls recorded
in the arm's sub-run and answered from it on resume, the report's written-policy table."""

from __future__ import annotations

from pathlib import Path

from rsi_workbench.cli import load_experiment_config
from rsi_workbench.domains.math import policy_writer
from rsi_workbench.experiments.dreaming.experiment import load_frames, report, run_experiment
from rsi_workbench.models import ChatResult
from rsi_workbench.records import Run

REPO = Path(__file__).resolve().parents[2]

VALID = """```python
def select_batch(view, W):
    leaves = [n for n in view.legal() if n != "r"]
    ok = [n for n in leaves if view.node(n).valid and view.node(n).score is not None]
    ok.sort(key=lambda n: -view.node(n).score)
    batch = ok[:W]
    if len(batch) < W and view.capacity("r"):
        batch.append("r")
    return batch


def plan_grid(history):
    return (3, 6)
```"""
STOP_EARLY = VALID.replace("    return batch", "    return [] if view.best() else batch")
UNREVEALED = '```python\ndef select_batch(view, W):\n    return ["t0n999"]\n```'


class ScriptedWriterModel:
    """Test double for the writer's language model: every call answers a valid program and one that
    names an unrevealed node (then repeats)."""

    identity, name = "scripted:writer", "scripted"

    def __init__(self, first: str = VALID) -> None:
        self.calls, self.first = 0, first

    def chat(self, messages, *, n=1, temperature=0.0, top_p=1.0, max_tokens=512, stop=None, seed=None):
        self.calls += 1
        texts = [self.first, UNREVEALED] * n
        return ChatResult(texts[:n], ["stop"] * n, 321, 40 * n, 0.01, self.identity, self.name)


def test_llm_smoke_config_runs_with_a_scripted_writer(tmp_path, monkeypatch):
    model = ScriptedWriterModel()
    monkeypatch.setattr(policy_writer, "load_writer_backend", lambda cfg: model)
    cfg = load_experiment_config(REPO / "configs" / "dreaming" / "llm_smoke.yaml")
    out = run_experiment(cfg, tmp_path / "llm_smoke")
    assert model.calls == 3  # one call (n = candidates - 1) per dreaming step, three trees
    sc = load_frames(out, "replay_scored")
    w = sc[sc["arm"] == "dreaming_writer"]
    assert len(w) == 3 * 3 and set(w["candidate"]) == {0, 1, 2}
    bad = w[w["failure.kind"].notna()]
    assert (
        len(bad) == 3 and set(bad["failure.kind"]) == {"unrevealed_node"} and set(bad["failure.round"]) == {1}
    )
    assert "t0n999" in bad["failure.reason"].iloc[0] and w[w["candidate"] == 1]["V"].notna().all()
    sub = Run.open(out / "arms" / "dreaming_writer-s0")
    progs = [e.payload["program"] for e in sub.events("replay_scored") if e.payload["program"]]
    assert progs and "def select_batch" in sub.artifacts.get(progs[0]).decode()
    calls = sub.events("model_call")
    assert len(calls) == 3 and calls[0].payload["prompt_tokens"] == 321
    dep = load_frames(out, "policy_deployed")
    assert (dep["V_chosen"] >= dep["V_pi0"]).all()  # non-regression on the replay objective
    text = report(out)
    assert "dreaming_writer" in text and "unrevealed_node 3" in text and "proposed policies" in text


def test_a_deployed_written_policy_drives_the_next_real_tree_in_the_sandbox(tmp_path, monkeypatch):
    model = ScriptedWriterModel(STOP_EARLY)
    monkeypatch.setattr(policy_writer, "load_writer_backend", lambda cfg: model)
    cfg = load_experiment_config(REPO / "configs" / "dreaming" / "llm_smoke.yaml")
    # a node cost that makes stopping after the first valid node win the replay
    cfg = cfg.model_copy(update={"arms": ["dreaming_writer"], "beta1": 0.05, "calls": 6, "candidates": 2})
    out = run_experiment(cfg, tmp_path / "deployed")
    sub = Run.open(out / "arms" / "dreaming_writer-s0")
    dep = [e.payload for e in sub.events("policy_deployed")]
    assert dep[0]["chosen"] == 1 and dep[0]["program"] and dep[0]["V_chosen"] > dep[0]["V_pi0"]
    started = [e.payload for e in sub.events("tree_started")]
    assert started[1]["policy"] == "dreaming_writer-program" and started[1]["grid_width"] == 3
    trees = sub.events("tree_recorded")
    assert trees[1].payload["nodes"] == 1 and not sub.events("policy_failed_online")
