"""Chat bodies joined from cached pieces are the request's JSON, and each piece is encoded
once however often the conversation is re-sent."""

from __future__ import annotations

import json

import pydantic
import pytest

from lens.config import ModelConfig
from lens.models import chat_body
from lens.models.base import CompletionRequest, Message, ToolCall
from lens.models.chat_body import ChatBodyEncoder
from lens.models.json_http import dumps
from lens.models.openai_backend import OpenAIClient, build_params
from tests.perf.test_perf_openai_passthrough import SEARCH, conversation


def full(request: CompletionRequest, **extra: object) -> dict[str, object]:
    return build_params(request, "m", None, "max_tokens") | extra


def client(**options: object) -> OpenAIClient:
    return OpenAIClient(ModelConfig(model="openai/m", base_url="http://127.0.0.1:9/v1",
                                    api_key_env="LENS_TEST_CHAT_BODY_KEY", options=options))


@pytest.mark.parametrize("tool_choice", ["auto", "required", "none", "memory_search"])
def test_the_joined_body_is_the_whole_request(tool_choice: str) -> None:
    request = conversation().model_copy(update={"tool_choice": tool_choice})
    body = client()._body(request)
    assert json.loads(body) == full(request)
    # Compact UTF-8, as the plain encoder sends it: the same bytes in another key order.
    assert "café".encode() in body
    assert sorted(body) == sorted(dumps(full(request)))


def test_extra_body_merges_and_may_replace_the_conversation() -> None:
    request = conversation()
    merged = client(extra_body={"top_k": 5, "temperature": 0.1})._body(request)
    assert json.loads(merged) == full(request, top_k=5, temperature=0.1)
    own = [{"role": "user", "content": "given"}]
    replaced = client(extra_body={"messages": own})._body(request)
    assert json.loads(replaced) == full(request, messages=own)


def test_each_piece_is_encoded_once_as_the_conversation_grows(
        monkeypatch: pytest.MonkeyPatch) -> None:
    encoded: list[object] = []
    real = chat_body.dumps

    def counting(obj: object) -> bytes:
        encoded.append(obj)
        return real(obj)

    monkeypatch.setattr(chat_body, "dumps", counting)
    encoder = ChatBodyEncoder()
    messages = [Message(role="system", content="s"), Message(role="user", content="q")]
    tools = [SEARCH]
    for turn in range(4):
        params = {"model": "m", "turn": turn}
        body = encoder.body(params, messages, tools)
        assert json.loads(body) == {**params, "messages": [
            chat_body.openai_message(m) for m in messages],
            "tools": chat_body.openai_tools(tools)}
        call = ToolCall(id=f"c{turn}", name="memory_search", arguments="{}")
        messages = [*messages, Message(role="assistant", tool_calls=[call]),
                    Message(role="tool", content=f"r{turn}", tool_call_id=f"c{turn}")]
    # Per turn: its params; once each: every message and the tool list (a copy of the list
    # with the same specs counts as the same tools).
    pieces = [e for e in encoded if not (isinstance(e, dict) and "turn" in e)]
    assert len(pieces) == 2 + 2 * 3 + 1


def test_an_evicted_piece_is_encoded_again_correctly() -> None:
    piece = len(dumps({"role": "user", "content": "m0 ü"}))
    encoder = ChatBodyEncoder(max_bytes=4 * piece)
    messages = [Message(role="user", content=f"m{i} ü") for i in range(10)]
    for _ in range(3):
        body = encoder.body({"model": "m"}, messages, None)
        assert json.loads(body) == {"model": "m", "messages": [
            {"role": "user", "content": f"m{i} ü"} for i in range(10)]}
    assert len(encoder._messages) == 4
    assert encoder._message_bytes == sum(len(d) for _, d in encoder._messages.values())


def test_empty_params_and_no_messages_still_make_an_object() -> None:
    assert json.loads(ChatBodyEncoder().body({}, [], None)) == {"messages": []}


def test_messages_and_tools_cannot_change_under_a_cached_piece() -> None:
    m = Message(role="user", content="a")
    with pytest.raises(pydantic.ValidationError):
        m.content = "b"  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError):
        SEARCH.name = "other"  # type: ignore[misc]
