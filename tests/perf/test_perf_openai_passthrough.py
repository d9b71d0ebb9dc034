"""The openai backend's default (aiohttp) transport sends the same request as the SDK's typed
path."""

from __future__ import annotations

import openai
import pytest

from lens.data.config import ModelConfig
from lens.models.base import CompletionRequest, Message, ToolCall, ToolSpec
from lens.models.openai_backend import OpenAIClient, build_params, sdk_call_params
from tests.support.fake_openai import FakeOpenAI, Reply, fake_openai

# The openai SDK transport moves a major version with the litellm extra.
pytestmark = pytest.mark.extras_sensitive

__all__ = ["fake_openai"]

SEARCH = ToolSpec(name="memory_search", description="Search the memory.",
                  parameters={"type": "object", "properties": {"query": {"type": "string"}},
                              "required": ["query"], "additionalProperties": False})


def conversation() -> CompletionRequest:
    return CompletionRequest(
        messages=[
            Message(role="system", content="You answer from memory only."),
            Message(role="user", content="What changed — in café prices? \"quoted\""),
            Message(role="assistant", content="",
                    tool_calls=[ToolCall(id="c1", name="memory_search",
                                         arguments='{"query": "café prices"}')]),
            Message(role="tool", content='{"results": [{"ref_id": "e1", "text": "ü"}]}',
                    tool_call_id="c1", name="memory_search"),
        ],
        tools=[SEARCH], tool_choice="auto", max_tokens=64, seed=7, temperature=0.3,
        top_p=0.9, stop=["\n\n"],
        response_schema={"type": "object", "properties": {"a": {"type": "string"}}},
    )


@pytest.mark.anyio
@pytest.mark.parametrize("extra_body", [None, {"top_k": 5, "temperature": 0.1}])
async def test_passthrough_body_equals_sdk_typed_body(
    fake_openai: FakeOpenAI, extra_body: dict[str, object] | None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LENS_TEST_PASSTHROUGH_KEY", "sk-passthrough")
    fake_openai.script(Reply.text("a"), Reply.text("b"))
    config = ModelConfig(model="openai/fake-model", base_url=fake_openai.base_url,
                         api_key_env="LENS_TEST_PASSTHROUGH_KEY",
                         options={"extra_body": extra_body} if extra_body else {})
    request = conversation()
    lens_client = OpenAIClient(config)
    completion = await lens_client.complete(request)
    await lens_client.aclose()
    assert completion.text == "a"

    # The SDK's own, typed path with the same parameters.
    sdk = openai.AsyncOpenAI(base_url=fake_openai.base_url, api_key="sk-passthrough",
                             max_retries=0)
    params = build_params(request, "fake-model", None, "max_tokens")
    await sdk.chat.completions.create(**params, extra_body=extra_body)  # type: ignore[call-overload]
    await sdk.close()

    fast, typed = fake_openai.requests
    assert fast.body == typed.body
    assert fast.body["messages"][1]["content"] == "What changed — in café prices? \"quoted\""
    if extra_body:
        assert fast.body["top_k"] == 5 and fast.body["temperature"] == 0.1
    # Authentication and content type are untouched by the fast path.
    assert fast.headers["authorization"] == typed.headers["authorization"]
    assert fast.headers["content-type"] == typed.headers["content-type"]


def test_sdk_call_params_moves_only_the_large_fields() -> None:
    params = build_params(conversation(), "m", None, "max_tokens")
    call = sdk_call_params(params)
    assert call["messages"] == []
    assert set(call["extra_body"]) == {"messages", "tools"}
    assert call["extra_body"]["messages"] == params["messages"]
    assert {k: v for k, v in call.items() if k not in ("messages", "extra_body")} == {
        k: v for k, v in params.items() if k not in ("messages", "tools")}
