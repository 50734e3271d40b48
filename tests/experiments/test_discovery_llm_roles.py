"""Model-backed research roles from the campaign config: recorded calls, budgets, kill/resume with
zero new calls for recorded requests, replay of a finished run, and config errors.

A tiny random 2-layer Llama saved as a checkpoint (no download) stands in for the default model so
calls take milliseconds; ``configs/discovery/llm_smoke.yaml`` itself (the real SmolLM2 default) is
run by the slow test at the end.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from rsi_workbench.config import ConfigError, load_config, validate_config
from rsi_workbench.discovery.assess import profile_table
from rsi_workbench.discovery.records import load_records
from rsi_workbench.experiments.discovery import campaign
from rsi_workbench.models import ReplayMissing
from rsi_workbench.records import Run

pytest.importorskip("transformers")

REPO = Path(__file__).resolve().parents[2]
LLM_SMOKE = REPO / "configs" / "discovery" / "llm_smoke.yaml"


@pytest.fixture(scope="module")
def tiny_ckpt(tmp_path_factory) -> Path:
    from rsi_workbench.discovery.sft import byte_level_tokenizer, tiny_causal_lm

    tok = byte_level_tokenizer()
    d = tmp_path_factory.mktemp("tiny") / "ckpt"
    tiny_causal_lm(len(tok), seed=0).save_pretrained(d)
    tok.save_pretrained(d)
    return d


def _tiny_config(ckpt: Path, **model_kw) -> dict:
    """llm_smoke.yaml with its roles' model pointed at the tiny checkpoint."""
    data = yaml.safe_load(LLM_SMOKE.read_text())
    for rm in data["roles"].values():
        rm["model"] = {**rm["model"], "name": str(ckpt), **model_kw}
    return data


def _write(tmp_path: Path, data: dict, name="cfg.yaml") -> Path:
    p = tmp_path / name
    p.write_text(yaml.safe_dump(data))
    return p


def _cfg(data: dict) -> campaign.Config:
    return validate_config(data, campaign.Config, source="test")


def _calls(path: Path, kind="model_call") -> list[tuple[str, int]]:
    return [(e.payload["key"], int(e.payload["ordinal"])) for e in Run.open(path).events(kind)]


def _table(path: Path):
    recs = load_records(path)
    hyps = [
        (h.hypothesis_id, h.operation, tuple(h.parents), json.dumps(h.content.plan.spec))
        for h in recs.hypotheses
    ]
    decisions = [(d.episode, d.operation, tuple(d.parents), d.valid) for d in recs.lead_decisions]
    return hyps, decisions, profile_table(recs).round(6).to_dict("records")


@pytest.fixture(scope="module")
def tiny_run(tiny_ckpt, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("llm-roles") / "uninterrupted"
    return campaign.run_campaign(_cfg(_tiny_config(tiny_ckpt)), out, progress=False)


def test_model_roles_are_recorded_and_charged(tiny_run, tiny_ckpt):
    run = Run.open(tiny_run)
    calls = [e.payload for e in run.events("model_call")]
    assert {c["role"] for c in calls} <= {"lead", "evolution"}
    assert sum(c["role"] == "lead" and c["call"] == "score" for c in calls) == 3  # one per episode
    started = run.events("campaign_started")[0].payload
    assert started["model_roles"]["lead"] == f"llm-lead:transformers:{tiny_ckpt}"
    assert started["lead"] == started["model_roles"]["lead"]
    spent = [e.payload for e in run.events("budget_spent")]
    tokens = sum(c["prompt_tokens"] + c["completion_tokens"] for c in calls)
    assert tokens > 0 and sum(s["amount"] for s in spent if s["budget"] == "model_tokens") == tokens
    model_charges = [s for s in spent if s["budget"] == "agent_calls" and s["reason"].startswith("model ")]
    assert len(model_charges) == len(calls)
    # a model-backed turn is charged once (by the recorder), never again as a turn
    assert not [s for s in spent if s["budget"] == "agent_calls" and s["reason"] == "lead turns"]
    assert [s for s in spent if s["budget"] == "agent_calls" and s["reason"] == "generation turns"]
    recs = load_records(tiny_run)
    lead_turns = [t for t in recs.turns if t.role == "lead"]
    assert lead_turns and all(t.model == started["lead"] for t in lead_turns)
    assert recs.hypotheses  # Generation stays the rule role, so the graph grows
    # the rule-only smoke config dumps exactly as before (no roles, no model_tokens keys)
    smoke = load_config(REPO / "configs" / "discovery" / "smoke.yaml", campaign.Config).model_dump(
        mode="json"
    )
    assert "roles" not in smoke and "model_tokens" not in smoke["budgets"]


def test_replay_of_a_finished_run_calls_no_model(tiny_run, tiny_ckpt, tmp_path):
    data = _tiny_config(tiny_ckpt, replay=True, replay_from=str(tiny_run))
    out = campaign.run_campaign(_cfg(data), tmp_path / "replayed", progress=False)
    assert _calls(out) == []  # zero live calls
    assert sorted(_calls(out, "model_replay")) == sorted(_calls(tiny_run))
    assert _table(out) == _table(tiny_run)


def test_replay_with_a_missing_record_names_the_request(tiny_ckpt, tmp_path):
    out = tmp_path / "missing"
    with pytest.raises(ReplayMissing, match=r"(?s)no recorded answer for score request .*role lead"):
        campaign.run_campaign(_cfg(_tiny_config(tiny_ckpt, replay=True)), out, progress=False)
    assert _calls(out) == []


def test_a_spent_model_tokens_budget_stops_the_campaign_cleanly(tiny_ckpt, tmp_path):
    data = _tiny_config(tiny_ckpt)
    data["budgets"]["model_tokens"] = 50  # the first Lead call alone reads more
    out = campaign.run_campaign(_cfg(data), tmp_path / "spent", progress=False)
    run = Run.open(out)
    fin = run.events("campaign_finished")[-1].payload
    assert fin["stopped"].startswith("model_tokens budget spent before episode 1")
    assert fin["budgets"]["model_tokens"]["remaining"] == 0
    assert len(load_records(out).episodes) == 1 and len(_calls(out)) >= 1


def test_a_round_that_leaves_the_model_lead_out_of_theta_is_refused_clearly(tiny_run, tmp_path):
    from rsi_workbench.experiments.discovery import round as rnd

    cfg = rnd.Config(
        campaign=str(tiny_run), dev_directions=["sklearn-breast-cancer/malignant"], theta_roles=["generation"]
    )
    with pytest.raises(
        ValueError, match=r"led by the configured model 'llm-lead:transformers:.*add 'lead' to theta_roles"
    ):
        rnd.run_experiment(cfg, tmp_path / "round")
    assert not (tmp_path / "round").exists()


def test_role_config_errors_name_the_file_and_field():
    base = {"experiment": "discovery"}
    cases = [
        ({"roles": {"critic": {"model": {"name": "default"}}}}, r"roles\.critic: unknown key"),
        (
            {"roles": {"critique": {"model": {"name": "default"}, "max_tokens": 0}}},
            r"roles\.critique\.max_tokens",
        ),
        ({"roles": {"lead": {"model": {"backend": "vllm"}}}}, r"roles\.lead\.model\.backend"),
        (
            {"roles": {"generation": {"model": {"backend": "openai"}}}},
            r"roles\.generation\.model: .*base_url",
        ),
        (
            {"roles": {"generation": {"model": {"name": "default"}, "max_tokens": 0}}},
            r"roles\.generation\.max_tokens",
        ),
        ({"budgets": {"model_tokens": 0}}, r"budgets\.model_tokens"),
    ]
    for extra, pattern in cases:
        with pytest.raises(ConfigError, match=rf"(?s)llm.yaml.*{pattern}"):
            validate_config({**base, **extra}, campaign.Config, source="llm.yaml")


@pytest.mark.slow
def test_sigkilled_campaign_resumes_with_zero_new_calls_for_recorded_requests(tiny_run, tiny_ckpt, tmp_path):
    cfg = _write(tmp_path, _tiny_config(tiny_ckpt))
    out = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "rsi_workbench.cli"]
    proc = subprocess.Popen(
        [*cmd, "run", str(cfg), "--out", str(out)],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    events = out / "events.jsonl"
    deadline = time.time() + 600
    while time.time() < deadline and proc.poll() is None:
        data = events.read_bytes() if events.exists() else b""
        # kill inside episode 1, once a model call of that episode is recorded
        if data.count(b'"kind":"episode_started"') >= 2:
            cut = data.split(b'"kind":"episode_started"')[-1]
            if b'"kind":"model_call"' in cut and b'"kind":"episode_finished"' not in cut:
                break
        time.sleep(0.01)
    assert proc.poll() is None, "the campaign finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL
    before = _calls(out)
    assert before and len(load_records(out).episodes) < 3
    evs = Run.open(out).events()
    last_start = max(i for i, e in enumerate(evs) if e.kind == "episode_started")
    cut = [(e.payload["key"], int(e.payload["ordinal"])) for e in evs[last_start:] if e.kind == "model_call"]
    res = subprocess.run([*cmd, "resume", str(out)], cwd=REPO, env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
    after, replayed = _calls(out), _calls(out, "model_replay")
    assert after[: len(before)] == before
    assert len(set(after)) == len(after)  # no recorded request was called live again
    assert sorted(after) == sorted(_calls(tiny_run))  # the same requests as the uninterrupted run
    # the cut episode's recorded calls were answered from the record: zero new live calls for them
    assert cut and sorted(replayed) == sorted(cut)
    assert _table(out) == _table(tiny_run)


@pytest.mark.slow
def test_llm_smoke_config_runs_on_the_offline_default(tmp_path):
    pytest.importorskip("gguf")
    from rsi_workbench.models.prepare import default_gguf

    try:
        default_gguf()
    except FileNotFoundError as e:
        pytest.skip(str(e))
    cfg = load_config(LLM_SMOKE, campaign.Config).model_copy(update={"episodes": 2})
    out = campaign.run_campaign(cfg, tmp_path / "smoke", progress=False)
    calls = [e.payload for e in Run.open(out).events("model_call")]
    assert calls and all(c["model"] == "default" for c in calls)
    assert {c["role"] for c in calls} >= {"lead"}
    assert any(e.payload["budget"] == "model_tokens" for e in Run.open(out).events("budget_spent"))
