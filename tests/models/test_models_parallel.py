"""Independent chat requests in flight together (``models.parallel``): the records are byte for byte
those of the same requests made one after another (events minus wall-clock fields), also with the
caller's own events between the answers, on a resume, when a budget or an error ends the sequence;
a backend that takes one request at a time gets them one at a time, at their take."""

from __future__ import annotations

import pytest
from chat_flight_doubles import ScriptedChatDouble, effective_records

from rsi_workbench.budget import AGENT_CALLS, BudgetExceeded, BudgetLedger
from rsi_workbench.models import ModelError, RecordedLLM, Sampling
from rsi_workbench.models.parallel import ChatFlight, ChatRequest, chat_many, in_flight_limit
from rsi_workbench.records import Run


def _requests() -> list[ChatRequest]:
    """Eight requests: two identical pairs (ordinals 0 and 1), one with n=2, distinct seeds."""
    texts = ["a", "b", "a", "c", "d", "b", "e", "f"]
    return [
        ChatRequest(
            [{"role": "user", "content": t}],
            Sampling(temperature=0.7, max_tokens=16, seed=3, n=1 + (t == "c")),
        )
        for t in texts
    ]


def _play(path, concurrency: int, backend, *, upto=None, ledger_calls=None) -> tuple[list[str], str]:
    """Take the requests in order, appending a caller event after each answer, as a role would."""
    run = Run.create(path, {"t": 1}, exist_ok=True)
    ledger = BudgetLedger.open(run, {AGENT_CALLS: ledger_calls}) if ledger_calls is not None else None
    llm = RecordedLLM.wrap(backend, run=run, ledger=ledger, role="judge")
    reqs = _requests()[:upto]
    texts: list[str] = []
    outcome = "done"
    try:
        with ChatFlight(llm, reqs, concurrency=concurrency) as flight:
            for i in range(len(reqs)):
                res = flight.take()
                texts.append(res.text)
                run.append("caller_used_answer", {"i": i, "text": res.text})
    except (BudgetExceeded, ModelError) as e:
        outcome = f"{type(e).__name__}: {e}"
    run.close()
    return texts, outcome


def test_answers_and_records_equal_the_sequential_ones(tmp_path):
    seq = ScriptedChatDouble()
    conc = ScriptedChatDouble(rendezvous=2)  # the first two requests must be in flight together
    a = _play(tmp_path / "seq", 1, seq)
    b = _play(tmp_path / "conc", 4, conc)
    assert a == b and a[1] == "done"
    assert effective_records(tmp_path / "seq") == effective_records(tmp_path / "conc")
    assert seq.peak == 1 and conc.peak >= 2 and seq.calls == conc.calls == 8
    ords = [e.payload["ordinal"] for e in Run.open(tmp_path / "conc").events("model_call")]
    assert ords == [0, 0, 1, 0, 0, 1, 0, 0]


def test_a_resumed_run_replays_its_records_and_sends_only_the_rest_ahead(tmp_path):
    for name in ("seq", "conc"):
        _play(tmp_path / name, 1, ScriptedChatDouble(), upto=3)  # "killed" after three answers
    seq, conc = ScriptedChatDouble(), ScriptedChatDouble()
    a = _play(tmp_path / "seq", 1, seq)
    b = _play(tmp_path / "conc", 4, conc)
    assert a == b
    assert seq.calls == conc.calls == 5  # the three recorded requests are replayed, never asked
    assert effective_records(tmp_path / "seq") == effective_records(tmp_path / "conc")
    assert len(Run.open(tmp_path / "conc").events("model_replay")) == 3


def test_a_spent_budget_or_an_error_ends_both_at_the_same_request(tmp_path):
    a = _play(tmp_path / "seq-b", 1, ScriptedChatDouble(), ledger_calls=5)
    conc = ScriptedChatDouble()
    b = _play(tmp_path / "conc-b", 4, conc, ledger_calls=5)
    assert a == b and a[1].startswith("BudgetExceeded") and len(a[0]) == 5
    assert conc.calls == 5  # nothing beyond the budget was sent ahead
    assert effective_records(tmp_path / "seq-b") == effective_records(tmp_path / "conc-b")
    a = _play(tmp_path / "seq-e", 1, ScriptedChatDouble(fail_on="d"))
    b = _play(tmp_path / "conc-e", 4, ScriptedChatDouble(fail_on="d"))
    assert a == b and a[1].startswith("ModelError") and len(a[0]) == 4
    assert effective_records(tmp_path / "seq-e") == effective_records(tmp_path / "conc-e")


def test_a_backend_taking_one_request_at_a_time_is_asked_at_each_take(tmp_path):
    one = ScriptedChatDouble(max_concurrent_requests=1)
    run = Run.create(tmp_path / "r", {"t": 1})
    llm = RecordedLLM.wrap(one, run=run)
    with ChatFlight(llm, _requests()[:3], concurrency=8) as flight:
        assert flight.sent_ahead == 0 and one.calls == 0
        flight.take()
        assert one.calls == 1
    assert in_flight_limit(one) == 1 and in_flight_limit(object()) == 1
    assert llm.backend is one  # the recorder has its own backend back


def test_chat_many_without_a_recorder_and_a_replay_only_run(tmp_path):
    be = ScriptedChatDouble(rendezvous=3)
    texts = [r.text for r in chat_many(be, _requests(), concurrency=4)]
    assert texts == [ScriptedChatDouble().chat(r.messages, **r.kwargs()).text for r in _requests()]
    run = Run.create(tmp_path / "r", {"t": 1})
    llm = RecordedLLM.wrap(ScriptedChatDouble(), run=run, replay=True)
    flight = ChatFlight(llm, _requests(), concurrency=4)
    assert flight.sent_ahead == 0  # replay: true never asks the model
    with pytest.raises(Exception, match="no recorded answer"):
        flight.take()
    flight.close()


def test_a_served_model_gets_the_requests_in_flight_up_to_its_concurrency(tmp_path):
    """OpenAILM (an httpx mock transport with random delays as the server double): the flight sends
    ``concurrency`` requests at once and records what one by one records."""
    import hashlib
    import json
    import random
    import threading
    import time

    import httpx

    from rsi_workbench.models import ModelConfig
    from rsi_workbench.models.http import OpenAILM

    state = {"now": 0, "peak": 0}
    lock, rng = threading.Lock(), random.Random()

    def server_double(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
            delay = rng.uniform(0.005, 0.03)
        time.sleep(delay)
        with lock:
            state["now"] -= 1
        canon = json.dumps([body["messages"], body.get("seed"), body.get("temperature")], sort_keys=True)
        text = "reply " + hashlib.sha256(canon.encode()).hexdigest()[:12]
        choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        usage = {"prompt_tokens": 7, "completion_tokens": 2}
        return httpx.Response(200, json={"model": "m", "choices": [choice], "usage": usage})

    def served(path, concurrency):
        cfg = ModelConfig(
            backend="openai", name="m", base_url="http://double.test/v1", concurrency=concurrency
        )
        lm = OpenAILM(cfg, transport=httpx.MockTransport(server_double))
        assert in_flight_limit(lm) == concurrency
        run = Run.create(path, {"t": 1})
        rec = RecordedLLM.wrap(lm, run=run, role="judge")
        texts = [r.text for r in chat_many(rec, _requests(), concurrency=concurrency)]
        run.close()
        return texts

    one = served(tmp_path / "one", 1)
    assert state["peak"] == 1
    four = served(tmp_path / "four", 4)
    assert one == four and 1 <= state["peak"] <= 4
    assert effective_records(tmp_path / "one") == effective_records(tmp_path / "four")


def test_cache_hits_are_not_sent_ahead_and_the_cache_counts_as_one_by_one(tmp_path):
    import shutil

    from rsi_workbench.models.cache import CallCache

    def warm(path, cache_dir, concurrency):
        be = ScriptedChatDouble()
        run = Run.create(path, {"t": 1})
        llm = RecordedLLM.wrap(be, run=run, cache=CallCache(cache_dir))
        with ChatFlight(llm, _requests(), concurrency=concurrency) as flight:
            ahead = flight.sent_ahead
            texts = [r.text for r in flight]
        run.close()
        return texts, be.calls, ahead, CallCache(cache_dir).stats()

    cold = warm(tmp_path / "cold", tmp_path / "cache-a", 4)
    assert cold[1] == 8 and cold[2] == 8
    shutil.copytree(tmp_path / "cache-a", tmp_path / "cache-b")
    seq = warm(tmp_path / "seq", tmp_path / "cache-a", 1)
    conc = warm(tmp_path / "conc", tmp_path / "cache-b", 4)
    assert seq[0] == conc[0] == cold[0] and seq[1] == conc[1] == conc[2] == 0
    assert {k: v for k, v in seq[3].items() if k != "path"} == {
        k: v for k, v in conc[3].items() if k != "path"
    }
    assert effective_records(tmp_path / "seq") == effective_records(tmp_path / "conc")
