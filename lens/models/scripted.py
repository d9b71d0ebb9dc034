"""A deterministic, model-free backend.

``scripted/policy`` runs a built-in retrieval policy (search with the question, retrieve the top
hits, answer with their most relevant sentences and cite them; the current date the agent is
told is kept out of its search): a no-LLM baseline agent and the model of tests and CI.
``scripted/replay`` (or ``scripted/<fixture.json|yaml>``) replays replies turn by turn: reply
*i* answers the *i*-th assistant turn of a conversation, so concurrent sessions never interfere.
A fixture that is a mapping ``{rules: [{contains: TEXT, text: REPLY}, ...], default: REPLY}``
answers by content instead: the first rule whose ``contains`` occurs in the last user message
gives the reply (a judge with known habits, for tests). A rule may name ``schema: TITLE``
instead of (or beside) ``contains``: it then answers only requests whose response schema has
that title (a structured-output step of a memory system, for tests).

Token counts are estimates (four characters a token) so that budgets still bite.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Required, TypedDict, cast

import anyio

from lens.core.errors import ConfigError, unknown_options
from lens.core.jsonguard import JsonRefused, loads_guarded
from lens.core.tokens import estimate_tokens
from lens.core.yamlguard import YamlRefused, load_yaml
from lens.data.config import ModelConfig
from lens.data.prompts import CURRENT_DATE_PREFIX
from lens.models.base import Completion, CompletionRequest, Message, ToolCall, Usage

_WORD = re.compile(r"[a-z0-9][a-z0-9_.%-]*")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "so",
        "that",
        "the",
        "their",
        "there",
        "these",
        "this",
        "to",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "any",
        "based",
        "far",
        "logs",
        "now",
        "over",
        "should",
        "than",
        "then",
        "they",
        "we",
        "you",
        "your",
    ]
)


def _terms(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1}


class ScriptedClient:
    provider = "scripted"
    # Deterministic, free and instant: cached copies would only fill the user's cache, and
    # there is no remote call to time out.
    cache_replies = False
    wall_clock_timeout = False

    def __init__(self, name: str, options: dict[str, Any] | None = None) -> None:
        opts = dict(options or {})
        self.model = name
        self.delay_s = float(opts.pop("delay_s", 0.0))
        self.retrieve_k = int(opts.pop("retrieve_k", 2))
        self.answer_sentences = int(opts.pop("answer_sentences", 3))
        self.search_limit = opts.pop("search_limit", None)
        replies = opts.pop("replies", None)
        if opts:
            raise ConfigError("scripted model: " + unknown_options(
                opts, ["delay_s", "retrieve_k", "answer_sentences", "search_limit", "replies"]))
        self.replies: list[_Reply] | None = None
        self.rules: list[tuple[str, str | None, str]] | None = None
        self.default_reply = ""
        if name not in ("policy", "replay"):
            replies = _load_fixture(Path(name))
        if isinstance(replies, dict) and "rules" in replies:
            self.rules = _rules(name, replies)
            self.default_reply = str(replies.get("default", ""))
        elif name != "policy":
            if not isinstance(replies, list):
                raise ConfigError(
                    f"scripted/{name}: needs a list of replies (option 'replies' or a fixture file)"
                )
            self.replies = replies

    @classmethod
    def from_config(cls, config: ModelConfig) -> ScriptedClient:
        return cls(config.name, config.options)

    async def complete(self, request: CompletionRequest) -> Completion:
        started = time.perf_counter()
        if self.delay_s:
            await anyio.sleep(self.delay_s)
        if self.rules is not None:
            last = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
            title = (request.response_schema or {}).get("title")
            text = next((r for c, t, r in self.rules
                         if c in last and (t is None or t == title)), self.default_reply)
            calls: list[ToolCall] = []
        elif self.replies is not None:
            text, calls = self._replay(request)
        else:
            text, calls = self._policy(request)
        prompt = sum(estimate_tokens(m.content) for m in request.messages)
        completion = estimate_tokens(text) + sum(estimate_tokens(c.arguments) for c in calls)
        return Completion(
            text=text,
            tool_calls=calls,
            usage=Usage(prompt_tokens=prompt, completion_tokens=completion),
            finish_reason="tool_calls" if calls else "stop",
            provider=self.provider,
            model=self.model,
            latency_s=time.perf_counter() - started,
            cost_usd=0.0,
        )

    async def aclose(self) -> None:
        return None

    # -- replay -------------------------------------------------------------------------------
    def _replay(self, request: CompletionRequest) -> tuple[str, list[ToolCall]]:
        assert self.replies is not None
        turn = sum(1 for m in request.messages if m.role == "assistant")
        if turn >= len(self.replies):
            return "", []
        reply = self.replies[turn]
        calls = []
        for i, c in enumerate(reply.get("tool_calls", [])):
            args = c.get("arguments", {})
            calls.append(
                ToolCall(
                    id=f"call_{turn}_{i}",
                    name=c["name"],
                    arguments=args if isinstance(args, str) else json.dumps(args),
                )
            )
        return str(reply.get("text", "")), calls

    # -- retrieval policy ---------------------------------------------------------------------
    def _policy(self, request: CompletionRequest) -> tuple[str, list[ToolCall]]:
        tools = {t.name for t in request.tools}
        # The date line is not part of what to look for: the policy searches with the question
        # alone, so its retrieval is the same with or without "now".
        _, question = _split_date(
            next((m.content for m in request.messages if m.role == "user"), ""))
        tool_msgs = [m for m in request.messages if m.role == "tool"]
        turn = sum(1 for m in request.messages if m.role == "assistant")
        if not tool_msgs and "memory_search" in tools:
            args: dict[str, str | int] = {"query": question}
            if self.search_limit:
                args["limit"] = int(self.search_limit)
            return "", [
                ToolCall(id=f"call_{turn}_0", name="memory_search", arguments=json.dumps(args))
            ]
        hits = _search_hits(tool_msgs)
        fetched = {d["ref_id"]: d["text"] for d in _documents(tool_msgs)}
        wanted = [h["ref_id"] for h in hits if h["ref_id"] not in fetched][: self.retrieve_k]
        if wanted and len(fetched) < self.retrieve_k and "memory_retrieve" in tools:
            return "", [
                ToolCall(
                    id=f"call_{turn}_{i}",
                    name="memory_retrieve",
                    arguments=json.dumps({"ref_id": ref}),
                )
                for i, ref in enumerate(wanted)
            ]
        sources = fetched or {h["ref_id"]: h.get("text", "") for h in hits}
        return self._answer(question, sources), []

    def _answer(self, question: str, sources: dict[str, str]) -> str:
        q_terms = _terms(question)
        scored: list[tuple[float, int, str, str]] = []
        order = 0
        for ref, text in sources.items():
            for sentence in _SENTENCE.split(text):
                s = sentence.strip(" -#*|\t")
                if len(s) < 12:
                    continue
                overlap = len(q_terms & _terms(s))
                if overlap:
                    scored.append((overlap, -order, s, ref))
                order += 1
        if not scored:
            # Nothing shares a word with the question: report the leading lines of what was
            # found rather than nothing, as a keyword-only agent would.
            for ref, text in sources.items():
                firsts = [x.strip(" -#*|\t") for x in _SENTENCE.split(text)]
                firsts = [x for x in firsts if len(x) >= 12][:1]
                scored.extend((0, -order, x, ref) for x in firsts)
        if not scored:
            return "I could not find anything in memory that answers this question."
        scored.sort(reverse=True)
        lines = [f"{s} [{ref}]" for _, _, s, ref in scored[: self.answer_sentences]]
        return "Based on the retrieved records:\n" + "\n".join(lines)


def _split_date(message: str) -> tuple[str | None, str]:
    """(date, question) of the agent's first user message: the "Current date:" line the agent
    puts before the question is kept out of the search query."""
    if message.startswith(CURRENT_DATE_PREFIX):
        first, _, rest = message.partition("\n")
        return first.removeprefix(CURRENT_DATE_PREFIX).strip(), rest.lstrip("\n")
    return None, message


def _tool_json(m: Message) -> Any:
    try:
        return json.loads(m.content)
    except (json.JSONDecodeError, TypeError):
        return None


class _ReplyCall(TypedDict, total=False):
    name: Required[str]
    arguments: object  # a JSON object, or its text


class _Reply(TypedDict, total=False):
    """One turn of a replay fixture: the model's text and the tool calls it makes."""

    text: str
    tool_calls: list[_ReplyCall]


class _Hit(TypedDict, total=False):
    """A search result as the agent's ``memory_search`` tool message lists it."""

    ref_id: Required[str]
    text: str


class _Fetched(TypedDict):
    """A document as the agent's ``memory_retrieve`` tool message holds it."""

    ref_id: str
    text: str


def _search_hits(tool_msgs: list[Message]) -> list[_Hit]:
    hits: list[_Hit] = []
    for m in tool_msgs:
        data = _tool_json(m)
        if isinstance(data, dict) and isinstance(data.get("results"), list):
            # The agent's own JSON: an object with a ref_id is one of its hits.
            hits.extend(cast(_Hit, h) for h in data["results"]
                        if isinstance(h, dict) and "ref_id" in h)
    return hits


def _documents(tool_msgs: list[Message]) -> list[_Fetched]:
    docs: list[_Fetched] = []
    for m in tool_msgs:
        data = _tool_json(m)
        if isinstance(data, dict) and "ref_id" in data and "text" in data:
            docs.append(cast(_Fetched, data))  # the agent's own JSON of a document
    return docs


def _rules(name: str, doc: Mapping[str, object]) -> list[tuple[str, str | None, str]]:
    rules = doc.get("rules")
    ok = isinstance(rules, list) and all(
        isinstance(r, dict) and "text" in r
        and isinstance(r.get("contains", ""), str) and isinstance(r.get("schema", ""), str)
        and ("contains" in r or "schema" in r)
        for r in rules)
    if not ok or not isinstance(rules, list):
        raise ConfigError(f"scripted/{name}: 'rules' must be a list of {{contains: TEXT "
                          "and/or schema: TITLE, text: REPLY}")
    return [(r.get("contains", ""), r.get("schema"), str(r["text"])) for r in rules]


def _load_fixture(path: Path) -> Any:
    if not path.is_file():
        raise ConfigError(
            f"scripted/{path}: fixture file not found (use scripted/policy for the "
            "built-in retrieval policy)"
        )
    text = path.read_text(encoding="utf-8")
    try:
        return (loads_guarded(text, what=f"scripted/{path}") if path.suffix == ".json"
                else load_yaml(text))
    except (JsonRefused, YamlRefused) as exc:
        raise ConfigError(f"scripted/{path}: not readable: {exc}") from None
