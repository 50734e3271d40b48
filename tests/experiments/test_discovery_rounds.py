"""Closed DiscoveryRSI rounds and the model-backed judging roles (issue 18, items 4-5).

Model-backed Critique and Progress are driven by a scripted model (a test double, named as such):
valid replies become preference / label records, invalid ones failed turns and no record, and the
Critique's prompt carries no hypothesis or trajectory id. ``configs/discovery/rounds_smoke.yaml``
itself runs with its roles pointed at a tiny random checkpoint (same code path as the offline
default, milliseconds per call): R0 -> credit + harness round (theta+ a LoRA) -> R1.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from rsi_workbench.config import ConfigError, load_config, validate_config
from rsi_workbench.discovery.judges import (
    InvalidJudgement,
    LLMCritique,
    LLMProgress,
    parse_preference,
    parse_progress,
)
from rsi_workbench.discovery.records import load_records
from rsi_workbench.experiments.discovery import campaign, rounds
from rsi_workbench.experiments.discovery import round as rnd
from rsi_workbench.records import Run

REPO = Path(__file__).resolve().parents[2]
SMOKE = REPO / "configs" / "discovery" / "smoke.yaml"
ROUNDS_SMOKE = REPO / "configs" / "discovery" / "rounds_smoke.yaml"


class ScriptedLLMDouble:
    """A test double for ``agents.LLM``: answers chat calls from a list of replies, cycling."""

    def __init__(self, replies: list[str]):
        self.replies = list(replies)
        self.prompts: list[list] = []

    def chat(self, messages, *, n=1, temperature=0.0, top_p=1.0, max_tokens=512, stop=None, seed=None):
        from rsi_workbench.agents import ChatResult

        reply = self.replies[len(self.prompts) % len(self.replies)]
        self.prompts.append(list(messages))
        return ChatResult([reply] * n, ["stop"] * n, 0, 0, 0.0, "double", "scripted")


def test_judging_replies_are_parsed_and_validated():
    assert parse_preference("Preference: B\n") == "b"
    assert parse_preference("I think preference: tie.") == "tie"
    for text in ("A is better", "preference: a, preference: b"):  # no decision / an echoed format
        with pytest.raises(InvalidJudgement):
            parse_preference(text)
    assert parse_progress("label: duplicate\nreasons: same analysis", operation="evolve", executed=True) == (
        "duplicate",
        ["same analysis"],
    )
    bad = [
        ("label: great", "evolve", True),  # not a label
        ("label: necessary_repair", "evolve", True),  # not a repair
        ("label: substantive_progress", "evolve", False),  # a gain with no executed evidence
        ("progress!", "repair", True),
    ]
    for text, op, executed in bad:
        with pytest.raises(InvalidJudgement):
            parse_progress(text, operation=op, executed=executed)


def _judged_campaign(tmp_path: Path, critique: list[str], progress: list[str]):
    from rsi_workbench.discovery import campaign as engine
    from rsi_workbench.discovery.lead import RuleLead
    from rsi_workbench.domains.tabular.roles import TabularEvolution, TabularGeneration

    cfg = load_config(SMOKE, campaign.Config).model_copy(update={"episodes": 3})
    crit, prog = LLMCritique(ScriptedLLMDouble(critique)), LLMProgress(ScriptedLLMDouble(progress))
    out = engine.run_campaign(
        campaign.research(cfg),
        cfg,
        tmp_path / "judged",
        lead=RuleLead(),
        harness=cfg.harness,
        generation=TabularGeneration(),
        evolution=TabularEvolution(),
        progress=False,
        open_roles=lambda run, ledger: {"critique": crit, "progress": prog},
    )
    return load_records(out), crit, prog


def test_model_critique_and_progress_write_records_only_for_valid_replies(tmp_path):
    recs, crit, prog = _judged_campaign(
        tmp_path,
        ["preference: b", "A looks nicer to me"],
        ["label: insufficient_evidence\nreasons: small gain"],
    )
    cturns = [t for t in recs.turns if t.role == "critique"]
    assert cturns and len(cturns) == len(crit.llm.prompts)
    failed = [t for t in cturns if t.failed]
    assert failed and all(t.output["content"] == "A looks nicer to me" for t in failed)
    assert len(recs.critiques) == len(cturns) - len(failed)  # an invalid judgement writes no preference
    assert {c.outcome for c in recs.critiques} == {"b"}
    assert all(c.rubric["critic_model"] == "llm-critique" for c in recs.critiques)
    assert all(t.model == "llm-critique" for t in cturns)
    # blinded: no hypothesis or trajectory id reaches the model
    ids = {h.hypothesis_id for h in recs.hypotheses} | {t.trajectory_id for t in recs.turns}
    sent = json.dumps([[m.content for m in p] for p in crit.llm.prompts])
    assert not [i for i in ids if i in sent]
    assert prog.llm.prompts and [p.label for p in recs.progress] == ["insufficient_evidence"] * len(
        prog.llm.prompts
    )
    assert all(p.reasons == ["small gain"] for p in recs.progress)


def test_invalid_progress_replies_are_failed_turns_and_no_label(tmp_path):
    recs, _, prog = _judged_campaign(tmp_path, ["preference: tie"], ["label: necessary_repair"])
    pturns = [t for t in recs.turns if t.role == "progress"]
    assert prog.llm.prompts and len(pturns) == len(prog.llm.prompts)
    # the campaign's revisions are evolves/crossovers, so "necessary_repair" is invalid for them
    repairs = {h.hypothesis_id for h in recs.hypotheses if h.operation == "repair"}
    assert all(t.failed for t in pturns if not set(t.hypothesis_ids) & repairs)
    assert len(recs.progress) == sum(not t.failed for t in pturns)


def test_theta_plus_for_critique_or_progress_is_refused_naming_the_field():
    data = yaml.safe_load(ROUNDS_SMOKE.read_text())
    data["improve"]["theta_roles"] = ["lead", "critique"]
    with pytest.raises(
        ConfigError, match=r"(?s)rounds\.yaml.*improve\.theta_roles.*never trained on nor drives"
    ):
        validate_config(data, rounds.Config, source="rounds.yaml")
    with pytest.raises(ConfigError, match=r"theta_roles.*grade its own"):
        validate_config(
            {"campaign": "x", "dev_directions": ["sklearn-iris/virginica"], "theta_roles": ["progress"]},
            rnd.Config,
            source="round.yaml",
        )


def test_rounds_need_fresh_directions_and_disjoint_dev_sets():
    data = yaml.safe_load(ROUNDS_SMOKE.read_text())
    data["rounds"][1]["directions"] = ["sklearn-iris/virginica"]  # R0's dev dataset
    with pytest.raises(
        ConfigError,
        match=r"rounds\[1\]\.directions: dataset sklearn-iris is already used by rounds\[0\]\.dev_directions",
    ):
        validate_config(data, rounds.Config, source="rounds.yaml")
    data = yaml.safe_load(ROUNDS_SMOKE.read_text())
    data["campaign"]["directions"] = ["sklearn-iris/virginica"]
    with pytest.raises(ConfigError, match=r"campaign.*directions: set per round"):
        validate_config(data, rounds.Config, source="rounds.yaml")
    for name in ("rounds.yaml", "rounds_rules.yaml", "rounds_smoke.yaml"):
        load_config(REPO / "configs" / "discovery" / name, rounds.Config)


@pytest.fixture(scope="module")
def tiny_ckpt(tmp_path_factory) -> Path:
    pytest.importorskip("peft")
    from rsi_workbench.discovery.sft import byte_level_tokenizer, tiny_causal_lm

    tok = byte_level_tokenizer()
    d = tmp_path_factory.mktemp("tiny") / "ckpt"
    tiny_causal_lm(len(tok), seed=0).save_pretrained(d)
    tok.save_pretrained(d)
    return d


@pytest.fixture(scope="module")
def rounds_run(tiny_ckpt, tmp_path_factory) -> Path:
    data = yaml.safe_load(ROUNDS_SMOKE.read_text())
    for rm in data["campaign"]["roles"].values():
        rm["model"] = {**rm["model"], "name": str(tiny_ckpt)}
    data["improve_last"] = False  # R0 -> round -> R1 (the test's size)
    cfg = validate_config(data, rounds.Config, source="test")
    return rounds.run_experiment(cfg, tmp_path_factory.mktemp("rounds") / "smoke")


def test_rounds_smoke_closes_r0_round_r1_with_a_lora_theta_plus(rounds_run):
    run = Run.open(rounds_run)
    assert [e.payload["round"] for e in run.events("rounds_campaign")] == [0, 1]
    assert [e.payload["round"] for e in run.events("rounds_accepted")] == [0]
    imp = Run.open(rounds_run / "R0" / "improve")
    tp = imp.events("theta_plus")[-1].payload
    assert (
        tp["kind"] == "lora"
        and tp["token_cap"] == 256
        and tp["theta_roles"] == ["lead", "generation", "evolution"]
    )
    acc = {r["role"]: r for r in tp["role_accounting"]}
    assert all(acc[r]["trained"] == 0 for r in ("critique", "progress", "compiler"))
    # theta+ drives the Lead in its dev campaigns; the judges keep the base model (no adapter)
    dev = [e.payload["score"] for e in imp.events("dev_evaluation")]
    plus = [p for s in dev if s["lead"].startswith("theta_k+") for p in s["runs"]]
    assert plus
    roles = Run.open(plus[0]).events("campaign_started")[0].payload["model_roles"]
    assert "+" in roles["lead"] and "+" not in roles["critique"] and "+" not in roles["progress"]
    # R1 ran with the accepted pair
    acc0 = run.events("rounds_accepted")[0].payload
    r1 = Run.open(rounds_run / "R1" / "campaign").events("campaign_started")[0].payload
    assert r1["harness"] == acc0["psi"]["version"]
    assert ("+" in r1["model_roles"]["lead"]) == acc0["theta"]["plus"]
    text = rounds.report(rounds_run)
    for needle in (
        "R0: campaign ['sklearn-diabetes/progression']  dev ['sklearn-iris/virginica']",
        "R0 Accept_dev",
        "path deltas",
        "R0->R1",
    ):
        assert needle in text


def test_a_finished_rounds_experiment_resumes_as_a_no_op(rounds_run):
    before = len(Run.open(rounds_run).events())
    cfg = validate_config(Run.open(rounds_run).config, rounds.Config, source="config.json")
    rounds.run_experiment(cfg, rounds_run, resume=True)
    assert len(Run.open(rounds_run).events()) == before
