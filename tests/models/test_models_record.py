"""Record and replay: every call an event, replay keyed by request and ordinal, budgets per live call."""

from __future__ import annotations

import json
import threading

import pytest

from rsi_workbench.budget import AGENT_CALLS, MODEL_TOKENS, BudgetExceeded, BudgetLedger
from rsi_workbench.models import ChatResult, ModelConfig, RecordedLLM, ReplayMissing, open_model
from rsi_workbench.records import Run


class CountingLLMDouble:
    """Test double for a backend: answers ``<prompt>#<call number>`` and counts its calls."""

    identity = "double:counting"
    name = "counting"

    def __init__(self):
        self.calls = 0

    def chat(self, messages, *, n=1, temperature=0.0, top_p=1.0, max_tokens=512, stop=None, seed=None):
        self.calls += 1
        last = messages[-1]["content"] if isinstance(messages[-1], dict) else messages[-1].content
        texts = [f"{last}#{self.calls}.{i}" for i in range(n)]
        return ChatResult(texts, ["stop"] * n, 10, 2 * n, 0.01, self.identity, self.name)

    def score(self, prompt, continuations, *, end=False):
        self.calls += 1
        return [-float(len(c)) for c in continuations]


def _ask(text):
    return [{"role": "user", "content": text}]


def test_calls_are_events_and_a_resumed_run_replays_them_in_order(tmp_path):
    run = Run.create(tmp_path / "r", {"k": 1})
    be = CountingLLMDouble()
    lm = RecordedLLM.wrap(be, run=run, role="generation")
    first = [lm.chat(_ask("q"), temperature=1.0, seed=5).text for _ in range(2)]  # identical requests
    other = lm.chat(_ask("p"), n=2).texts
    s = lm.score("x", ["ab", "c"])
    assert first == ["q#1.0", "q#2.0"] and be.calls == 4 and lm.live_calls == 4
    evs = run.events("model_call")
    assert [e.payload["ordinal"] for e in evs] == [0, 1, 0, 0]
    e0 = evs[0].payload
    assert (
        e0["role"] == "generation"
        and e0["backend"] == "double:counting"
        and e0["params"]["temperature"] == 1.0
    )
    assert json.loads(run.get_artifact(e0["request"]))["messages"] == _ask("q")
    assert json.loads(run.get_artifact(e0["response"]))["texts"] == ["q#1.0"]
    run.close()

    again = Run.open(tmp_path / "r", mode="a")
    be2 = CountingLLMDouble()
    lm2 = RecordedLLM.wrap(be2, run=again)
    replayed = [lm2.chat(_ask("q"), temperature=1.0, seed=5) for _ in range(2)]
    assert [r.text for r in replayed] == first and all(r.replayed for r in replayed)
    assert lm2.chat(_ask("p"), n=2).texts == other and lm2.score("x", ["ab", "c"]) == s
    assert be2.calls == 0 and lm2.replayed_calls == 4
    assert lm2.chat(_ask("q"), temperature=1.0, seed=5).text == "q#1.0"  # a third one is new: live
    assert be2.calls == 1 and len(again.events("model_call")) == 5


def test_replay_mode_names_the_missing_request(tmp_path):
    run = Run.create(tmp_path / "r", {})
    lm = RecordedLLM.wrap(CountingLLMDouble(), run=run)
    lm.chat(_ask("known"))
    rep = RecordedLLM.wrap(CountingLLMDouble(), run=run, replay=True, role="critique")
    assert rep.chat(_ask("known")).replayed
    with pytest.raises(ReplayMissing, match=r"chat request [0-9a-f]{12} #0 .*role critique.*'unknown'"):
        rep.chat(_ask("unknown"))
    with pytest.raises(ReplayMissing, match="#1"):
        rep.chat(_ask("known"))  # recorded once, asked twice


def test_budgets_charge_live_calls_only(tmp_path):
    run = Run.create(tmp_path / "r", {})
    ledger = BudgetLedger.open(run, {AGENT_CALLS: 3, MODEL_TOKENS: 30})
    lm = RecordedLLM.wrap(CountingLLMDouble(), run=run, ledger=ledger)
    lm.chat(_ask("a"))  # 10 in + 2 out
    assert ledger.remaining(AGENT_CALLS) == 2 and ledger.remaining(MODEL_TOKENS) == 18
    replaying = RecordedLLM.wrap(CountingLLMDouble(), run=run, ledger=ledger)
    replaying.chat(_ask("a"))
    assert ledger.remaining(AGENT_CALLS) == 2 and ledger.remaining(MODEL_TOKENS) == 18
    lm.chat(_ask("b"), n=2)  # 14 tokens
    lm.chat(_ask("c"))  # 12 tokens, only 4 left: charged 4, the budget is spent
    assert ledger.remaining(MODEL_TOKENS) == 0 and ledger.remaining(AGENT_CALLS) == 0
    spent = [e.payload for e in run.events("budget_spent") if e.payload["budget"] == MODEL_TOKENS]
    assert spent[-1]["tokens"] == 12 and spent[-1]["exhausted"] is True
    with pytest.raises(BudgetExceeded):
        lm.chat(_ask("d"))
    assert len(run.events("model_call")) == 3


class SlowLLMDouble(CountingLLMDouble):
    """Test double: the counting backend, each call held until released (calls overlap for sure)."""

    def __init__(self):
        super().__init__()
        self.gate = threading.Event()
        self.started = threading.Semaphore(0)

    def chat(self, messages, **kw):
        self.started.release()
        assert self.gate.wait(10)
        return super().chat(messages, **kw)


def _together(lm, prompts, **kw):
    """Each prompt's chat from its own thread; returns 'ok' or the exception's class per prompt."""
    out: dict[str, str] = {}

    def one(p):
        try:
            lm.chat(_ask(p), **kw)
            out[p] = "ok"
        except BudgetExceeded:
            out[p] = "BudgetExceeded"

    threads = [threading.Thread(target=one, args=(p,)) for p in prompts]
    for t in threads:
        t.start()
    return threads, out


@pytest.mark.parametrize("budget", [AGENT_CALLS, MODEL_TOKENS])
def test_calls_in_flight_together_never_spend_more_than_the_budget(tmp_path, budget):
    """Two calls started while neither has been charged: the second sees the first's hold (one
    agent call; its completion tokens, max_tokens 8 of the 10 left) and is refused before the backend."""
    run = Run.create(tmp_path / "r", {})
    ledger = BudgetLedger.open(run, {AGENT_CALLS: 1} if budget == AGENT_CALLS else {MODEL_TOKENS: 10})
    be = SlowLLMDouble()
    lm = RecordedLLM.wrap(be, run=run, ledger=ledger)
    first, out = _together(lm, ["a"], max_tokens=8)
    assert be.started.acquire(timeout=10)  # "a" is in flight, holding its share
    assert ledger.free(budget) == (0 if budget == AGENT_CALLS else 2)
    if budget == AGENT_CALLS:
        with pytest.raises(BudgetExceeded, match="held by work in flight"):
            lm.chat(_ask("b"))
    else:  # 2 tokens free: "b" may start (one call may use more than is left), "c" then may not
        second, out2 = _together(lm, ["b"], max_tokens=8)
        assert be.started.acquire(timeout=10)
        with pytest.raises(BudgetExceeded, match="held by work in flight"):
            lm.chat(_ask("c"), max_tokens=8)
    be.gate.set()
    for t in first + ([] if budget == AGENT_CALLS else second):
        t.join(10)
    assert out == {"a": "ok"} and ledger.remaining(budget) >= 0 and ledger.held[budget] == 0
    assert ledger.remaining(budget) == 0  # "a" (and "b") charged: 1 call, or 12 + 12 tokens capped at 10


def test_open_model_loads_lazily_and_replay_never_loads(tiny_checkpoint, tmp_path):
    cfg = ModelConfig(name=str(tiny_checkpoint), device="cpu")
    run = Run.create(tmp_path / "r", {"model": cfg.model_dump()})
    lm = open_model(cfg, run)
    assert lm._backend is None
    live = lm.chat_batch([_ask("a"), _ask("bb")], max_tokens=3)
    assert lm._backend is not None and [r.meta["batch"] for r in live] == [2, 2]
    rep = open_model(cfg.model_copy(update={"replay": True}), run)
    assert [r.texts for r in rep.chat_batch([_ask("a"), _ask("bb")], max_tokens=3)] == [r.texts for r in live]
    assert rep._backend is None


def test_a_killed_loop_resumes_with_zero_new_calls_and_the_same_table(tmp_path, tiny_lm):
    def loop(run, lm, stop_after=None):
        table = []
        for cycle in range(4):
            if stop_after is not None and cycle == stop_after:
                raise KeyboardInterrupt  # killed mid-run
            r = lm.chat(_ask(f"cycle {cycle}"), n=2, temperature=1.0, max_tokens=4, seed=cycle)
            table.append(tuple(r.texts))
        return table

    whole = Run.create(tmp_path / "full", {})
    full = loop(whole, RecordedLLM.wrap(tiny_lm, run=whole))
    run = Run.create(tmp_path / "cut", {})
    with pytest.raises(KeyboardInterrupt):
        loop(run, RecordedLLM.wrap(tiny_lm, run=run), stop_after=2)
    run.close()
    resumed = Run.open(tmp_path / "cut", mode="a")
    lm = RecordedLLM.wrap(tiny_lm, run=resumed)
    assert loop(resumed, lm) == full
    assert (lm.replayed_calls, lm.live_calls) == (2, 2)


def test_plain_completion_is_recorded_and_replayed(tmp_path, tiny_lm):
    run = Run.create(tmp_path / "r", {})
    live = RecordedLLM.wrap(tiny_lm, run=run).complete(
        "def f(x):", max_tokens=4, n=2, temperature=1.0, seed=3
    )
    rep = RecordedLLM.wrap(tiny_lm, run=run, replay=True)
    assert rep.complete("def f(x):", max_tokens=4, n=2, temperature=1.0, seed=3).texts == live.texts
    assert run.events("model_call")[0].payload["call"] == "complete"
    with pytest.raises(ReplayMissing, match="complete request .*prompt ending 'other'"):
        rep.complete("other", max_tokens=4)


def test_identifying_the_default_never_prepares_it(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    from rsi_workbench.models import identity_of
    from rsi_workbench.models.prepare import default_gguf

    try:
        default_gguf()
    except FileNotFoundError as e:
        pytest.skip(str(e))
    monkeypatch.setenv("RSI_WORKBENCH_MODELS", str(tmp_path / "empty"))
    ident = identity_of(ModelConfig(name="default", replay=True))
    assert ident.startswith("transformers:") and not (tmp_path / "empty").exists()
    with pytest.raises(ReplayMissing):
        open_model(ModelConfig(name="default", replay=True)).chat(_ask("q"))
    assert not (tmp_path / "empty").exists()
