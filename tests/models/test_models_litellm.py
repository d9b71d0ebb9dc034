"""The litellm backend through the stack against the fake server (skipped without litellm)."""

from __future__ import annotations

import os

import pytest

from lens.data.config import CacheConfig, ModelConfig
from lens.models.base import CompletionRequest, Message, ModelError, ToolSpec
from lens.models.retry import RetryPolicy
from lens.models.runtime import ModelRuntime
from tests.support.extras import skip_module_unless
from tests.support.fake_openai import FakeOpenAI, Reply, fake_openai

__all__ = ["fake_openai"]
# As lens does before importing litellm: otherwise the import fetches its price table.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
skip_module_unless("litellm")

FAST = RetryPolicy(max_retries=3, base_wait_s=0.01, max_wait_s=0.05)
SEARCH = ToolSpec(name="memory_search", description="Search.",
                  parameters={"type": "object", "properties": {"query": {"type": "string"}},
                              "required": ["query"]})


def client(server: FakeOpenAI) -> tuple[ModelRuntime, object]:
    rt = ModelRuntime(cache=CacheConfig(enabled=False), retry=FAST)
    cfg = ModelConfig(model="litellm/openai/fake-model", base_url=server.base_url,
                      price_input_per_mtok=1.0, price_output_per_mtok=1.0)
    return rt, rt.client(cfg)


@pytest.mark.anyio
async def test_litellm_tool_call_retry_and_cost(fake_openai: FakeOpenAI,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-litellm-test")
    fake_openai.script(Reply.error(429, "slow down", retry_after=0.2),
                       Reply.tool_call("memory_search", {"query": "p99"},
                                       prompt_tokens=100, completion_tokens=10))
    rt, c = client(fake_openai)
    req = CompletionRequest(messages=[Message(role="user", content="q")], tools=[SEARCH])
    out = await c.complete(req)  # type: ignore[attr-defined]
    assert out.tool_calls[0].name == "memory_search"
    assert out.tool_calls[0].parsed_arguments() == {"query": "p99"}
    assert out.retries == 1 and out.provider == "litellm"
    assert out.cost_usd == pytest.approx(110e-6)
    body = fake_openai.requests[-1].body
    assert body["tools"][0]["function"]["name"] == "memory_search"
    await rt.aclose()


@pytest.mark.anyio
async def test_litellm_bad_request_fails_at_once(fake_openai: FakeOpenAI,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-litellm-test")
    fake_openai.script(Reply.error(400, "unsupported parameter: foo"))
    rt, c = client(fake_openai)
    with pytest.raises(ModelError, match="unsupported parameter"):
        await c.complete(CompletionRequest(messages=[Message(role="user", content="q")]))  # type: ignore[attr-defined]
    assert fake_openai.count == 1
    await rt.aclose()
