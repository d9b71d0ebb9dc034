"""The provider's prompt cache: cached prompt tokens read from each provider's usage shape over
a real HTTP server on 127.0.0.1, priced at the cache's rates and summed per role."""

from __future__ import annotations

from typing import Any

import pytest

from lens.data.config import CacheConfig, ModelConfig
from lens.models.base import CompletionRequest, Usage
from lens.models.pricing import Pricing, litellm_pricing
from lens.models.retry import RetryPolicy
from lens.models.runtime import ModelRuntime
from tests.support.fake_openai import FakeOpenAI, Reply, fake_openai

# The openai SDK transport moves a major version with the litellm extra.
pytestmark = pytest.mark.extras_sensitive

__all__ = ["fake_openai"]

FAST = RetryPolicy(max_retries=1, base_wait_s=0.01, max_wait_s=0.02, max_total_wait_s=5)


def _reply(usage: dict[str, Any]) -> Reply:
    reply = Reply.text("ok", prompt_tokens=1000, completion_tokens=100)
    assert reply.body is not None
    reply.body["usage"].update(usage)
    return reply


# OpenAI counts cache reads in prompt_tokens_details; Anthropic (through litellm or a
# litellm proxy) as top-level cache_read/cache_creation_input_tokens, within prompt_tokens.
OPENAI_SHAPE = {"prompt_tokens_details": {"cached_tokens": 768}}
ANTHROPIC_SHAPE = {"cache_read_input_tokens": 768, "cache_creation_input_tokens": 200}


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["aiohttp", "sdk"])
@pytest.mark.parametrize(("shape", "write"), [(OPENAI_SHAPE, 0), (ANTHROPIC_SHAPE, 200)])
async def test_cached_tokens_read_priced_and_summed(fake_openai: FakeOpenAI, transport: str,
                                                    shape: dict[str, Any], write: int) -> None:
    fake_openai.responder = lambda _r: _reply(shape)
    rt = ModelRuntime(cache=CacheConfig(enabled=False), retry=FAST)
    client = rt.client(ModelConfig.model_validate({
        "model": "openai/fake-model", "base_url": fake_openai.base_url,
        "options": {"transport": transport},
        "price_input_per_mtok": 1.0, "price_output_per_mtok": 5.0}))
    c = await client.complete(CompletionRequest.model_validate(
        {"messages": [{"role": "user", "content": "q"}], "role": "judge"}))
    assert (c.usage.cached_prompt_tokens, c.usage.cache_write_tokens) == (768, write)
    judge = rt.usage()["by_role"]["judge"]
    assert judge["cached_prompt_tokens"] == 768 and judge["cache_write_tokens"] == write
    assert judge["cached_share"] == pytest.approx(0.768)
    # Config prices carry no cache rate: cached tokens at the input rate, cost as before.
    assert c.cost_usd == pytest.approx((1000 * 1.0 + 100 * 5.0) / 1e6)
    await rt.aclose()


@pytest.mark.anyio
async def test_more_cached_than_prompt_tokens_is_charged_as_uncached(
        fake_openai: FakeOpenAI) -> None:
    # Impossible cache counts are unknown, charged as uncached (the dearer reading); the
    # answer is kept.
    fake_openai.responder = lambda _r: _reply({"prompt_tokens_details": {"cached_tokens": 5000}})
    rt = ModelRuntime(cache=CacheConfig(enabled=False), retry=FAST)
    client = rt.client(ModelConfig(model="openai/fake-model", base_url=fake_openai.base_url))
    c = await client.complete(CompletionRequest.model_validate(
        {"messages": [{"role": "user", "content": "q"}]}))
    assert c.usage.unknown == ["cached_tokens"] and c.usage.cached_prompt_tokens == 0
    assert c.usage.prompt_tokens == 1000 and c.retries == 0
    await rt.aclose()


def test_cache_rates_price_reads_and_writes() -> None:
    price = Pricing(1.0, 5.0, "test", cache_read_per_mtok=0.1, cache_write_per_mtok=1.25)
    usage = Usage(prompt_tokens=1000, completion_tokens=100, cached_prompt_tokens=768,
                  cache_write_tokens=200)
    assert price.cost(usage) == pytest.approx((32 * 1.0 + 768 * 0.1 + 200 * 1.25 + 500) / 1e6)
    assert Usage().cached_prompt_tokens == 0


def test_litellm_price_map_gives_cache_rates() -> None:
    pytest.importorskip("litellm")
    price = litellm_pricing("anthropic/claude-haiku-4-5")
    if price is None:
        pytest.skip("litellm's price map has no claude-haiku-4-5")
    assert price.cache_read_per_mtok is not None and price.cache_write_per_mtok is not None
    assert price.cache_read_per_mtok < price.input_per_mtok


@pytest.mark.anyio
@pytest.mark.parametrize("shape", [OPENAI_SHAPE, ANTHROPIC_SHAPE])
async def test_cached_tokens_through_litellm(fake_openai: FakeOpenAI, shape: dict[str, Any],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("litellm")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-litellm-test")
    fake_openai.responder = lambda _r: _reply(shape)
    rt = ModelRuntime(cache=CacheConfig(enabled=False), retry=FAST)
    client = rt.client(ModelConfig(model="litellm/openai/fake-model",
                                   base_url=fake_openai.base_url))
    c = await client.complete(CompletionRequest.model_validate(
        {"messages": [{"role": "user", "content": "q"}]}))
    assert c.usage.cached_prompt_tokens == 768
    await rt.aclose()
