"""Capability probing of an OpenAI-compatible server, before a run depends on it.

:func:`probe_server` asks the server three cheap questions: does ``GET /models`` list the model; does a
1-token ``POST /completions`` with ``echo`` and ``logprobs`` answer (plain completion, and whether the
server returns prompt log-probabilities); does a 1-token ``POST /chat/completions`` answer. Probe
requests are not model calls of any run (not recorded, not charged). :func:`require` turns the result
into a refusal naming the server (redacted) and the model when a role needs what the probe says the
server (or this client) cannot do, so a config is refused before its run starts.

With ``json_schema=True`` (``rsi-workbench models probe`` asks it; so does :func:`require` when a role
needs ``json_schema``) a fourth request, a 1-token chat with ``response_format: json_schema``, says
whether the server **accepts** schema-constrained requests; a server that ignores the field cannot
be told apart from one that honours it by one token, so callers still validate what they parse.

Scoring (``score``) over HTTP is not implemented by the client: servers that return prompt
log-probabilities (``prompt_logprobs`` in the probe) differ in how, so the capability stays
transformers-only and the probe only reports what the server offers.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rsi_workbench.models.config import ModelConfig, redact_url
from rsi_workbench.models.interface import ModelError, Unsupported

_CACHE: dict[str, Probe] = {}


@dataclass(frozen=True)
class Probe:
    """What one server said about one model. ``listed`` is None when the server has no ``/models``."""

    server: str  # redacted base_url
    model: str
    listed: bool | None
    chat: bool
    complete: bool
    prompt_logprobs: bool
    why: dict[str, str] = field(default_factory=dict)  # capability -> what the server said when "no"
    models: tuple[str, ...] = ()
    json_schema: bool | None = None  # response_format json_schema accepted (None: not probed)

    @property
    def capabilities(self) -> frozenset[str]:
        """What a run may use through this client: ``chat``, ``complete`` and ``json_schema`` as
        probed; never ``score``."""
        probed = (("chat", self.chat), ("complete", self.complete), ("json_schema", self.json_schema))
        return frozenset(c for c, ok in probed if ok)

    def to_dict(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "model": self.model,
            "listed": self.listed,
            "chat": self.chat,
            "complete": self.complete,
            "prompt_logprobs": self.prompt_logprobs,
            "why": dict(self.why),
            **({} if self.json_schema is None else {"json_schema": self.json_schema}),
        }

    def summary(self) -> str:
        def yn(v: bool | None) -> str:
            return "unknown" if v is None else ("yes" if v else "no")

        out = (
            f"listed {yn(self.listed)}, chat {yn(self.chat)}, completions {yn(self.complete)}, "
            f"prompt logprobs (echo) {yn(self.prompt_logprobs)}"
        )
        if self.json_schema is not None:
            out += f", response_format json_schema accepted {yn(self.json_schema)}"
        return out


def probe_server(
    cfg: ModelConfig, *, transport: Any = None, cache: bool = True, json_schema: bool = False
) -> Probe:
    """Probe ``cfg``'s server (``backend: openai``) for ``cfg.name``; cached per (server, model, key
    variable, ``json_schema``) within the process. A server that cannot be reached, or that does not
    list the model in its ``/models``, is an error naming both."""
    import httpx

    if cfg.backend != "openai" or not cfg.base_url:
        raise ValueError("probe_server needs a config with backend 'openai' and a base_url")
    server = redact_url(cfg.base_url)
    ck = f"{cfg.base_url}|{cfg.name}|{cfg.api_key_env}|{json_schema}"
    if cache and transport is None and ck in _CACHE:
        return _CACHE[ck]
    headers = {}
    if cfg.api_key_env:
        key = os.environ.get(cfg.api_key_env)
        if not key:
            raise ModelError(
                f"the API key variable {cfg.api_key_env} is not set (model {cfg.name!r} at {server}); "
                "export it before the run"
            )
        headers["Authorization"] = f"Bearer {key}"
    timeout = min(cfg.timeout_s, 60.0)
    with httpx.Client(
        base_url=cfg.base_url.rstrip("/") + "/", timeout=timeout, headers=headers, transport=transport
    ) as client:
        try:
            listed, models = _listed(client, cfg.name)
            complete, logprobs, why = _completions(client, cfg.name)
            chat, chat_why = _chat(client, cfg.name)
            schema_ok, schema_why = _chat(client, cfg.name, json_schema=True) if json_schema else (None, "")
        except httpx.TransportError as e:
            raise ModelError(
                f"cannot reach {server} to probe model {cfg.name!r} ({type(e).__name__}); "
                "is the server running?"
            ) from None
    if listed is False:
        raise ModelError(
            f"{server} does not serve model {cfg.name!r}: its /models lists {list(models)[:20]}; "
            "set `name` to one of them"
        )
    if chat_why:
        why["chat"] = chat_why
    if schema_why:
        why["json_schema"] = schema_why
    p = Probe(server, cfg.name, listed, chat, complete, logprobs, why, models, schema_ok)
    if cache and transport is None:
        _CACHE[ck] = p
    return p


def require(
    cfg: ModelConfig, needs: Iterable[str], *, where: str = "model", probe: Probe | None = None
) -> None:
    """Refuse ``cfg`` when it lacks a capability in ``needs`` (``chat``, ``complete``, ``score``,
    ``json_schema``): statically for ``transformers`` (it has the first three; ``json_schema`` with
    llguidance installed), by the server's probe for ``openai``.
    ``where`` names the config field in the message (e.g. ``roles.lead.model``)."""
    needs = set(needs)
    if cfg.backend != "openai" or not needs:
        if "json_schema" in needs:
            from rsi_workbench.models import capabilities_of

            if "json_schema" not in capabilities_of(cfg):
                raise Unsupported(
                    f"{where}: needs json_schema, but the transformers backend has no llguidance "
                    "(install the 'models' extra)"
                )
        return
    p = probe or probe_server(cfg, json_schema="json_schema" in needs)
    missing = sorted(needs - p.capabilities)
    if not missing:
        return
    reasons = []
    for cap in missing:
        if cap == "score":
            reasons.append(
                "score: this client does not score continuations over HTTP (use backend 'transformers'"
                + (
                    "; the server does return prompt log-probabilities with echo)"
                    if p.prompt_logprobs
                    else "; the server returned no prompt log-probabilities either)"
                )
            )
        else:
            reasons.append(f"{cap}: {p.why.get(cap, 'the probe request failed')}")
    raise Unsupported(
        f"{where}: needs {', '.join(sorted(needs))}, but {p.server} (model {cfg.name!r}) cannot: "
        + "; ".join(reasons)
        + f" [probe: {p.summary()}]"
    )


def _said(r: Any) -> str:
    from rsi_workbench.models.http import _server_message

    return f"HTTP {r.status_code}: {_server_message(r)}"


def _listed(client: Any, name: str) -> tuple[bool | None, tuple[str, ...]]:
    r = client.get("models")
    if r.status_code >= 400:
        return None, ()  # no model listing (some servers): nothing to check
    try:
        data = r.json().get("data") or []
        ids = tuple(str(m.get("id")) for m in data if isinstance(m, dict))
    except (ValueError, AttributeError):
        return None, ()
    if not ids:
        return None, ()
    return name in ids, ids


def _completions(client: Any, name: str) -> tuple[bool, bool, dict[str, str]]:
    """(plain completion works, prompt log-probabilities returned with echo, why not)."""
    body = {"model": name, "prompt": "Hello, world", "max_tokens": 1, "temperature": 0.0}
    r = client.post("completions", json={**body, "echo": True, "logprobs": 1})
    if r.status_code < 400 and _choices(r):
        lp = _choices(r)[0].get("logprobs") or {}
        tl = lp.get("token_logprobs") if isinstance(lp, dict) else None
        echoed = isinstance(tl, list) and len(tl) > 1 and any(v is not None for v in tl[1:])
        return True, echoed, {}
    first = _said(r)
    if r.status_code not in (400, 422):  # 404/405/5xx: no usable completions endpoint
        return False, False, {"complete": first}
    r = client.post("completions", json=body)  # a server refusing echo/logprobs may still complete
    if r.status_code < 400 and _choices(r):
        return True, False, {"prompt_logprobs": first}
    return False, False, {"complete": _said(r) if r.status_code >= 400 else "no choices in the answer"}


def _chat(client: Any, name: str, *, json_schema: bool = False) -> tuple[bool, str]:
    body: dict[str, Any] = {
        "model": name,
        "messages": [{"role": "user", "content": "Hi"}],
        "max_tokens": 1,
        "temperature": 0.0,
        "stream": False,
    }
    if json_schema:
        from rsi_workbench.models.http import response_format

        body["response_format"] = response_format(
            {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
        )
    r = client.post("chat/completions", json=body)
    if r.status_code < 400 and _choices(r):
        return True, ""
    return False, _said(r) if r.status_code >= 400 else "no choices in the answer"


def _choices(r: Any) -> list[dict[str, Any]]:
    try:
        obj = r.json()
    except ValueError:
        return []
    ch = obj.get("choices") if isinstance(obj, dict) else None
    return [c for c in ch if isinstance(c, dict)] if isinstance(ch, list) else []
