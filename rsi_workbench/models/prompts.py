"""Prompt templates: text files shipped as package data (``<package>/prompts/<name>.txt``) that a
researcher can read and edit, rendered with ``$name`` placeholders (``string.Template``, so JSON
braces need no escaping) and versioned into each run that uses them (a ``prompt_template`` event
and the text as an artifact, once per distinct text)."""

from __future__ import annotations

import hashlib
import string
from dataclasses import dataclass
from importlib import resources
from typing import Any

from rsi_workbench.records.run import Run

EVENT_KIND = "prompt_template"


@dataclass(frozen=True)
class PromptTemplate:
    """One template: where it came from, its text and the text's sha256 (its version)."""

    name: str
    text: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    def render(self, **values: Any) -> str:
        """The text with ``$name`` placeholders filled (a missing value is an error naming it)."""
        try:
            return string.Template(self.text).substitute(values)
        except KeyError as e:
            raise KeyError(f"prompt template {self.name!r} needs a value for {e.args[0]!r}") from None


def load_prompt(package: str, name: str) -> PromptTemplate:
    """``<package>/prompts/<name>.txt`` (trailing newline dropped)."""
    path = resources.files(package) / "prompts" / f"{name}.txt"
    if not path.is_file():
        raise FileNotFoundError(f"no prompt template {name!r} in {package}/prompts/")
    return PromptTemplate(f"{package}:{name}", path.read_text(encoding="utf-8").rstrip("\n"))


def record_prompt(run: Run, template: PromptTemplate) -> str:
    """Version ``template`` into ``run`` (once per distinct text); returns its sha256."""
    sha = template.sha256
    for ev in run.events(EVENT_KIND):
        if ev.payload["name"] == template.name and ev.payload["sha256"] == sha:
            return sha
    art = run.artifacts.put(template.text.encode(), name=template.name, media_type="text/plain")
    run.append(EVENT_KIND, {"name": template.name, "sha256": sha, "artifact": art})
    return sha
