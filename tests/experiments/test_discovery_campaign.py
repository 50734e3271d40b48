"""Campaigns: real episodes on the tabular domain, linked records, blinded critique, crash and resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rsi_workbench.config import ConfigError, load_config, validate_config
from rsi_workbench.discovery.assess import check_blinded
from rsi_workbench.discovery.graph import ResearchGraph
from rsi_workbench.discovery.lead import LeadDecision, LeadState
from rsi_workbench.discovery.records import (
    HypothesisVersion,
    hypotheses_frame,
    load_records,
    load_typed,
    records_frame,
    transcripts_frame,
)
from rsi_workbench.experiments.discovery import campaign
from rsi_workbench.records import Run

REPO = Path(__file__).resolve().parents[2]
SMOKE = REPO / "configs" / "discovery" / "smoke.yaml"


def _config(**kw):
    cfg = load_config(SMOKE, campaign.Config)
    return cfg.model_copy(update=kw) if kw else cfg


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("discovery") / "smoke"
    return campaign.run_campaign(_config(), out, progress=False)


def _signature(path):
    recs = load_records(path)
    hyps = [
        (h.hypothesis_id, h.operation, tuple(h.parents), json.dumps(h.content.plan.spec, sort_keys=True))
        for h in recs.hypotheses
    ]
    prof = [(p.hypothesis_id, p.weighted) for p in recs.profiles]
    crit = [(c.a, c.b, c.outcome) for c in recs.critiques]
    labels = [(p.hypothesis_id, p.label) for p in recs.progress]
    return hyps, prof, crit, labels


def test_smoke_campaign_records_every_linked_record(smoke_run):
    recs = load_records(smoke_run)
    assert len(recs.episodes) == 3 and len(recs.lead_decisions) == 3
    ids = {h.hypothesis_id for h in recs.hypotheses}
    assert ids == {t.hypothesis_id for t in recs.tasks} == {e.hypothesis_id for e in recs.executions}
    assert ids == {p.hypothesis_id for p in recs.profiles}
    # drafts are promoted exactly: the version's content is the draft's bytes
    run = Run.open(smoke_run)
    promo = {p.hypothesis_id: p for p in recs.promotions}
    for h in recs.hypotheses:
        p = promo[h.hypothesis_id]
        stored = run.artifacts.get_json(p.draft_sha256)
        assert stored == h.content.model_dump(mode="json")
        pubs = [
            c
            for c in recs.contributions
            if c.hypothesis_id == h.hypothesis_id and c.contribution == "publish"
        ]
        assert (
            pubs
            and pubs[0].trajectory_id == h.publisher
            and pubs[0].evidence.promotion_ids == [p.promotion_id]
        )
        coord = [
            c
            for c in recs.contributions
            if c.hypothesis_id == h.hypothesis_id and c.contribution == "coordinate"
        ]
        assert coord and coord[0].role == "lead" and coord[0].evidence.assignment_id
    # the compiled task keeps the scientific commitments; criteria were recorded before results
    for t in recs.tasks:
        h = recs.hypothesis(t.hypothesis_id)
        assert t.inputs["commitments"]["decision_rule"]["threshold"] == h.content.criteria.threshold
        assert t.inputs["commitments"]["population"] == h.content.claim.population
    assert all(p.inputs["preregistered"] for p in recs.profiles)
    # executed outputs are stored content-addressed and verify
    for e in recs.executions:
        assert e.status == "ok" and set(e.outputs) == {"metrics.json", "predictions.csv", "splits.csv"}
        for sha in e.outputs.values():
            run.artifacts.get(sha)
    # every revision carries an ancestor-aware progress label against its true parents
    revisions = [h for h in recs.hypotheses if h.parents]
    assert {p.hypothesis_id for p in recs.progress} == {h.hypothesis_id for h in revisions}
    for p in recs.progress:
        assert p.predecessors == recs.hypothesis(p.hypothesis_id).parents


def test_transcripts_are_role_tagged(smoke_run):
    df = transcripts_frame(smoke_run)
    assert {
        "trajectory_id",
        "role",
        "episode",
        "turn",
        "messages_in",
        "output",
        "failed",
        "tool_name",
    } <= set(df.columns)
    assert {"lead", "generation", "compiler", "critique"} <= set(df.role)
    gen = df[df.role == "generation"]
    assert set(gen["tool_name"].dropna()) >= {"inspect_data", "publish_draft"}
    assert all(m[0]["role"] == "system" for m in df.messages_in)
    hf = hypotheses_frame(smoke_run)
    assert {
        "hypothesis_id",
        "parents",
        "operation",
        "episode",
        "round",
        "domain",
        "content.criteria.threshold",
    } <= set(hf.columns)
    assert len(records_frame(smoke_run, HypothesisVersion)) == len(hf)


def test_shared_split_file_links_hypotheses_without_lineage(smoke_run):
    recs = load_records(smoke_run)
    g = ResearchGraph.from_records(recs)
    split = [s for s in recs.sources if s.source_id.startswith("split:")]
    assert len(split) == 1
    users = g.support[split[0].source_id]
    assert len(users) == len(recs.hypotheses) >= 3
    # lineage edges are exactly the recorded parent links, not the shared split
    assert sorted(g.lineage_edges()) == sorted(
        (p, h.hypothesis_id) for h in recs.hypotheses for p in h.parents
    )
    roots = [h for h in recs.hypotheses if not h.parents]
    assert len(roots) >= 2 and all(g.ancestors(r.hypothesis_id) == set() for r in roots)


def test_recorded_critique_inputs_are_blinded(smoke_run):
    recs = load_records(smoke_run)
    assert recs.critiques
    ids = {h.hypothesis_id for h in recs.hypotheses} | {t.trajectory_id for t in recs.turns}
    ids |= {d.draft_id for d in recs.drafts}
    crit_turns = [t for t in recs.turns if t.role == "critique"]
    assert len(crit_turns) == len(recs.critiques)
    for t in crit_turns:
        shown = json.loads(t.messages_in[-1]["content"])
        assert set(shown) == {"a", "b"}
        check_blinded(shown, ids)
        assert t.output["content"].startswith("preference: ")


def test_noise_control_scores_lowest_in_the_campaign(smoke_run):
    recs = load_records(smoke_run)
    control = [h for h in recs.hypotheses if "noise" in h.content.plan.spec["added"]]
    assert len(control) == 1
    w = {p.hypothesis_id: p.weighted for p in recs.profiles}
    assert w[control[0].hypothesis_id] == min(w.values()) < 4.5
    ready = {p.hypothesis_id: p.execution_ready for p in recs.profiles}
    assert ready[control[0].hypothesis_id]  # execution-ready, and still worthless


def test_report_tables(smoke_run):
    text = campaign.report(smoke_run)
    assert "research graph:" in text and "operation shares:" in text and "mean weighted profile" in text
    assert "wall time (from the events: campaign first to last event): experiment" in text


def test_resume_after_crash_mid_episode(smoke_run, tmp_path, monkeypatch):
    out = tmp_path / "crashed"
    real = campaign._execute
    calls = {"n": 0}

    def crashing(task, workdir):
        calls["n"] += 1
        if calls["n"] == 3:  # episode 0 runs two analyses; crash inside episode 1
            raise KeyboardInterrupt("simulated crash")
        return real(task, workdir)

    monkeypatch.setattr(campaign, "_execute", crashing)
    with pytest.raises(KeyboardInterrupt):
        campaign.run_campaign(_config(), out, progress=False)
    partial = load_records(out)
    assert len(partial.episodes) == 1
    assert any(e.kind == "hypothesis_version" and e.cycle == 1 for e in Run.open(out).events())
    assert all(h.episode == 0 for h in partial.hypotheses)  # the torn episode is not state
    monkeypatch.setattr(campaign, "_execute", real)
    campaign.run_campaign(_config(), out, resume=True, progress=False)
    starts = [e.payload for e in Run.open(out).events("episode_started")]
    assert [s["episode"] for s in starts] == [0, 1, 1, 2] and starts[2]["attempt"] == 1
    assert _signature(out) == _signature(smoke_run)


def test_resume_of_a_finished_campaign_is_a_no_op(smoke_run, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(smoke_run, copy)
    n = len(Run.open(copy).events())
    campaign.run_campaign(_config(), copy, resume=True, progress=False)
    evs = Run.open(copy).events()
    assert [e.kind for e in evs[n:]] == ["campaign_started"]


class GarbageLeadDouble:
    """Test double for a model-backed Lead whose output breaks the constrained format."""

    name = "garbage-lead-double"

    def decide(self, state: LeadState, rng) -> LeadDecision:
        return LeadDecision("evolve", ("h999-0",), state.directions[0], raw="evolve something, I guess")


def test_invalid_lead_output_is_a_failed_turn_and_the_rule_lead_takes_over(tmp_path):
    out = campaign.run_campaign(
        _config(episodes=1), tmp_path / "bad", lead=GarbageLeadDouble(), progress=False
    )
    recs = load_records(out)
    bad = [d for d in recs.lead_decisions if not d.valid]
    assert (
        bad
        and "graph is empty" in bad[0].error
        and bad[0].operation == "evolve"
        and bad[0].lead == "garbage-lead-double"
    )
    assert any(d.fallback and d.valid for d in recs.lead_decisions)
    failed = [t for t in recs.turns if t.role == "lead" and t.failed]
    assert failed and failed[0].output["content"] == "evolve something, I guess"
    assert failed[0].model == "garbage-lead-double"
    assert len(recs.hypotheses) == 2  # restart + the episode-0 noise control


def test_config_errors_name_the_field():
    with pytest.raises(ConfigError, match="directions"):
        validate_config(
            {"experiment": "discovery", "directions": ["mars/rovers"]}, campaign.Config, source="x.yaml"
        )
    with pytest.raises(ConfigError, match="(?s)x.yaml.*harness.critique.comparisons: unknown key"):
        validate_config(
            {"experiment": "discovery", "harness": {"critique": {"comparisons": 2}}},
            campaign.Config,
            source="x.yaml",
        )
    cfg = validate_config(
        {"experiment": "discovery", "harness": {"version": "v2", "operations": {"restart": 0.2}}},
        campaign.Config,
    )
    assert (
        cfg.harness.operations.restart == 0.2 and cfg.harness.digest() != campaign.Config().harness.digest()
    )


@pytest.mark.slow
def test_cli_run_survives_sigkill_and_resumes(smoke_run, tmp_path):
    out = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "rsi_workbench.cli"]
    proc = subprocess.Popen(
        [*cmd, "run", str(SMOKE), "--out", str(out)],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 240
    events = out / "events.jsonl"
    while time.time() < deadline and proc.poll() is None:
        data = events.read_bytes() if events.exists() else b""
        # kill inside episode 1: its hypothesis is recorded, the episode is not finished
        if (
            data.count(b'"kind":"episode_started"') >= 2
            and b'"kind":"hypothesis_version"' in data.split(b'"kind":"episode_started"')[-1]
        ):
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the campaign finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL
    assert len(load_records(out).episodes) < 3
    res = subprocess.run(
        [*cmd, "resume", str(out)], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert "research graph:" in res.stdout
    assert _signature(out) == _signature(smoke_run)
    assert load_typed(out, HypothesisVersion)


class ScriptedLLMDouble:
    """Test double for a chat model: replays fixed replies and keeps the prompts it saw."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.prompts = []

    def chat(self, messages, *, n=1, temperature=0.0, top_p=1.0, max_tokens=512, stop=None, seed=None):
        from rsi_workbench.agents import ChatResult

        self.prompts.append(list(messages))
        return ChatResult([self.replies.pop(0)] * n, ["stop"] * n, 0, 0, 0.0, "double", "scripted")

    def score(self, prompt, continuations, *, end=False):
        raise NotImplementedError


def test_model_backed_generation_plugs_in_through_the_llm_protocol(tmp_path):
    from rsi_workbench.discovery.roles import LLMProposer
    from rsi_workbench.domains import tabular

    spec = tabular.AnalysisSpec(
        "sklearn-diabetes/progression", ("demographics",), ("glucose",), 0.01, n_bootstrap=100, outer_folds=3
    )
    good = "Here is my proposal:\n" + json.dumps(tabular.hypothesis_content(spec))
    llm = ScriptedLLMDouble([good])
    out = campaign.run_campaign(
        _config(episodes=1, noise_control=False),
        tmp_path / "llm",
        generation=LLMProposer(llm),
        progress=False,
    )
    recs = load_records(out)
    assert [h.content.plan.spec["added"] for h in recs.hypotheses] == [["glucose"]]
    gen = [t for t in recs.turns if t.role == "generation"]
    assert gen[0].output["tool_call"]["name"] == "inspect_data"
    assert any(t.output["content"] == good for t in gen)
    assert "sklearn-diabetes/progression" in json.dumps([m.content for m in llm.prompts[0]])
    assert recs.executions[0].status == "ok"


def _content_without_spec():
    from rsi_workbench.domains import tabular

    c = tabular.hypothesis_content(
        tabular.AnalysisSpec("sklearn-diabetes/progression", ("demographics",), ("glucose",), 0.01)
    )
    c["plan"]["spec"] = {"direction": "sklearn-diabetes/progression"}
    return c


@pytest.mark.parametrize(
    "reply",
    [
        "I would look at glucose.",  # not JSON
        json.dumps({"claim": {"statement": "glucose matters"}}),  # no plan, criteria, alternatives
        json.dumps(_content_without_spec()),  # (c, π, d, a) complete, but the plan cannot compile
    ],
)
def test_invalid_model_hypotheses_are_failed_actions_not_nodes(tmp_path, reply):
    from rsi_workbench.discovery.roles import LLMProposer

    out = campaign.run_campaign(
        _config(episodes=1, noise_control=False),
        tmp_path / "bad",
        generation=LLMProposer(ScriptedLLMDouble([reply])),
        progress=False,
    )
    recs = load_records(out)
    assert recs.hypotheses == [] and len(recs.episodes) == 1
    assert any(t.failed for t in recs.turns if t.role == "generation")


def test_assessment_levels_from_records(smoke_run):
    from rsi_workbench.discovery.assess import (
        PATH_WEIGHTS,
        axis_means,
        campaign_allocation,
        operation_shares,
        path_scores,
        profile_table,
        progress_table,
    )

    recs = load_records(smoke_run)
    ops = operation_shares(recs)
    assert list(ops.episode) == [0, 1, 2]
    assert (ops[["evolve", "repair", "crossover", "restart"]].sum(axis=1) == 1).all()
    assert ops.loc[0, "restart"] == 1  # the first episode can only restart
    prof = profile_table(recs)
    assert len(prof) == len(recs.hypotheses) and prof.weighted.between(1, 10).all()
    assert len(progress_table(recs)) == sum(bool(h.parents) for h in recs.hypotheses)
    ps = path_scores(recs)
    assert set(PATH_WEIGHTS) <= set(ps.columns) and ps.path_score.between(1, 10).all()
    alloc = campaign_allocation(recs, {"agent_calls": {"initial": 10.0, "spent": 5.0, "remaining": 5.0}})
    assert alloc["hypotheses"] == len(recs.hypotheses) and alloc["budget_use"] == {"agent_calls": 0.5}
    assert abs(sum(alloc["operation_shares"].values()) - 1) < 1e-9
    assert "weighted Q" in axis_means(recs).index
