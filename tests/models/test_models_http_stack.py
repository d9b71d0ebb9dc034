"""The model stack through the real openai backend against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from lens.core.errors import ConfigError
from lens.data.config import CacheConfig, ModelConfig
from lens.models import limits, retry
from lens.models.base import CompletionRequest, Message, ModelError, ToolCall, ToolSpec
from lens.models.errors import CostLimitReached
from lens.models.retry import RetryPolicy
from lens.models.runtime import ModelRuntime
from tests.support.clock import FakeClock, SleepRecorder
from tests.support.fake_openai import FakeOpenAI, RecordedRequest, Reply, fake_openai

# The openai SDK transport moves a major version with the litellm extra.
pytestmark = pytest.mark.extras_sensitive

__all__ = ["fake_openai"]

FAST = RetryPolicy(max_retries=4, base_wait_s=0.01, max_wait_s=0.05, max_total_wait_s=10)
SEARCH = ToolSpec(name="memory_search", description="Search the memory.",
                  parameters={"type": "object", "properties": {"query": {"type": "string"}},
                              "required": ["query"]})


_transport = {"name": "aiohttp"}


@pytest.fixture(autouse=True, params=["aiohttp", "sdk"])
def transport(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every test runs through both transports of the openai backend: aiohttp (the default)
    and the openai SDK."""
    _transport["name"] = request.param
    yield request.param
    _transport["name"] = "aiohttp"


def cfg(server: FakeOpenAI, **kw: object) -> ModelConfig:
    return ModelConfig.model_validate({"model": "openai/fake-model",
                                       "base_url": server.base_url,
                                       "options": {"transport": _transport["name"]}, **kw})


def request(text: str = "hello", **kw: object) -> CompletionRequest:
    return CompletionRequest.model_validate(
        {"messages": [{"role": "user", "content": text}], **kw})


def runtime(tmp_path: Path | None = None, **kw: object) -> ModelRuntime:
    cache = CacheConfig(enabled=tmp_path is not None,
                        path=(tmp_path / "cache.sqlite") if tmp_path else None)
    return ModelRuntime(cache=cache, retry=kw.pop("retry", FAST), **kw)  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_text_usage_and_request_shape(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.text("the answer", prompt_tokens=42, completion_tokens=7))
    rt = runtime()
    client = rt.client(cfg(fake_openai))
    req = CompletionRequest(
        messages=[
            Message(role="system", content="sys"),
            Message(role="user", content="q"),
            Message(role="assistant", content="",
                    tool_calls=[ToolCall(id="c1", name="memory_search",
                                         arguments='{"query": "x"}')]),
            Message(role="tool", content='{"results": []}', tool_call_id="c1",
                    name="memory_search"),
        ],
        tools=[SEARCH], tool_choice="auto", max_tokens=33, seed=5,
    )
    c = await client.complete(req)
    assert (c.text, c.usage.prompt_tokens, c.usage.completion_tokens) == ("the answer", 42, 7)
    assert (c.provider, c.model, c.retries, c.cached) == ("openai", "fake-model", 0, False)
    assert c.cost_usd is None  # no price configured for a custom server: unknown, not 0
    body = fake_openai.requests[0].body
    assistant = body["messages"][2]
    assert assistant["content"] == ""  # "" not None
    assert assistant["tool_calls"][0]["function"] == {"name": "memory_search",
                                                      "arguments": '{"query": "x"}'}
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "c1",
                                   "content": '{"results": []}'}
    assert body["tools"][0]["function"]["name"] == "memory_search"
    assert (body["tool_choice"], body["max_tokens"], body["seed"]) == ("auto", 33, 5)
    await rt.aclose()


@pytest.mark.anyio
async def test_retries_server_errors_then_succeeds(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.error(500, "boom"), Reply.error(503, "busy"), Reply.text("ok"))
    rt = runtime()
    c = await rt.client(cfg(fake_openai)).complete(request())
    assert c.text == "ok" and c.retries == 2 and fake_openai.count == 3
    assert rt.usage()["by_role"]["agent"]["retries"] == 2
    await rt.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize("status", [408, 409])
async def test_retries_timeout_and_conflict_statuses(fake_openai: FakeOpenAI, status: int) -> None:
    fake_openai.script(Reply.error(status, "again"), Reply.text("ok"))
    rt = runtime()
    c = await rt.client(cfg(fake_openai)).complete(request())
    assert c.retries == 1
    await rt.aclose()


@pytest.mark.anyio
async def test_retry_after_seconds_is_honoured(fake_openai: FakeOpenAI,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    sleeps = SleepRecorder()
    monkeypatch.setattr(retry, "anyio", sleeps)
    fake_openai.script(Reply.error(429, "slow down", retry_after=1), Reply.text("ok"))
    rt = runtime()
    c = await rt.client(cfg(fake_openai)).complete(request())
    gap = fake_openai.requests[1].started - fake_openai.requests[0].started
    assert c.retries == 1 and gap >= 1.0, gap
    # The one wait asked for is the server's second plus at most the policy's jitter
    # (base_wait_s), not a backoff of its own on top.
    assert len(sleeps.slept) == 1 and 1.0 <= sleeps.slept[0] <= 1.0 + FAST.base_wait_s, sleeps.slept
    await rt.aclose()


@pytest.mark.anyio
async def test_retry_after_ms_is_honoured(fake_openai: FakeOpenAI,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    sleeps = SleepRecorder()
    monkeypatch.setattr(retry, "anyio", sleeps)
    fake_openai.script(Reply.error(429, "slow down", retry_after_ms=600), Reply.text("ok"))
    rt = runtime()
    await rt.client(cfg(fake_openai)).complete(request())
    gap = fake_openai.requests[1].started - fake_openai.requests[0].started
    assert gap >= 0.6, gap
    # 600 ms read as milliseconds: neither 600 s nor rounded up to a second.
    assert len(sleeps.slept) == 1 and 0.6 <= sleeps.slept[0] <= 0.6 + FAST.base_wait_s, sleeps.slept
    await rt.aclose()


@pytest.mark.anyio
async def test_other_4xx_fails_at_once_with_provider_message(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.error(400, "context_length_exceeded: prompt too long"))
    rt = runtime()
    with pytest.raises(ModelError) as info:
        await rt.client(cfg(fake_openai)).complete(request())
    assert "prompt too long" in str(info.value) and info.value.status == 400
    assert not info.value.retryable
    assert fake_openai.count == 1
    assert rt.usage()["by_role"]["agent"]["errors"] == 1
    await rt.aclose()


@pytest.mark.anyio
async def test_attempt_cap(fake_openai: FakeOpenAI) -> None:
    fake_openai.responder = lambda _r: Reply.error(503, "down")
    rt = runtime(retry=RetryPolicy(max_retries=2, base_wait_s=0.01, max_wait_s=0.02))
    with pytest.raises(ModelError, match="gave up after 3 attempts"):
        await rt.client(cfg(fake_openai)).complete(request())
    assert fake_openai.count == 3
    await rt.aclose()


@pytest.mark.anyio
async def test_total_wait_cap_stops_before_a_long_retry_after(
        fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    sleeps = SleepRecorder()
    monkeypatch.setattr(retry, "anyio", sleeps)
    fake_openai.responder = lambda _r: Reply.error(429, "later", retry_after=30)
    rt = runtime(retry=RetryPolicy(max_retries=5, max_total_wait_s=2.0))
    with pytest.raises(ModelError) as info:
        await rt.client(cfg(fake_openai)).complete(request())
    assert sleeps.slept == []  # failed at once: not a second of the 30 waited
    assert fake_openai.count == 1 and info.value.status == 429
    await rt.aclose()


@pytest.mark.anyio
async def test_hang_times_out_and_is_retried(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.hang_up(), Reply.text("ok"))
    rt = runtime()
    c = await rt.client(cfg(fake_openai, timeout_s=0.5)).complete(request())
    assert c.text == "ok" and c.retries == 1
    # The client gave up on its own: the server is still holding the first request (it ends
    # only after hang_limit_s or at the fixture's stop), so no answer or hang-up ended it.
    assert fake_openai.requests[0].ended is None
    await rt.aclose()


@pytest.mark.anyio
async def test_connection_reset_is_retried(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.connection_reset(), Reply.text("ok"))
    rt = runtime()
    c = await rt.client(cfg(fake_openai)).complete(request())
    assert c.text == "ok" and c.retries == 1 and fake_openai.count == 2
    await rt.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize("bad", [Reply.truncated(at=30), Reply.malformed_body()],
                         ids=["truncated", "not-json"])
async def test_broken_bodies_are_retried(fake_openai: FakeOpenAI, bad: Reply) -> None:
    fake_openai.script(bad, Reply.text("ok"))
    rt = runtime()
    c = await rt.client(cfg(fake_openai, timeout_s=5)).complete(request())
    assert c.text == "ok" and c.retries == 1
    await rt.aclose()


@pytest.mark.anyio
async def test_malformed_tool_call_json_reaches_the_agent_raw(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.tool_call("memory_search", '{"query": "disk full'))
    rt = runtime()
    c = await rt.client(cfg(fake_openai)).complete(request(tools=[SEARCH.model_dump()]))
    call = c.tool_calls[0]
    assert call.name == "memory_search" and call.arguments == '{"query": "disk full'
    with pytest.raises(ValueError, match="not valid JSON"):
        call.parsed_arguments()
    assert c.finish_reason == "tool_calls"
    await rt.aclose()


@pytest.mark.anyio
async def test_empty_completion_and_unknown_tool_names(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.empty(), Reply.tool_call("rm_rf", {"path": "/"}))
    rt = runtime()
    client = rt.client(cfg(fake_openai))
    empty = await client.complete(request())
    assert empty.text == "" and empty.tool_calls == []
    unknown = await client.complete(request(tools=[SEARCH.model_dump()]))
    assert unknown.tool_calls[0].name == "rm_rf"  # the agent, not the backend, rejects it
    await rt.aclose()


@pytest.mark.anyio
async def test_missing_usage_is_estimated_not_zero(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.text("twelve chars", usage=False))
    rt = runtime()
    c = await rt.client(cfg(fake_openai)).complete(request("x" * 400))
    assert c.usage.prompt_tokens == 100 and c.usage.completion_tokens == 3
    await rt.aclose()


@pytest.mark.anyio
async def test_max_concurrency_per_endpoint(fake_openai: FakeOpenAI) -> None:
    fake_openai.responder = lambda _r: Reply.text("ok", delay_s=0.15)
    rt = runtime()
    # Two clients of one endpoint share its limit.
    a = rt.client(cfg(fake_openai, max_concurrency=3))
    b = rt.client(cfg(fake_openai, max_concurrency=3))
    try:
        async with anyio.create_task_group() as tg:
            for i in range(12):
                tg.start_soon((a if i % 2 else b).complete, request(f"q{i}"))
        assert fake_openai.count == 12
        assert fake_openai.max_in_flight == 3
    finally:
        # Closed even when an assertion fails: an SDK client left open is collected during a
        # later test, whose event loop it then tries to use.
        await rt.aclose()


@pytest.mark.anyio
async def test_adaptive_cut_on_untimed_429_and_slow_recovery(
        fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 429 that says neither when to return nor what remains: the only signal is to slow
    down, so the concurrency is cut (once per burst) and recovers step by step.

    The limiter reads a clock the test moves, so "one burst" and "one step per interval" are
    decided by the rule, not by how fast a loaded machine delivers the replies."""
    clock = FakeClock()
    monkeypatch.setattr(limits, "time", clock)

    def responder(req: RecordedRequest) -> Reply:
        if len(fake_openai.requests) <= 8:
            return Reply.error(429, "rate limited")
        return Reply.text("ok", delay_s=0.02)

    fake_openai.responder = responder
    rt = ModelRuntime(cache=CacheConfig(enabled=False), retry=FAST,
                      recover_after_successes=3, recover_interval_s=0.25)
    client = rt.client(cfg(fake_openai, max_concurrency=8))
    limiter = client.limiter
    sem = limiter.semaphore
    async with anyio.create_task_group() as tg:
        for i in range(24):
            tg.start_soon(client.complete, request(f"q{i}"))
    # Eight 429s at one instant of the limiter's clock: one burst, one cut (8 -> 4), and no
    # recovery while the clock stands still, however many calls succeed.
    assert limiter.rate_limited == 8
    assert sem.cuts == 1 and sem.limit == 4
    # The endpoint's first request probes alone and its 429 made the cut, so every later
    # request ran under the cut limit.
    assert sem.peak_in_flight == 4
    assert fake_openai.max_in_flight <= 4
    usage = rt.usage()
    assert usage["by_role"]["agent"]["retries"] == 8
    assert list(usage["rate_limited"].values()) == [8]

    async def successes(n: int) -> None:
        for i in range(n):
            await client.complete(request(f"r{clock.now}-{i}"))

    # Recovery is gradual: a run of 3 successes and a 0.25 s interval (exact in binary, so the
    # clock's sums compare as written) make one step each.
    await successes(3)
    assert sem.limit == 4  # the interval since the cut has not passed
    clock.now += 0.25
    await successes(3)
    assert sem.limit == 5
    await successes(3)
    assert sem.limit == 5  # successes alone do not step again within the interval
    clock.now += 0.25
    await successes(3)
    assert sem.limit == 6
    # A 429 after the cooldown is a new burst: a second cut, not below the floor (8 // 4).
    clock.now += 1.0
    fake_openai.responder = lambda _r: Reply.error(429, "rate limited")
    with pytest.raises(ModelError):
        await client.complete(request("again"))
    assert sem.cuts == 2 and sem.limit == 3
    clock.now += 1.0
    with pytest.raises(ModelError):
        await client.complete(request("and again"))
    assert sem.limit == 2 and sem.min_limit == 2
    await rt.aclose()


@pytest.mark.anyio
async def test_requests_per_minute(fake_openai: FakeOpenAI,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    sleeps = SleepRecorder()
    monkeypatch.setattr(limits, "anyio", sleeps)
    rt = runtime()
    client = rt.client(cfg(fake_openai, requests_per_minute=1200))  # 20/s, bursts of 20
    started = time.monotonic()
    async with anyio.create_task_group() as tg:
        for i in range(40):
            tg.start_soon(client.complete, request(f"q{i}"))
    elapsed = time.monotonic() - started
    assert elapsed >= 0.9, elapsed
    # Not throttled beyond the limit: the waits asked for pay the 20 requests over the burst
    # (1 s at 20/s) and no more; time the machine spent elsewhere only shortens them.
    assert fake_openai.count == 40
    assert 0.0 < sum(sleeps.slept) <= 1.0 + 1e-6, sleeps.slept
    await rt.aclose()


@pytest.mark.anyio
async def test_tokens_per_minute(fake_openai: FakeOpenAI,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    fake_openai.responder = lambda _r: Reply.text("ok", prompt_tokens=300, completion_tokens=0)
    rt = runtime()
    # 600 tokens/s; each request is estimated at ~300 tokens and really uses 300.
    client = rt.client(cfg(fake_openai, tokens_per_minute=36_000))
    sleeps = SleepRecorder()
    monkeypatch.setattr(limits, "anyio", sleeps)
    started = time.monotonic()
    async with anyio.create_task_group() as tg:
        for _ in range(6):
            tg.start_soon(client.complete, request("y" * 1000, max_tokens=50))
    elapsed = time.monotonic() - started
    assert elapsed >= 1.5, elapsed
    # Not throttled beyond the limit: each request is counted 350 tokens (300 of prompt and the
    # 50 of completion allowance), 600 of them in the first second's burst, so the waits asked
    # for pay (6 * 350 - 600) / 600 = 2.5 s at most; time spent elsewhere only shortens them.
    assert fake_openai.count == 6
    assert 0.0 < sum(sleeps.slept) <= 2.5 + 1e-6, sleeps.slept
    await rt.aclose()


# -- cache ------------------------------------------------------------------------------------

@pytest.mark.anyio
async def test_cache_hit_skips_the_server_and_keeps_tokens(fake_openai: FakeOpenAI,
                                                           tmp_path: Path) -> None:
    fake_openai.responder = lambda _r: Reply.text("fresh", prompt_tokens=11, completion_tokens=3)
    rt = runtime(tmp_path, run_id="run-a")
    client = rt.client(cfg(fake_openai, price_input_per_mtok=1.0, price_output_per_mtok=1.0))
    first = await client.complete(request("same"))
    second = await client.complete(request("same"))
    assert fake_openai.count == 1
    assert not first.cached and second.cached
    assert second.text == "fresh" and second.usage.prompt_tokens == 11
    assert first.cost_usd == pytest.approx(14e-6) and second.cost_usd == 0.0
    u = rt.usage()
    assert (u["cache"]["hits"], u["cache"]["misses"]) == (1, 1)
    assert (u["by_role"]["agent"]["cache_hits"], u["by_role"]["agent"]["cache_misses"]) == (1, 1)
    await rt.aclose()
    # A new runtime (a resumed run) replays from the same file with no new call.
    rt2 = runtime(tmp_path, run_id="run-a")
    again = await rt2.client(cfg(fake_openai)).complete(request("same"))
    assert again.cached and fake_openai.count == 1
    await rt2.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize("change", [
    {"repeat": 1}, {"temperature": 0.7}, {"seed": 3}, {"max_tokens": 99}, {"top_p": 0.5},
    {"stop": ["\n"]}, {"tool_choice": "required"}, {"tools": [SEARCH.model_dump()]},
    {"response_schema": {"type": "object"}}, {"text": "other"},
])
async def test_cache_key_covers_every_input(fake_openai: FakeOpenAI, tmp_path: Path,
                                            change: dict[str, object]) -> None:
    rt = runtime(tmp_path)
    client = rt.client(cfg(fake_openai))
    base = request("same", tools=[]) if "tools" not in change else request("same")
    changed_kw = {k: v for k, v in change.items() if k != "text"}
    changed = request(str(change.get("text", "same")), **changed_kw)
    await client.complete(base)
    c = await client.complete(changed)
    assert not c.cached and fake_openai.count == 2
    # Role is not part of the key: a judge may reuse an identical agent call.
    hit = await client.complete(base.model_copy(update={"role": "judge"}))
    assert hit.cached and fake_openai.count == 2
    await rt.aclose()


@pytest.mark.anyio
async def test_cache_key_separates_models_and_endpoints(fake_openai: FakeOpenAI,
                                                        tmp_path: Path) -> None:
    rt = runtime(tmp_path)
    await rt.client(cfg(fake_openai)).complete(request())
    other_model = ModelConfig(model="openai/other", base_url=fake_openai.base_url)
    await rt.client(other_model).complete(request())
    other_url = ModelConfig(model="openai/fake-model",
                            base_url=fake_openai.base_url.replace("127.0.0.1", "localhost"))
    await rt.client(other_url).complete(request())
    assert fake_openai.count == 3
    await rt.aclose()


@pytest.mark.anyio
async def test_api_key_is_not_in_the_cache(fake_openai: FakeOpenAI, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-test-SECRET-9f8e7d"
    monkeypatch.setenv("FAKE_KEY", secret)
    rt = runtime(tmp_path)
    await rt.client(cfg(fake_openai, api_key_env="FAKE_KEY")).complete(request())
    assert fake_openai.requests[0].headers["authorization"] == f"Bearer {secret}"
    await rt.aclose()
    # Same call under another key: same cache entry.
    monkeypatch.setenv("FAKE_KEY", "sk-another")
    rt = runtime(tmp_path)
    c = await rt.client(cfg(fake_openai, api_key_env="FAKE_KEY")).complete(request())
    assert c.cached
    await rt.aclose()
    for f in tmp_path.iterdir():
        assert secret.encode() not in f.read_bytes()


def test_official_endpoint_without_key_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        runtime().client(ModelConfig(model="openai/gpt-4o-mini"))


# -- cost ---------------------------------------------------------------------------------------

@pytest.mark.anyio
async def test_cost_by_role_from_config_prices(fake_openai: FakeOpenAI) -> None:
    fake_openai.responder = lambda _r: Reply.text("ok", prompt_tokens=1000,
                                                  completion_tokens=500)
    rt = runtime()
    priced = rt.client(cfg(fake_openai, price_input_per_mtok=2.0, price_output_per_mtok=8.0))
    c = await priced.complete(request("a"))
    assert c.cost_usd == pytest.approx(0.006)
    await priced.complete(request("b", role="judge"))
    await priced.complete(request("c", role="judge"))
    unpriced = rt.client(ModelConfig(model="openai/free-or-not", base_url=fake_openai.base_url))
    await unpriced.complete(request("d", role="adapter"))
    u = rt.usage()
    assert u["by_role"]["agent"]["cost_usd"] == pytest.approx(0.006)
    assert u["by_role"]["judge"]["cost_usd"] == pytest.approx(0.012)
    assert u["by_role"]["judge"]["calls"] == 2
    assert u["by_role"]["judge"]["prompt_tokens"] == 2000
    assert u["by_role"]["adapter"]["cost_usd"] is None  # unknown, not 0
    assert u["total"]["cost_usd"] is None
    assert u["total"]["cost_usd_known"] == pytest.approx(0.018)
    assert u["by_model"]["openai/fake-model"]["calls"] == 3
    assert u["by_role"]["agent"]["latency_s"] > 0
    await rt.aclose()


@pytest.mark.anyio
async def test_max_cost_usd_stops_new_calls(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.responder = lambda _r: Reply.text("ok", prompt_tokens=1000,
                                                  completion_tokens=0)
    rt = runtime(tmp_path, max_cost_usd=0.0025)
    client = rt.client(cfg(fake_openai, price_input_per_mtok=1.0, price_output_per_mtok=1.0))
    await client.complete(request("1"))
    await client.complete(request("2"))
    assert not rt.meter.exhausted
    await client.complete(request("3"))
    assert rt.meter.exhausted
    with pytest.raises(CostLimitReached, match="max_cost_usd"):
        await client.complete(request("4"))
    assert fake_openai.count == 3
    # A cached answer costs nothing and is still served.
    hit = await client.complete(request("1"))
    assert hit.cached
    await rt.aclose()


@pytest.mark.anyio
async def test_create_client_without_runtime_has_the_whole_stack(fake_openai: FakeOpenAI,
                                                                 tmp_path: Path) -> None:
    from lens.models.factory import create_client

    fake_openai.script(Reply.error(502, "bad gateway"), Reply.text("ok"))
    client = create_client(cfg(fake_openai),
                           cache=CacheConfig(path=tmp_path / "c.sqlite"))
    c = await client.complete(request())
    assert c.retries == 1
    assert (await client.complete(request())).cached
    await client.aclose()
    assert json.loads(json.dumps(c.model_dump()))["retries"] == 1


@pytest.mark.anyio
async def test_agent_responder_drives_the_real_agent(fake_openai: FakeOpenAI) -> None:
    from lens.data.config import BudgetConfig
    from lens.data.dataset import AgentQuestion
    from lens.memory.adapter import CapabilityManifest, SearchResult
    from lens.runner.agent import Agent
    from tests.support.fake_openai import agent_responder

    class OneRecord:
        async def search(self, query: str, filters: object = None,
                         limit: int | None = None) -> list[SearchResult]:
            return [SearchResult(ref_id="ep_7", text=f"match for {query}", score=1.0)]

    fake_openai.responder = agent_responder()
    rt = runtime()
    agent = Agent(model=rt.client(cfg(fake_openai)), adapter=OneRecord(),  # type: ignore[arg-type]
                  budget=BudgetConfig(), capabilities=CapabilityManifest())
    result = await agent.answer(AgentQuestion(question_id="q1", prompt="what happened?"))
    assert result.cited_refs == ["ep_7"] and fake_openai.count == 2
    assert fake_openai.requests[0].body["messages"][-1]["content"] == "what happened?"
    await rt.aclose()


def test_unknown_transport_is_a_config_error(fake_openai: FakeOpenAI) -> None:
    with pytest.raises(ConfigError, match=r"options\.transport must be one of aiohttp, sdk"):
        runtime().client(ModelConfig(model="openai/m", base_url=fake_openai.base_url,
                                     options={"transport": "grpc"}))
    # The removed transport is refused with the reason, not as an unknown word.
    with pytest.raises(ConfigError, match=r"'http': lens's own HTTP/1.1 client was removed"):
        runtime().client(ModelConfig(model="openai/m", base_url=fake_openai.base_url,
                                     options={"transport": "http"}))


@pytest.mark.anyio
async def test_every_transport_sends_the_same_request(fake_openai: FakeOpenAI,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LENS_TEST_SAME_BODY_KEY", "sk-same")
    fake_openai.script(Reply.text("one"), Reply.text("two"))
    rt = runtime()
    req = request("naïve café — \"quoted\"", tools=[SEARCH.model_dump()], max_tokens=32)
    for name in ("aiohttp", "sdk"):
        config = ModelConfig(model="openai/fake-model", base_url=fake_openai.base_url,
                             api_key_env="LENS_TEST_SAME_BODY_KEY", options={"transport": name})
        await rt.client(config).complete(req)
    aio, sdk = fake_openai.requests
    assert aio.body == sdk.body
    assert aio.body["messages"][0]["content"] == "naïve café — \"quoted\""
    assert aio.headers["authorization"] == sdk.headers["authorization"] == "Bearer sk-same"
    await rt.aclose()


@pytest.mark.anyio
async def test_default_transport_goes_through_the_environment_proxy(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The endpoint's host does not resolve; only a request sent to the proxy can succeed.
    origin = fake_openai.base_url.rsplit("/v1", 1)[0]
    for name in ("HTTP_PROXY", "http_proxy"):
        monkeypatch.setenv(name, origin)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    fake_openai.script(Reply.text("via proxy"))
    rt = runtime()
    config = ModelConfig(model="openai/fake-model", base_url="http://llm.lens-proxy-test.invalid/v1")
    out = await rt.client(config).complete(request())
    assert out.text == "via proxy"
    assert fake_openai.requests[0].path == "http://llm.lens-proxy-test.invalid/v1/chat/completions"
    await rt.aclose()


def test_no_proxy_exempts_an_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    from lens.models.json_http import env_proxy

    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("https_proxy", "http://proxy.example:3128")
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.setenv(name, "internal.example")
    assert env_proxy("https://api.openai.com/v1/chat/completions") == "http://proxy.example:3128"
    assert env_proxy("https://llm.internal.example/v1/chat/completions") is None
