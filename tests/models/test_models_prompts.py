"""Prompt templates: package data, rendered, versioned into the run once per distinct text."""

from __future__ import annotations

import pytest

from rsi_workbench.models import RecordedLLM
from rsi_workbench.models.prompts import PromptTemplate, load_prompt, record_prompt
from rsi_workbench.records import Run


def test_shipped_template_loads_renders_and_is_versioned_once(tmp_path):
    t = load_prompt("rsi_workbench.discovery", "proposer_json_ask")
    assert t.text.startswith("Reply with one JSON object") and not t.text.endswith("\n")
    with pytest.raises(FileNotFoundError, match="no_such"):
        load_prompt("rsi_workbench.discovery", "no_such")
    run = Run.create(tmp_path / "r", {})
    assert record_prompt(run, t) == record_prompt(run, t) == t.sha256
    edited = PromptTemplate(t.name, t.text + " Be brief.")
    record_prompt(run, edited)
    evs = [e.payload for e in run.events("prompt_template")]
    assert [e["sha256"] for e in evs] == [t.sha256, edited.sha256]
    assert run.get_artifact(evs[1]["artifact"]).decode().endswith("Be brief.")


def test_render_fills_placeholders_and_names_missing_ones():
    t = PromptTemplate("x", 'Task $task; reply {"ok": true}')
    assert t.render(task="t1") == 'Task t1; reply {"ok": true}'
    with pytest.raises(KeyError, match="'task'"):
        t.render()


def test_recorded_model_versions_the_prompt(tmp_path):
    class EchoLLMDouble:
        identity, name = "double:echo", "echo"

    run = Run.create(tmp_path / "r", {})
    lm = RecordedLLM.wrap(EchoLLMDouble(), run=run)
    t = load_prompt("rsi_workbench.discovery", "proposer_json_ask")
    lm.use_prompt(t)
    lm.use_prompt(t)
    assert len(run.events("prompt_template")) == 1
