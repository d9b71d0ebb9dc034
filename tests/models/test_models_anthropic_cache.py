"""Anthropic's prompt cache through litellm: the request a Claude model sends carries cache
breakpoints on the stable prefix (the tool definitions and the system prompt, where the standing
context is), checked in the body a loopback server speaking Anthropic's Messages API receives;
the cached tokens it reports are read back. Other models' requests are left as they are."""

from __future__ import annotations

from typing import Any

import pytest

from lens.data.config import ModelConfig
from lens.models.base import CompletionRequest
from lens.models.litellm_backend import wants_breakpoints, with_breakpoints
from tests.support.fake_anthropic import FakeAnthropic, fake_anthropic, message

__all__ = ["fake_anthropic"]

TOOLS = [{"name": name, "description": f"{name} tool",
          "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}
         for name in ("memory_search", "memory_retrieve")]


def _request() -> CompletionRequest:
    return CompletionRequest.model_validate({
        "messages": [{"role": "system", "content": "You answer from memory. Standing context."},
                     {"role": "user", "content": "What changed in week 3?"}],
        "tools": TOOLS})


@pytest.mark.anyio
@pytest.mark.parametrize("breakpoints", [True, False])
async def test_claude_requests_mark_the_stable_prefix(fake_anthropic: FakeAnthropic,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      breakpoints: bool) -> None:
    pytest.importorskip("litellm")
    from lens.models.litellm_backend import LiteLLMClient

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    fake_anthropic.answer = lambda _b: message("done", input_tokens=40, cache_read=900,
                                               cache_write=60)
    client = LiteLLMClient(ModelConfig(
        model="litellm/anthropic/claude-3-5-haiku-latest", base_url=fake_anthropic.base_url,
        options={} if breakpoints else {"cache_breakpoints": False}))
    out = await client.complete(_request())
    (sent,) = fake_anthropic.requests
    assert sent.path.endswith("/v1/messages")
    body: dict[str, Any] = sent.body
    marked = [t["name"] for t in body["tools"] if "cache_control" in t]
    system = body["system"]
    if breakpoints:
        # The last tool closes the tools' part of the prefix; the system prompt the rest.
        assert marked == ["memory_retrieve"]
        assert system[-1]["cache_control"] == {"type": "ephemeral"}
        assert system[-1]["text"].startswith("You answer from memory")
    else:
        assert marked == []
        assert all("cache_control" not in part for part in
                   (system if isinstance(system, list) else []))
    # The question is never part of the cached prefix.
    assert all("cache_control" not in part for m in body["messages"]
               for part in (m["content"] if isinstance(m["content"], list) else []))
    assert (out.usage.prompt_tokens, out.usage.cached_prompt_tokens,
            out.usage.cache_write_tokens) == (1000, 900, 60)


def test_only_anthropic_models_get_breakpoints() -> None:
    assert wants_breakpoints("anthropic/claude-3-5-haiku-latest")
    assert wants_breakpoints("bedrock/anthropic.claude-3-haiku")
    assert not wants_breakpoints("openai/gpt-4o-mini")
    params = {"messages": [{"role": "user", "content": "q"}]}
    assert with_breakpoints(dict(params)) == params


@pytest.mark.anyio
async def test_a_sessions_last_tool_result_is_a_breakpoint(fake_anthropic: FakeAnthropic,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("litellm")
    from lens.models.litellm_backend import LiteLLMClient

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    client = LiteLLMClient(ModelConfig(model="litellm/anthropic/claude-3-5-haiku-latest",
                                       base_url=fake_anthropic.base_url))
    request = CompletionRequest.model_validate({
        "messages": [
            {"role": "system", "content": "You answer from memory."},
            {"role": "user", "content": "What changed in week 3?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c1", "name": "memory_search", "arguments": "{\"q\": \"week 3\"}"}]},
            {"role": "tool", "tool_call_id": "c1", "name": "memory_search",
             "content": "[{\"ref_id\": \"e1\", \"text\": \"week 3: the rollout\"}]"}],
        "tools": TOOLS})
    await client.complete(request)
    last = fake_anthropic.requests[-1].body["messages"][-1]
    (result,) = last["content"]
    assert result["type"] == "tool_result"
    assert result["cache_control"] == {"type": "ephemeral"}
