"""The openai backend against a hostile or broken endpoint (loopback fake): oversized replies,
deep nesting, absurd Retry-After and usage, and where the API key may go. Each is an error of
that one call (retried where a retry can help), never a crash or a silent wrong number."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest

from lens.core.errors import ConfigError
from lens.data.config import BudgetConfig, CacheConfig, ModelConfig
from lens.models.base import CompletionRequest, ModelError, ToolCall
from lens.models.errors import MAX_RETRY_AFTER_S, parse_retry_after
from lens.models.openai_backend import is_openai_endpoint
from lens.models.retry import RetryPolicy
from lens.models.runtime import ModelRuntime
from tests.support.fake_openai import FakeOpenAI, Reply, fake_openai

# The openai SDK transport moves a major version with the litellm extra.
pytestmark = pytest.mark.extras_sensitive

__all__ = ["fake_openai"]

FAST = RetryPolicy(max_retries=3, base_wait_s=0.01, max_wait_s=0.05, max_total_wait_s=5)
_transport = {"name": "aiohttp"}


@pytest.fixture(autouse=True, params=["aiohttp", "sdk"])
def transport(request: pytest.FixtureRequest) -> Iterator[str]:
    _transport["name"] = request.param
    yield request.param
    _transport["name"] = "aiohttp"


def cfg(server: FakeOpenAI, **kw: object) -> ModelConfig:
    options = {"transport": _transport["name"], **kw.pop("options", {})}  # type: ignore[dict-item]
    return ModelConfig.model_validate({"model": "openai/fake-model",
                                       "base_url": server.base_url, "options": options, **kw})


def runtime(retry: RetryPolicy = FAST) -> ModelRuntime:
    return ModelRuntime(cache=CacheConfig(enabled=False), retry=retry)


def request(text: str = "hello") -> CompletionRequest:
    return CompletionRequest.model_validate({"messages": [{"role": "user", "content": text}]})


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# -- size cap ----------------------------------------------------------------------------------

@pytest.mark.anyio
async def test_a_reply_over_the_size_cap_is_an_error_of_that_call(fake_openai: FakeOpenAI,
                                                                  transport: str) -> None:
    if transport == "sdk":
        pytest.skip("the size cap is the aiohttp transport's; the SDK reads what httpx gives")
    fake_openai.script(Reply.text("x" * 10_000), Reply.text("small"))
    rt = runtime()
    client = rt.client(cfg(fake_openai, options={"max_response_bytes": 4096}))
    with pytest.raises(ModelError, match=r"over the cap of 4096 bytes.*max_response_bytes"):
        await client.complete(request())
    # Not retried: the same endpoint would send the same oversized reply again.
    assert fake_openai.count == 1
    assert (await client.complete(request())).text == "small"
    await rt.aclose()


@pytest.mark.anyio
async def test_a_chunked_reply_is_stopped_at_the_cap(transport: str) -> None:
    """No Content-Length to refuse up front: the cap must stop the read itself."""
    if transport == "sdk":
        pytest.skip("the size cap is the aiohttp transport's")
    sent = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal sent
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n")
        chunk = b"x" * 65536
        try:
            for _ in range(64):  # 4 MiB if nobody stops reading
                writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                await writer.drain()
                sent += len(chunk)
        except (ConnectionError, OSError):
            pass
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    rt = runtime(RetryPolicy(max_retries=0))
    client = rt.client(ModelConfig(model="openai/m", base_url=f"http://127.0.0.1:{port}/v1",
                                   options={"max_response_bytes": 200_000}))
    with pytest.raises(ModelError, match="passed 200000 bytes"):
        await client.complete(request())
    await rt.aclose()
    server.close()
    assert sent < 4 * 1024 * 1024


def test_the_size_cap_option_is_checked() -> None:
    with pytest.raises(ConfigError, match="max_response_bytes must be a whole number"):
        ModelRuntime(cache=CacheConfig(enabled=False)).client(
            ModelConfig(model="openai/m", base_url="http://127.0.0.1:9/v1",
                        options={"max_response_bytes": "lots"}))


# -- nesting -----------------------------------------------------------------------------------

@pytest.mark.anyio
async def test_a_deeply_nested_body_is_retried_not_a_recursion_error(
        fake_openai: FakeOpenAI) -> None:
    deep = ('{"choices": [{"message": {"role": "assistant", "content": '
            + nested(200_000) + '}}]}').encode()
    fake_openai.script(Reply(raw=deep), Reply.text("fine"))
    rt = runtime()
    out = await rt.client(cfg(fake_openai)).complete(request())
    assert out.text == "fine" and out.retries == 1
    await rt.aclose()


@pytest.mark.anyio
async def test_always_nested_gives_up_with_a_message(fake_openai: FakeOpenAI) -> None:
    fake_openai.responder = lambda _r: Reply(raw=nested(100_000).encode())
    rt = runtime()
    with pytest.raises(ModelError, match="malformed response") as info:
        await rt.client(cfg(fake_openai)).complete(request())
    assert not isinstance(info.value.__cause__, RecursionError)
    await rt.aclose()


@pytest.mark.anyio
async def test_deeply_nested_tool_arguments_are_a_tool_error(fake_openai: FakeOpenAI) -> None:
    """Through the real agent: the model gets a tool error and answers; nothing crashes."""
    from lens.data.dataset import AgentQuestion
    from lens.memory.adapter import CapabilityManifest, SearchResult
    from lens.runner.agent import Agent

    class Empty:
        async def search(self, query: str, filters: object = None,
                         limit: int | None = None) -> list[SearchResult]:
            return []

    arguments = '{"query": ' + nested(5_000) + "}"
    fake_openai.script(Reply.tool_call("memory_search", arguments),
                       Reply.tool_call("memory_search", '{"q": ' + nested(40) + "}"),
                       Reply.text("no answer in memory"))
    rt = runtime()
    agent = Agent(model=rt.client(cfg(fake_openai)), adapter=Empty(),  # type: ignore[arg-type]
                  budget=BudgetConfig(), capabilities=CapabilityManifest())
    result = await agent.answer(AgentQuestion(question_id="q1", prompt="hi"))
    assert result.answer == "no answer in memory"
    assert result.tool_errors == 2
    assert all("nest deeper" in (t.error or "") for t in result.tool_calls)
    await rt.aclose()


def test_parsed_arguments_bounds_depth() -> None:
    assert ToolCall(id="1", name="x", arguments='{"a": [[1]]}').parsed_arguments() == {
        "a": [[1]]}
    for args in ('{"a": ' + nested(50) + "}", '{"a": ' + nested(100_000) + "}"):
        with pytest.raises(ValueError, match="nest deeper than 32 levels"):
            ToolCall(id="1", name="x", arguments=args).parsed_arguments()
    with pytest.raises(ValueError, match="not usable JSON"):
        ToolCall(id="1", name="x", arguments='{"n": ' + "9" * 5000 + "}").parsed_arguments()


# -- Retry-After -------------------------------------------------------------------------------

@pytest.mark.anyio
@pytest.mark.parametrize("value", ["inf", "1e308", "99999999", "nan"])
async def test_absurd_retry_after_is_ignored_not_give_up(fake_openai: FakeOpenAI,
                                                         value: str) -> None:
    fake_openai.script(Reply.error(429, "slow down", retry_after=value), Reply.text("ok"))
    rt = runtime()
    out = await rt.client(cfg(fake_openai)).complete(request())
    assert out.text == "ok" and out.retries == 1
    await rt.aclose()


def test_retry_after_parsing_is_bounded() -> None:
    for absurd in ("inf", "nan", "1e308", str(MAX_RETRY_AFTER_S + 1)):
        assert parse_retry_after({"Retry-After": absurd}) is None, absurd
    assert parse_retry_after({"Retry-After": str(MAX_RETRY_AFTER_S)}) == MAX_RETRY_AFTER_S
    assert parse_retry_after({"Retry-After": "-5"}) == 0.0
    assert parse_retry_after({"retry-after-ms": "inf"}) is None
    assert parse_retry_after({"Retry-After": "Fri, 31 Dec 99999 23:59:59 GMT"}) is None


# -- usage -------------------------------------------------------------------------------------

def _usage_reply(prompt: object, completion: object) -> Reply:
    reply = Reply.text("answer")
    assert reply.body is not None
    reply.body["usage"] = {"prompt_tokens": prompt, "completion_tokens": completion}
    return reply


@pytest.mark.anyio
@pytest.mark.parametrize("prompt,completion", [("12", 3), (12, "3"), (-1000, 3), (12, -50),
                                               (1e30, 3), (12.5, 3), (True, 3), ("many", 3)])
async def test_odd_usage_keeps_the_answer_at_the_most_it_can_cost(
        fake_openai: FakeOpenAI, prompt: object, completion: object) -> None:
    """Negative usage would lower the meters, strings would be guessed at: neither is taken.
    The answer is paid for, so it is kept, not retried; each unreadable count is recorded as
    unknown and charged at the most the call can have cost (the prompt's bytes, the request's
    max_tokens), so the meters and budgets still bite."""
    fake_openai.script(_usage_reply(prompt, completion))
    rt = runtime()
    req = request("hello there").model_copy(update={"max_tokens": 64})
    out = await rt.client(cfg(fake_openai)).complete(req)
    assert out.text == "answer" and out.retries == 0 and fake_openai.count == 1
    bad_prompt = not (isinstance(prompt, int) and not isinstance(prompt, bool) and prompt >= 0)
    bad_completion = not (isinstance(completion, int) and completion >= 0)
    assert out.usage.unknown == (["prompt_tokens"] if bad_prompt else []) + (
        ["completion_tokens"] if bad_completion else [])
    assert out.usage.prompt_tokens == (len(b"hello there") if bad_prompt else prompt)
    assert out.usage.completion_tokens == (64 if bad_completion else completion)
    total = rt.usage()["total"]
    assert total["unknown_usage_calls"] == 1
    assert total["prompt_tokens"] == out.usage.prompt_tokens
    await rt.aclose()


# -- where the key goes ------------------------------------------------------------------------

@pytest.mark.anyio
async def test_openai_key_never_goes_to_another_host(fake_openai: FakeOpenAI,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-openai-SECRET-4c1d"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    rt = runtime()
    await rt.client(cfg(fake_openai)).complete(request())
    sent = fake_openai.requests[0].headers
    assert secret not in json.dumps(sent)
    assert sent.get("authorization") in (None, "Bearer no-key")
    await rt.aclose()


@pytest.mark.anyio
async def test_a_custom_endpoint_gets_its_own_key(fake_openai: FakeOpenAI,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-not-this-one")
    monkeypatch.setenv("LENS_TEST_LOCAL_KEY", "local-key")
    rt = runtime()
    await rt.client(cfg(fake_openai, api_key_env="LENS_TEST_LOCAL_KEY")).complete(request())
    assert fake_openai.requests[0].headers["authorization"] == "Bearer local-key"
    await rt.aclose()


def test_a_named_but_unset_key_variable_is_a_config_error(
        fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LENS_TEST_UNSET_KEY", raising=False)
    with pytest.raises(ConfigError, match="api_key_env names LENS_TEST_UNSET_KEY, which is "
                                          "not set"):
        runtime().client(cfg(fake_openai, api_key_env="LENS_TEST_UNSET_KEY"))


def test_which_hosts_are_openai() -> None:
    assert is_openai_endpoint(None)
    assert is_openai_endpoint("https://api.openai.com/v1")
    assert is_openai_endpoint("https://API.OpenAI.com./v1")
    assert not is_openai_endpoint("https://api.openai.com.evil.example/v1")
    assert not is_openai_endpoint("https://evil.example/api.openai.com/v1")
    assert not is_openai_endpoint("https://api.openai.com@evil.example/v1")
    assert not is_openai_endpoint("http://127.0.0.1:8000/v1")
    assert not is_openai_endpoint("http://api.openai.com/v1")  # the key would travel in clear
