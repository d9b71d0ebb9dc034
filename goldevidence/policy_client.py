"""Deterministic stand-in answerers for lens runs without a language model.

``SelectionPolicyClient`` speaks the lens ModelClient protocol: it searches the tag the question
names, picks one returned line by a fixed policy and answers with the JSON the scenario asks for.
It measures the harness (memory, candidate sets, grading), not a model: ``first`` mimics a reader
that trusts whatever is listed first, ``latest_step`` one that reads steps, ``random`` a reader
that guesses. Results of these policies must never be reported as a model's.
"""

from __future__ import annotations

import json
import re
import time
from typing import Literal, Required, TypedDict

from goldevidence.grammar import KEY_RE, UID_RE, parse_log_line
from goldevidence.seeding import rng_for
from lens.models import Completion, CompletionRequest, ToolCall, Usage
from lens.plugin_api import estimate_tokens

Policy = Literal["first", "latest_step", "random"]


class _Hit(TypedDict, total=False):
    """A result of lens's ``memory_search`` tool, as its tool message lists it."""

    ref_id: Required[str]
    text: str


class SelectionPolicyClient:
    provider: str = "goldevidence-policy"

    def __init__(self, policy: Policy = "latest_step", seed: int = 0) -> None:
        self.policy = policy
        self.model: str = policy
        self.seed = seed

    async def aclose(self) -> None:
        return None

    async def complete(self, request: CompletionRequest) -> Completion:
        started = time.perf_counter()
        question = next((m.content for m in request.messages if m.role == "user"), "")
        tool_msgs = [m for m in request.messages if m.role == "tool"]
        calls: list[ToolCall] = []
        text = ""
        if not tool_msgs:
            keys = KEY_RE.findall(question)
            query = keys[0] if keys else question[:200]
            calls = [ToolCall(id="call_0", name="memory_search",
                              arguments=json.dumps({"query": query}))]
        else:
            text = self._answer(question, tool_msgs[-1].content)
        prompt = sum(estimate_tokens(m.content) for m in request.messages)
        return Completion(text=text, tool_calls=calls,
                          usage=Usage(prompt_tokens=prompt,
                                      completion_tokens=estimate_tokens(text) + 8),
                          finish_reason="tool_calls" if calls else "stop",
                          provider=self.provider, model=self.model,
                          latency_s=time.perf_counter() - started, cost_usd=0.0)

    def _answer(self, question: str, payload: str) -> str:
        try:
            hits: list[_Hit] = json.loads(payload).get("results", [])
        except (json.JSONDecodeError, AttributeError):
            hits = []
        parsed = [(h, parse_log_line(str(h.get("text", "")).splitlines()[0] if h.get("text")
                                     else "")) for h in hits]
        found = [(h, e) for h, e in parsed if e is not None]
        if not found:
            return json.dumps({"value": None, "support_ids": []})
        if self.policy == "first":
            h, e = found[0]
        elif self.policy == "random":
            h, e = rng_for("goldevidence.policy", self.seed, question, len(found)).choice(found)
        else:
            h, e = max(found, key=lambda x: x[1].step)
        value = e.value if e.op == "SET" else None
        value = _derive(question, value)
        ids = UID_RE.findall(str(h.get("text", "")))[:1]
        return json.dumps({"value": value, "support_ids": ids}) + f" [{h['ref_id']}]"


def _derive(question: str, value: str | None) -> str | None:
    if value is None:
        return None
    q = question.lower()
    if "color prefix" in q:
        return value.split("-", 1)[0]
    if "parity" in q:
        return ("even" if int(value) % 2 == 0 else "odd") if re.fullmatch(r"-?\d+", value) \
            else None
    if "active member count" in q:
        return str(len([p for p in value.split(",") if p]))
    return value
