"""Rendering, constraints and parsing of the local backend, without loading a model."""

from __future__ import annotations

import itertools
import json

import pytest

from lens.models.base import CompletionRequest, Message, ToolCall, ToolSpec
from lens.models.local_prompt import (
    action_schema,
    parse_action,
    render_prompt,
    render_tool_result,
    seen_refs,
)
from tests.support.extras import requires_extra

SEARCH = ToolSpec(name="memory_search", description="Search the memory.", parameters={
    "type": "object",
    "properties": {"query": {"type": "string"},
                   "limit": {"type": "integer", "minimum": 1, "maximum": 5},
                   "start_date": {"type": "string"}},
    "required": ["query"], "additionalProperties": False})
RETRIEVE = ToolSpec(name="memory_retrieve", description="Fetch a record.", parameters={
    "type": "object", "properties": {"ref_id": {"type": "string"}}, "required": ["ref_id"]})
CAPS = ToolSpec(name="memory_capabilities", description="Describe.",
                parameters={"type": "object", "properties": {}})
RESULTS = json.dumps({"results": [
    {"ref_id": "ep_1", "text": "p99   latency\n 215 ms", "score": 1.5,
     "metadata": {"timestamp": "2024-09-21T00:00:00"}},
    {"ref_id": "ep_2", "text": "cache TTL cut", "score": 1.0, "metadata": {}},
]})


def conversation() -> list[Message]:
    return [
        Message(role="system", content="You answer from memory."),
        Message(role="user", content="What is the p99?"),
        Message(role="assistant", content="", tool_calls=[
            ToolCall(id="c0", name="memory_search", arguments='{"query": "p99"}')]),
        Message(role="tool", content=RESULTS, tool_call_id="c0", name="memory_search"),
        Message(role="assistant", content="", tool_calls=[
            ToolCall(id="c1", name="memory_retrieve", arguments='{"ref_id": "ep_1"}')]),
        Message(role="tool", content=json.dumps({"ref_id": "ep_1", "text": "full text",
                                                 "metadata": {"timestamp": "t1"}}),
                tool_call_id="c1", name="memory_retrieve"),
    ]


def req(messages: list[Message], **kw: object) -> CompletionRequest:
    return CompletionRequest(messages=messages, tools=[SEARCH, RETRIEVE, CAPS], **kw)


def test_rendering_is_prefix_stable_across_turns() -> None:
    msgs = conversation()
    renders = [render_prompt(req(msgs[:n])) for n in range(2, len(msgs) + 1)]
    for earlier, later in itertools.pairwise(renders):
        # Everything but the open assistant turn of the earlier prompt is reused verbatim.
        stem = earlier.removesuffix("<|im_start|>assistant\n")
        assert later.startswith(stem)
    assert render_prompt(req(msgs)) == render_prompt(req(msgs))


def test_prompt_shows_tools_rules_and_compact_results() -> None:
    text = render_prompt(req(conversation()))
    assert text.startswith("<|im_start|>system\nYou answer from memory.")
    assert ("- memory_search(query: string, limit?: integer, start_date?: string) - "
            "Search the memory.") in text
    assert "- memory_capabilities() - Describe." in text
    assert '{"tool": "<tool name>"' in text
    narrow = render_prompt(req(conversation()), optional_args=False)
    assert "- memory_search(query: string) - Search the memory." in narrow
    assert "[ep_1] 2024-09-21T00:00:00: p99 latency 215 ms" in text
    assert "[ep_2] cache TTL cut" in text
    assert "record [ep_1] t1\nfull text" in text
    assert '{"tool": "memory_search", "arguments": {"query": "p99"}}' in text
    assert text.endswith("<|im_start|>assistant\n")


def test_tool_result_rendering_of_errors_and_other_payloads() -> None:
    assert render_tool_result("memory_retrieve", '{"error": "no record"}') == (
        "Result of memory_retrieve: error: no record")
    assert render_tool_result("memory_search", '{"results": []}').endswith("no matching records.")
    assert render_tool_result("x", "plain").endswith("\nplain")


def test_action_schema_alternatives() -> None:
    msgs = conversation()
    schema = action_schema(req(msgs))
    alts = schema["oneOf"]
    tools = [a["properties"]["tool"]["const"] for a in alts if "tool" in a["properties"]]
    assert tools == ["memory_search", "memory_retrieve", "memory_capabilities"]
    answer = alts[-1]
    assert answer["properties"]["sources"]["items"]["enum"] == ["ep_1", "ep_2"]
    # Bounded small integer ranges become enums the grammar can enforce.
    search_args = alts[0]["properties"]["arguments"]["properties"]
    assert search_args["limit"] == {"enum": [1, 2, 3, 4, 5]}
    # Only required arguments when optional ones are off.
    narrow = action_schema(req(msgs), optional_args=False)["oneOf"][0]
    assert list(narrow["properties"]["arguments"]["properties"]) == ["query"]


@pytest.mark.parametrize(("kw", "expect_tools", "expect_answer"), [
    ({"tool_choice": "required"}, 3, False),
    ({"tool_choice": "none"}, 0, True),
    ({"tool_choice": "memory_retrieve"}, 1, False),
])
def test_tool_choice_shapes_the_schema(kw: dict[str, str], expect_tools: int,
                                       expect_answer: bool) -> None:
    schema = action_schema(req(conversation(), **kw))
    alts = schema.get("oneOf", [schema])
    assert sum("tool" in a["properties"] for a in alts) == expect_tools
    assert any("answer" in a["properties"] for a in alts) == expect_answer


def test_must_call_and_answer_only() -> None:
    msgs = conversation()[:2]
    must = action_schema(req(msgs), must_call=True)["oneOf"]
    assert all("tool" in a["properties"] for a in must)
    only = action_schema(req(msgs), answer_only=True)
    assert "answer" in only["properties"] and "sources" not in only["properties"]


def test_seen_refs_from_search_and_retrieve() -> None:
    assert seen_refs(conversation()) == ["ep_1", "ep_2"]


def test_parse_tool_call_answer_and_cut_off_output() -> None:
    text, calls = parse_action('{"tool": "memory_search", "arguments": {"query": "x"}}', 3)
    assert text == "" and calls[0].name == "memory_search" and calls[0].id == "call_3_0"
    assert calls[0].parsed_arguments() == {"query": "x"}
    text, calls = parse_action('{"sources": ["ep_1"], "answer": "It is 215 ms."}', 1)
    assert (text, calls) == ("It is 215 ms. [ep_1]", [])
    # Cited inline already: not repeated.
    text, _ = parse_action('{"sources": ["ep_1"], "answer": "215 ms [ep_1]."}', 1)
    assert text == "215 ms [ep_1]."
    # Cut off by max_tokens: the answer so far is kept with its sources; a half tool call is not.
    text, calls = parse_action('{"sources": ["ep_2"], "answer": "The TTL was cut fr', 1)
    assert text == "The TTL was cut fr [ep_2]" and calls == []
    assert parse_action('{"tool": "memory_search", "argu', 1) == ("", [])


@requires_extra("local")
def test_grammar_compiles_for_the_action_schema() -> None:
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    gbnf = json_schema_to_gbnf(json.dumps(action_schema(req(conversation()))))
    assert '"\\"memory_search\\""' in gbnf and '"\\"ep_1\\""' in gbnf


def test_ground_refs_limits_ref_ids_to_records_seen() -> None:
    before = action_schema(req(conversation()[:2]), ground_refs=True)["oneOf"]
    names = [a["properties"]["tool"]["const"] for a in before if "tool" in a["properties"]]
    assert names == ["memory_search", "memory_capabilities"]  # nothing to retrieve yet
    after = action_schema(req(conversation()), ground_refs=True)["oneOf"]
    retrieve = next(a for a in after if a["properties"].get("tool", {}).get("const")
                    == "memory_retrieve")
    assert retrieve["properties"]["arguments"]["properties"]["ref_id"] == {
        "enum": ["ep_1", "ep_2"]}
