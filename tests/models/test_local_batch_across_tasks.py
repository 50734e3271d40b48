"""The local backend's ``batch_across_tasks``: a parallel phase's requests in one generate per
lockstep round, deterministic for the same run, setting and seed; in the replay key."""

from __future__ import annotations

import pytest

from rsi_workbench.models import RecordedLLM, identity_of
from rsi_workbench.models.config import ModelConfig
from rsi_workbench.records import Run
from rsi_workbench.records.ordered import ordered_map


def _phase(lm, run):
    """Four 'tasks', each asking twice (its second prompt depends on its first answer)."""
    llm = RecordedLLM.wrap(lm, run=run)

    def task(i: int) -> list[str]:
        first = llm.chat(
            [{"role": "user", "content": f"task {i}"}], n=2, temperature=1.0, max_tokens=4, seed=i
        )
        again = llm.chat(
            [{"role": "user", "content": f"task {i} saw {first.texts[0]!r}"}],
            n=2,
            temperature=1.0,
            max_tokens=4,
            seed=100 + i,
        )
        return first.texts + again.texts

    out, held = ordered_map(task, list(range(4)), workers=4)
    for h in held:
        h.flush()
    return out


def _calls(run):
    """The recorded calls in order: key, ordinal and response (minus its wall-clock latency)."""
    out = []
    for e in run.events("model_call"):
        resp = {k: v for k, v in run.artifacts.get_json(e.payload["response"]).items() if k != "latency_s"}
        out.append((e.payload["key"], e.payload["ordinal"], resp))
    return out


def test_batch_across_tasks_is_one_generate_per_round_and_deterministic(tiny_parts, tmp_path):
    from rsi_workbench.models.local import TransformersLM

    model, tok = tiny_parts

    def lm(batch: bool) -> TransformersLM:
        return TransformersLM(
            model, tok, name="tiny", identity="transformers:tiny", cpu_threads=1, batch_across_tasks=batch
        )

    a, b = lm(True), lm(True)
    assert a.identity == "transformers:tiny+batch_across_tasks"  # in every replay key
    ra, rb = Run.create(tmp_path / "a", {}), Run.create(tmp_path / "b", {})
    out_a, out_b = _phase(a, ra), _phase(b, rb)
    assert a.batches == [4, 4]  # each lockstep round: the four tasks' prompts in one generate
    assert out_a == out_b and _calls(ra) == _calls(rb)  # same setting and seeds: the same samples
    assert all(c[2]["meta"]["across_tasks"] == 4 for c in _calls(ra))
    assert all(e.payload["backend"].endswith("+batch_across_tasks") for e in ra.events("model_call"))
    one = lm(False)
    _phase(one, Run.create(tmp_path / "c", {}))
    assert one.batches == [1] * 8  # off (the default): one request per generate, as alone
    single = lm(True)
    single.chat([{"role": "user", "content": "x"}], max_tokens=2)
    assert single.batches == [1]  # outside a parallel phase nothing is gathered


def test_batch_across_tasks_is_a_declared_transformers_setting(tiny_checkpoint):
    plain = identity_of(ModelConfig(name=str(tiny_checkpoint)))
    across = identity_of(ModelConfig(name=str(tiny_checkpoint), batch_across_tasks=True))
    assert across == plain + "+batch_across_tasks"
    assert "batch_across_tasks" not in ModelConfig().model_dump()  # configs without it dump as before
    with pytest.raises(ValueError, match="batch_across_tasks is only for backend 'transformers'"):
        ModelConfig(backend="openai", base_url="http://127.0.0.1:1/v1", batch_across_tasks=True)
