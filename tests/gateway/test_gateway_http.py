"""The model gateway through a real HTTP client: the openai SDK against the aiohttp server on
loopback, forwarding to lens's scripted model through the run's model stack."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import openai
import pytest
import yaml

from lens.core.distribution import install_hint
from lens.data.config import CacheConfig, ModelConfig
from lens.models.runtime import ModelRuntime
from lens.runner.gateway.server import ModelGateway
from lens.runner.gateway.wire import ChatBody, completion_request
from tests.support.extras import EXTRAS
from tests.support.fake_openai import FakeOpenAI

# The openai SDK the tests drive moves a major version with the litellm extra.
pytestmark = [pytest.mark.anyio, pytest.mark.extras_sensitive]

vector = pytest.mark.skipif(
    not all(__import__("importlib").util.find_spec(m) for m in EXTRAS["vector"].modules),
    reason=f"needs the vector extra: {EXTRAS['vector'].install}")


def rules_model(tmp_path: Path, **extra: Any) -> ModelConfig:
    fixture = tmp_path / "facts.yaml"
    fixture.write_text(yaml.safe_dump({"rules": [
        {"contains": "Extract", "text": json.dumps({"facts": ["the widget count is 41"]})}],
        "default": "plain answer"}), encoding="utf-8")
    return ModelConfig.model_validate({"model": f"scripted/{fixture}", **extra})


@asynccontextmanager
async def gateway(*, max_cost_usd: float | None = None, embeddings: bool = False,
                  cache: Path | None = None) -> AsyncIterator[ModelGateway]:
    runtime = ModelRuntime(cache=CacheConfig(enabled=cache is not None, path=cache),
                           max_cost_usd=max_cost_usd)
    gw = ModelGateway(runtime, embeddings=embeddings)
    await gw.start()
    try:
        yield gw
    finally:
        # Closed inside the loop that opened them, before the server goes.
        while _clients:
            await _clients.pop().close()
        await gw.aclose()
        await runtime.aclose()


_clients: list[openai.AsyncOpenAI] = []


def sdk(access: Any, api_key: str | None = None) -> openai.AsyncOpenAI:
    client = openai.AsyncOpenAI(base_url=access.base_url, api_key=api_key or access.api_key,
                                max_retries=0)
    _clients.append(client)
    return client


async def test_json_mode_through_the_openai_sdk(tmp_path: Path) -> None:
    async with gateway() as gw:
        access = gw.grant("arm", "arm|s1|0", 0, rules_model(tmp_path))
        assert access.base_url.startswith("http://127.0.0.1:")
        reply = await sdk(access).chat.completions.create(
            model=access.chat_model, response_format={"type": "json_object"},
            messages=[{"role": "system", "content": "You extract facts."},
                      {"role": "user", "content": [{"type": "text", "text": "Extract: x"}]}])
        assert json.loads(reply.choices[0].message.content or "") == {
            "facts": ["the widget count is 41"]}
        assert reply.choices[0].finish_reason == "stop"
        assert reply.usage is not None and reply.usage.prompt_tokens > 0
        usage = gw.unit_usage("arm|s1|0")
        assert usage is not None and usage.calls == 1 and usage.cost_usd == 0.0
        assert usage.prompt_tokens == reply.usage.prompt_tokens
        assert usage.completion_tokens == reply.usage.completion_tokens
        # Metered as the adapter's own calls in the run's meter too.
        assert gw.runtime.usage()["by_role"]["adapter"]["calls"] == 1


async def test_tool_calls_round_trip() -> None:
    model = ModelConfig.model_validate({"model": "scripted/replay", "options": {"replies": [
        {"tool_calls": [{"name": "remember", "arguments": {"fact": "widgets: 41"}}]},
        {"text": "stored"}]}})
    tools = [{"type": "function", "function": {
        "name": "remember", "description": "store a fact",
        "parameters": {"type": "object", "properties": {"fact": {"type": "string"}}}}}]
    async with gateway() as gw:
        client = sdk(gw.grant("arm", "arm|s1|0", 0, model))
        messages: list[Any] = [{"role": "user", "content": "widgets: 41"}]
        first = await client.chat.completions.create(model="any", messages=messages,
                                                     tools=tools, tool_choice="required")
        choice = first.choices[0]
        assert choice.finish_reason == "tool_calls" and choice.message.content is None
        call = choice.message.tool_calls[0]  # type: ignore[index]
        assert call.function.name == "remember"  # type: ignore[union-attr]
        assert json.loads(call.function.arguments) == {"fact": "widgets: 41"}  # type: ignore[union-attr]
        messages += [choice.message.model_dump(exclude_none=True),
                     {"role": "tool", "tool_call_id": call.id, "content": "ok"}]
        second = await client.chat.completions.create(model="any", messages=messages,
                                                      tools=tools)
        assert second.choices[0].message.content == "stored"


def test_wire_translation_of_json_schema_and_tool_choice() -> None:
    schema = {"type": "object", "properties": {"facts": {"type": "array"}}}
    body = ChatBody.model_validate({
        "model": "m", "messages": [{"role": "developer", "content": "be brief"},
                                   {"role": "user", "content": "hi"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "f",
                                                                   "schema": schema}},
        "tools": [{"type": "function", "function": {"name": "f", "parameters": schema}}],
        "tool_choice": {"type": "function", "function": {"name": "f"}},
        "max_completion_tokens": 50, "stop": "END", "seed": 7})
    request = completion_request(body, repeat=2)
    assert request.response_schema == schema and request.tool_choice == "f"
    assert request.messages[0].role == "system" and request.role == "adapter"
    assert request.repeat == 2 and request.max_tokens == 50 and request.stop == ["END"]
    assert request.temperature == 0.0 and request.seed == 7


async def test_unknown_or_missing_key_is_refused(tmp_path: Path) -> None:
    async with gateway() as gw:
        access = gw.grant("arm", "arm|s1|0", 0, rules_model(tmp_path))
        wrong = sdk(access, api_key="lens-gw-" + "x" * 32)
        with pytest.raises(openai.AuthenticationError) as info:
            await wrong.chat.completions.create(model="m", messages=[
                {"role": "user", "content": "hi"}])
        assert info.value.status_code == 401 and "unknown or missing API key" in str(info.value)
        with pytest.raises(openai.AuthenticationError):
            await wrong.models.list()
        assert gw.unit_usage("arm|s1|0").calls == 0  # type: ignore[union-attr]


async def test_calls_are_attributed_to_their_unit(tmp_path: Path) -> None:
    model = rules_model(tmp_path)
    async with gateway() as gw:
        a = sdk(gw.grant("arm-a", "arm-a|s1|0", 0, model))
        b = sdk(gw.grant("arm-b", "arm-b|s1|1", 1, model))
        for _ in range(3):
            await a.chat.completions.create(model="m", messages=[
                {"role": "user", "content": "Extract"}])
        await b.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        assert gw.unit_usage("arm-a|s1|0").calls == 3  # type: ignore[union-attr]
        assert gw.unit_usage("arm-b|s1|1").calls == 1  # type: ignore[union-attr]
        listed = await a.models.list()
        assert [m.id for m in listed.data] == [model.model]
        # A unit's keys end with it; its usage stays, the other unit's key still works.
        gw.revoke("arm-a|s1|0")
        with pytest.raises(openai.AuthenticationError):
            await a.chat.completions.create(model="m", messages=[
                {"role": "user", "content": "Extract"}])
        await b.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        assert gw.unit_usage("arm-a|s1|0").calls == 3  # type: ignore[union-attr]


async def test_the_cost_cap_stops_calls_with_402(tmp_path: Path) -> None:
    # $1,000,000 per million tokens: the first call alone spends past the $0.01 cap.
    model = rules_model(tmp_path, price_input_per_mtok=1e6, price_output_per_mtok=1e6)
    async with gateway(max_cost_usd=0.01) as gw:
        client = sdk(gw.grant("arm", "arm|s1|0", 0, model))
        await client.chat.completions.create(model="m", messages=[
            {"role": "user", "content": "Extract"}])
        with pytest.raises(openai.APIStatusError) as info:
            await client.chat.completions.create(model="m", messages=[
                {"role": "user", "content": "Extract again"}])
        assert info.value.status_code == 402 and "cost limit reached" in str(info.value)
        usage = gw.unit_usage("arm|s1|0")
        assert usage is not None and usage.calls == 1 and usage.cost_usd > 0.01


async def test_what_lens_cannot_serve_is_refused_by_name(tmp_path: Path) -> None:
    async with gateway() as gw:
        client = sdk(gw.grant("arm", "arm|s1|0", 0, rules_model(tmp_path)))
        with pytest.raises(openai.BadRequestError, match="streaming is not supported"):
            await client.chat.completions.create(model="m", stream=True, messages=[
                {"role": "user", "content": "hi"}])
        with pytest.raises(openai.BadRequestError, match="n=1"):
            await client.chat.completions.create(model="m", n=2, messages=[
                {"role": "user", "content": "hi"}])
        with pytest.raises(openai.BadRequestError, match="only text parts"):
            await client.chat.completions.create(model="m", messages=[
                {"role": "user", "content": [{"type": "image_url",
                                              "image_url": {"url": "data:,"}}]}])
        with pytest.raises(openai.APIStatusError) as info:
            await client.embeddings.create(model="e", input=["a"])
        assert info.value.status_code == 501 and install_hint("vector") in str(info.value)


async def test_a_second_run_is_served_from_the_model_cache(tmp_path: Path) -> None:
    """A hosted model behind the gateway: the same request in a later run (or a resumed one)
    is answered from lens's model cache, metered as a cache hit, and never reaches the model."""
    with FakeOpenAI() as fake:
        await _twice(tmp_path, fake)
        assert fake.count == 1


async def _twice(tmp_path: Path, fake: FakeOpenAI) -> None:
    model = ModelConfig.model_validate({"model": "openai/fake-model", "base_url": fake.base_url})
    for run in range(2):
        async with gateway(cache=tmp_path / "cache.sqlite") as gw:
            client = sdk(gw.grant("arm", "arm|s1|0", 0, model))
            reply = await client.chat.completions.create(model="m", messages=[
                {"role": "user", "content": "Extract the facts"}])
            assert reply.choices[0].message.content
            usage = gw.unit_usage("arm|s1|0")
            assert usage is not None and usage.cache_hits == run


@vector
async def test_embeddings_with_the_local_model(tmp_path: Path) -> None:
    async with gateway(embeddings=True) as gw:
        access = gw.grant("arm", "arm|s1|0", 0, rules_model(tmp_path))
        assert access.embedding_model and access.embedding_dim == 384
        client = sdk(access)
        # The SDK asks for base64 by default and decodes it; ask for floats too.
        packed = await client.embeddings.create(model=access.embedding_model,
                                                input=["widgets rose", "cats"])
        plain = await client.embeddings.create(model=access.embedding_model,
                                               input="widgets rose", encoding_format="float")
        assert [len(d.embedding) for d in packed.data] == [384, 384]
        assert packed.data[0].embedding == pytest.approx(plain.data[0].embedding, abs=1e-6)
        usage = gw.unit_usage("arm|s1|0")
        assert usage is not None and usage.calls == 2 and usage.prompt_tokens > 0


async def test_scripted_rules_answer_by_the_response_schema_asked_for(tmp_path: Path) -> None:
    """A memory system's structured-output steps, scripted: a rule with ``schema`` answers only
    requests whose JSON schema has that title."""
    fixture = tmp_path / "steps.yaml"
    fixture.write_text(yaml.safe_dump({"rules": [
        {"schema": "Entities", "text": '{"entities": ["Plant 7"]}'},
        {"contains": "hello", "text": "hi"}], "default": "{}"}), encoding="utf-8")
    schema = {"title": "Entities", "type": "object",
              "properties": {"entities": {"type": "array"}}}
    async with gateway() as gw:
        client = sdk(gw.grant("arm", "arm|s1|0", 0,
                              ModelConfig.model_validate({"model": f"scripted/{fixture}"})))
        asked = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hello"}],
            response_format={"type": "json_schema",
                             "json_schema": {"name": "Entities", "schema": schema}})
        plain = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hello"}])
        other = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "bye"}])
    assert asked.choices[0].message.content == '{"entities": ["Plant 7"]}'
    assert plain.choices[0].message.content == "hi"
    assert other.choices[0].message.content == "{}"


async def test_a_body_that_is_not_a_chat_request_gets_400_naming_the_problem(tmp_path: Path
                                                                            ) -> None:
    import aiohttp

    async with gateway() as gw:
        access = gw.grant("arm", "arm|s1|0", 0, rules_model(tmp_path))
        headers = {"Authorization": f"Bearer {access.api_key}"}
        url = f"{access.base_url}/chat/completions"
        async with aiohttp.ClientSession(headers=headers) as session:
            async with session.post(url, data=b"{not json") as reply:
                assert reply.status == 400
                assert "invalid JSON" in (await reply.json())["error"]["message"]
            async with session.post(url, json={"model": "m", "messages": []}) as reply:
                assert reply.status == 400
                assert "messages" in (await reply.json())["error"]["message"]
            async with session.post(url, json={"messages": [{"role": "robot",
                                                             "content": "x"}]}) as reply:
                assert reply.status == 400
                assert "messages[0].role" in (await reply.json())["error"]["message"]
        assert gw.unit_usage("arm|s1|0").calls == 0  # type: ignore[union-attr]


async def test_the_models_concurrency_limit_holds_for_gateway_calls() -> None:
    """Calls through the gateway wait for the endpoint's limiter like lens's own calls: with
    max_concurrency 1, three concurrent calls of 0.2 s each take at least 0.6 s."""
    import time

    import anyio

    model = ModelConfig.model_validate({"model": "scripted/replay", "max_concurrency": 1,
                                        "options": {"delay_s": 0.2,
                                                    "replies": [{"text": "ok"}]}})
    async with gateway() as gw:
        clients = [sdk(gw.grant("arm", f"arm|s{i}|0", 0, model)) for i in range(3)]
        started = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for c in clients:
                tg.start_soon(lambda c=c: c.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "x"}]))
        assert time.perf_counter() - started >= 0.6
