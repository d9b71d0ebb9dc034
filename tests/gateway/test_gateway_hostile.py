"""Hostile request bodies against the real gateway on loopback: bodies nested 100,000 deep,
over the size limit, or not UTF-8 get 400/413 with an OpenAI-shaped error naming the problem,
never a 500, and cost the unit nothing."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

import lens.runner.gateway.server as server
from tests.gateway.test_gateway_http import gateway, rules_model

pytestmark = pytest.mark.anyio

DEEP = b'{"model": "m", "messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"


@pytest.mark.parametrize("endpoint", ["chat/completions", "embeddings"])
async def test_hostile_bodies_get_400_or_413_never_500(
        tmp_path: Path, endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # A small limit keeps the oversized body small; the server reads its limit when it starts.
    monkeypatch.setattr(server, "MAX_BODY_BYTES", 256 * 1024)
    async with gateway(embeddings=endpoint == "embeddings") as gw:
        if endpoint == "embeddings" and gw.embeddings is None:
            pytest.skip("needs the vector extra for the gateway's embeddings")
        access = gw.grant("arm", "arm|s1|0", 0, rules_model(tmp_path))
        url = f"{access.base_url}/{endpoint}"
        cases = [
            (DEEP, 400, "nested more than 64 levels"),
            (b'{"input": "' + b"x" * 300_000 + b'"}', 413, "limit"),
            (b'{"model": "m", "input": "\xff\xfe"}', 400, "not UTF-8"),
            (b'{"a": [' * 60 + b"1" + b"]}" * 60, 400, ""),  # within the depth: shape refused
        ]
        headers = {"Authorization": f"Bearer {access.api_key}",
                   "Content-Type": "application/json"}
        async with aiohttp.ClientSession(headers=headers) as session:
            for body, status, words in cases:
                async with session.post(url, data=body) as reply:
                    assert reply.status == status, (body[:40], await reply.text())
                    error = (await reply.json())["error"]
                    assert words in error["message"] and error["type"] == "invalid_request_error"
            # The gateway still serves a good call after them.
            if endpoint == "chat/completions":
                async with session.post(url, json={
                        "model": access.chat_model,
                        "messages": [{"role": "user", "content": "hi"}]}) as reply:
                    assert reply.status == 200, await reply.text()
        usage = gw.unit_usage("arm|s1|0")
        assert usage is not None and usage.calls == (1 if endpoint == "chat/completions"
                                                        else 0)
