"""The aiohttp transport's body, assembled from messages and tool specs encoded once each, is
byte for byte the JSON of the request's parameters."""

from __future__ import annotations

from typing import Any

import pytest

from lens.memory.adapter import CapabilityManifest
from lens.models.base import CompletionRequest, Message, ToolCall
from lens.models.json_http import dumps
from lens.models.openai_backend import FragmentCache, build_params, openai_message, request_body
from lens.runner.agent import tool_specs

TOOLS = tool_specs(CapabilityManifest(max_results=4))
MESSAGES = [
    Message(role="system", content='sys ü \u2028 "q" \\ \x00'),
    Message(role="user", content="café 😀"),
    Message(role="assistant", content="",
            tool_calls=[ToolCall(id="c", name="memory_search", arguments='{"query": "ü"}')]),
    Message(role="tool", content="x" * 3000, tool_call_id="c", name="memory_search"),
]


@pytest.mark.parametrize("choice", ["auto", "required", "none", "memory_search"])
@pytest.mark.parametrize("extra", [None, {}, {"top_k": 5, "temperature": 0.1},
                                   {"messages": [1]}, {"tools": []}, {1: "a", "b": 2},
                                   {"x": float("nan")}])
@pytest.mark.parametrize("max_tokens", [None, 64])
def test_body_is_the_parameters_json(choice: str, extra: dict[Any, Any] | None,
                                     max_tokens: int | None) -> None:
    cache = FragmentCache(max_bytes=2000, max_entries=5)
    request = CompletionRequest(messages=MESSAGES, tools=TOOLS, tool_choice=choice,
                                max_tokens=max_tokens, seed=3, stop=["\n"], top_p=0.5,
                                response_schema={"a": 1.5e-7})
    expected = dumps(build_params(request, "m", 100, "max_completion_tokens") | (extra or {}))
    for _ in range(2):  # encoded, then from the cache
        assert request_body(request, "m", 100, "max_completion_tokens", extra,
                            cache) == expected
    assert cache._bytes <= 2000 and len(cache._entries) <= 5


def test_growing_conversation_reuses_and_bounds() -> None:
    cache = FragmentCache(max_bytes=10_000, max_entries=100)
    messages: list[Message] = []
    for i in range(50):
        messages.append(Message(role="user", content=f"turn {i} " + "y" * 300))
        request = CompletionRequest(messages=list(messages), tools=TOOLS)
        assert request_body(request, "m", None, "max_tokens", None, cache) == dumps(
            build_params(request, "m", None, "max_tokens"))
    assert cache._bytes <= 10_000


def test_unencodable_text_is_refused_like_the_whole_body() -> None:
    request = CompletionRequest(messages=[Message(role="user", content="\ud800")])
    with pytest.raises(UnicodeEncodeError):
        dumps(build_params(request, "m", None, "max_tokens"))
    with pytest.raises(UnicodeEncodeError):
        request_body(request, "m", None, "max_tokens", None, FragmentCache())


def test_finished_conversations_leave_the_cache() -> None:
    """Entries are held weakly: a run's history does not pile up in the cache, and a new
    message that takes a freed one's id is encoded afresh, never answered with the old JSON."""
    cache = FragmentCache()
    for i in range(2000):
        message = Message(role="user", content=f"question {i}")
        assert cache.encoded(message) == dumps(openai_message(message))
        del message  # its id is free for the next one
    live = Message(role="user", content="still in flight")
    cache.encoded(live)
    assert len(cache._entries) <= 256
    assert any(ref() is live for ref, _ in cache._entries.values())
