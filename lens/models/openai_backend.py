"""The ``openai`` backend: OpenAI or any OpenAI-compatible ``base_url`` (vLLM, llama.cpp server,
Ollama, …). Retries are the stack's, so the SDK's own are off.

Two transports send the same JSON body: ``aiohttp`` (the default) posts it through a pooled
aiohttp session and parses the reply with one ``json.loads``; ``sdk`` goes through
``AsyncOpenAI``, for servers that need its quirks. Replies are capped in size
(``options.max_response_bytes``, 32 MiB by default) on the aiohttp transport.

A key goes only to the provider it belongs to: ``OPENAI_API_KEY`` is read only when the
endpoint is OpenAI's own; any other ``base_url`` gets the variable its ``api_key_env`` names,
or no key at all.
"""

from __future__ import annotations

import functools
import json
import math
import os
import urllib.parse
import weakref
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

import openai

from lens.core.errors import ConfigError
from lens.core.logs import get_logger
from lens.core.tokens import estimate_tokens
from lens.data.config import ModelConfig
from lens.models import rate_headers
from lens.models.base import Completion, CompletionRequest, Message, ToolCall, ToolSpec, Usage
from lens.models.errors import ProviderError, parse_retry_after, status_is_retryable
from lens.models.json_http import (
    DEFAULT_MAX_RESPONSE_BYTES,
    HTTPReply,
    JSONPoster,
    TransportError,
    dumps,
)
from lens.models.openai_json import ChatMessageJson, ToolJson, tool_call_json

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
_OPTIONS = ("extra_body", "token_limit_param", "transport", "max_response_bytes",
            "tool_choice_required")
TRANSPORTS = ("aiohttp", "sdk")
# Transports lens had before, refused with the reason rather than as unknown words.
_REMOVED_TRANSPORTS = {"http": "lens's own HTTP/1.1 client was removed; aiohttp (the default) "
                               "replaces it"}
log = get_logger("lens.models")

DEFAULT_BASE_URL = "https://api.openai.com/v1"
OPENAI_HOSTS = frozenset({"api.openai.com"})
# A usage count above this is not a count of one call's tokens but a broken or hostile server.
MAX_USAGE_TOKENS = 100_000_000


def is_openai_endpoint(base_url: str | None) -> bool:
    """Whether ``base_url`` is OpenAI's own API, over TLS (the only place its key may go)."""
    if base_url is None:
        return True
    parts = urllib.parse.urlsplit(base_url)
    host = (parts.hostname or "").lower().rstrip(".")
    return parts.scheme == "https" and host in OPENAI_HOSTS


def resolve_api_key(config: ModelConfig) -> str | None:
    """The key this endpoint may receive; None means send none.

    OPENAI_API_KEY is OpenAI's: it never goes to another host unless a config names it in
    ``api_key_env`` for that endpoint on purpose."""
    if config.api_key_env:
        key = os.environ.get(config.api_key_env)
        if key:
            return key
        raise ConfigError(
            f"model {config.model!r}: api_key_env names {config.api_key_env}, which is not set; "
            "set it, or remove api_key_env for an endpoint that needs no key"
        )
    if is_openai_endpoint(config.base_url):
        key = os.environ.get(DEFAULT_KEY_ENV)
        if key:
            return key
        raise ConfigError(
            f"model {config.model!r}: no API key: set the environment variable {DEFAULT_KEY_ENV} "
            "(or name another one with 'api_key_env')"
        )
    return None


def openai_message(m: Message) -> ChatMessageJson:
    if m.role == "tool":
        return {"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.content}
    if m.role == "assistant":
        # "" rather than None: some compatible servers reject a null content.
        msg: ChatMessageJson = {"role": "assistant", "content": m.content or ""}
        if m.tool_calls:
            msg["tool_calls"] = [tool_call_json(c.id, c.name, c.arguments) for c in m.tool_calls]
        return msg
    return {"role": m.role, "content": m.content}


def openai_tool(t: ToolSpec) -> ToolJson:
    return {"type": "function",
            "function": {"name": t.name, "description": t.description,
                         "parameters": t.parameters}}


def openai_tools(tools: Sequence[ToolSpec]) -> list[ToolJson]:
    return [openai_tool(t) for t in tools]


def to_openai_messages(messages: list[Message]) -> list[ChatMessageJson]:
    return [openai_message(m) for m in messages]


def sends_tools(request: CompletionRequest) -> bool:
    return bool(request.tools) and request.tool_choice != "none"


def build_params(request: CompletionRequest, model: str, config_max_tokens: int | None,
                 token_limit_param: str) -> dict[str, Any]:
    """The chat request's parameters, as the JSON body sends them."""
    return _params(request, model, config_max_tokens, token_limit_param,
                   to_openai_messages(request.messages),
                   openai_tools(request.tools) if sends_tools(request) else None)


def _params(request: CompletionRequest, model: str, config_max_tokens: int | None,
            token_limit_param: str, messages: object, tools: object) -> dict[str, Any]:
    """:func:`build_params` with the messages and tools (when sent) given as they are to go in."""
    params: dict[str, Any] = {"model": model, "temperature": request.temperature,
                              "messages": messages}
    if sends_tools(request):
        params["tools"] = tools
        if request.tool_choice in ("auto", "required"):
            params["tool_choice"] = request.tool_choice
        else:
            params["tool_choice"] = {"type": "function",
                                     "function": {"name": request.tool_choice}}
    if request.response_schema is not None:
        params["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "response", "schema": request.response_schema},
        }
    max_tokens = request.max_tokens or config_max_tokens
    if max_tokens:
        params[token_limit_param] = max_tokens
    if request.top_p is not None:
        params["top_p"] = request.top_p
    if request.seed is not None:
        params["seed"] = request.seed
    if request.stop:
        params["stop"] = request.stop
    return params


class _Spliced:
    """Where :func:`request_body` puts the request's messages or tools, encoded one by one."""


_MESSAGES, _TOOLS = _Spliced(), _Spliced()
# The encoded messages and tools kept for the next calls, at most this many bytes (and entries).
FRAGMENT_CACHE_BYTES = 8 * 1024 * 1024
FRAGMENT_CACHE_ENTRIES = 8192
_FIRST_SWEEP = 256


class FragmentCache:
    """The JSON of messages and tool specs already sent, by object.

    An agent's conversation grows by a turn or two per call and its earlier messages are the
    same (frozen) objects every time, as are its tool specs: each is encoded once rather than
    on every call of the conversation. An entry holds its object weakly: a finished
    conversation's messages are freed with it, and its entries go at the next sweep, so the
    cache holds about the conversations in flight rather than the run's history (whose
    messages, kept alive, made most of the garbage collector's work in a long run). An entry
    is used only while its object lives, so an ``id`` reused by a new object never matches
    an old entry; past the size bounds, the oldest entries go first."""

    def __init__(self, max_bytes: int = FRAGMENT_CACHE_BYTES,
                 max_entries: int = FRAGMENT_CACHE_ENTRIES) -> None:
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self._entries: dict[int, tuple[weakref.ref[Message | ToolSpec], bytes]] = {}
        self._bytes = 0
        # Entries held before the next sweep for dead objects: twice what the last one kept.
        self._sweep_at = min(max_entries, _FIRST_SWEEP)

    def encoded(self, obj: Message | ToolSpec) -> bytes:
        key = id(obj)
        entry = self._entries.get(key)
        if entry is not None and entry[0]() is obj:
            return entry[1]
        data = dumps(openai_message(obj) if isinstance(obj, Message) else openai_tool(obj))
        if len(data) <= self.max_bytes:
            if entry is not None:  # a freed object's entry, its id now another's
                self._bytes -= len(self._entries.pop(key)[1])
            self._entries[key] = (weakref.ref(obj), data)
            self._bytes += len(data)
            if len(self._entries) > self._sweep_at or self._bytes > self.max_bytes:
                self._sweep()
        return data

    def _sweep(self) -> None:
        """Drop the entries of freed objects; if the live ones alone pass a bound, the oldest
        go down to three quarters of it, so that the next sweep is many insertions away."""
        entries = {k: e for k, e in self._entries.items() if e[0]() is not None}
        size = sum(len(e[1]) for e in entries.values())
        if size > self.max_bytes or len(entries) > self.max_entries:
            max_bytes, max_entries = self.max_bytes * 3 // 4, self.max_entries * 3 // 4
            while entries and (size > max_bytes or len(entries) > max_entries):
                size -= len(entries.pop(next(iter(entries)))[1])
        self._entries, self._bytes = entries, size
        self._sweep_at = min(self.max_entries, max(_FIRST_SWEEP, 2 * len(entries)))


def request_body(request: CompletionRequest, model: str, config_max_tokens: int | None,
                 token_limit_param: str, extra_body: dict[str, Any] | None,
                 fragments: FragmentCache) -> bytes:
    """``dumps(build_params(...) | extra_body)``, byte for byte, with each message and tool spec
    taken from ``fragments``: the JSON of an object is the JSON of its members, in order, with
    the same separators, so the body is assembled from pieces encoded once each."""
    params = _params(request, model, config_max_tokens, token_limit_param, _MESSAGES, _TOOLS)
    # Pieces joined once at the end: the body (most of it the conversation) is copied once,
    # not once per level of nesting.
    pieces: list[bytes] = []
    for key, value in (params | (extra_body or {})).items():
        pieces.append(b"," if pieces else b"{")
        if isinstance(value, _Spliced):
            items: Sequence[Message | ToolSpec] = (request.messages if value is _MESSAGES
                                                   else request.tools)
            pieces += (_member(key, _SPLICE), b",".join(map(fragments.encoded, items)), b"]")
        elif type(value) in _SCALARS:
            pieces.append(_member(key, value))
        else:
            pieces.append(dumps({key: value})[1:-1])
    pieces.append(b"}" if pieces else b"{}")
    return b"".join(pieces)


# Members whose JSON is kept by value: the model, temperature, tool choice and token limit are
# the same on every call of a run, so each is encoded once, not once per call.
_SCALARS = frozenset({str, int, float, bool, type(None)})
_SPLICE = object()  # ``_member(key, _SPLICE)`` is the opening of the key's encoded list


@functools.lru_cache(maxsize=1024, typed=True)
def _member(key: Any, value: Any) -> bytes:
    """``"key":value`` as in ``dumps({key: value})``; ``"key":[`` for a spliced list."""
    if value is _SPLICE:
        return dumps({key: []})[1:-1][:-1]
    return dumps({key: value})[1:-1]


# The SDK walks every request parameter against its typed schema before sending it (to rename
# aliased keys and format dates). For a chat request that is O(conversation) CPU on every turn --
# the largest single cost of a model call in lens's profile -- and it changes nothing: lens builds
# plain JSON already. These go to the SDK as ``extra_body`` instead, which it merges into the JSON
# body unchanged (extra_body values take precedence over the named arguments).
_PASSTHROUGH = ("messages", "tools")


def sdk_call_params(params: dict[str, Any],
                    extra_body: dict[str, Any] | None = None) -> dict[str, Any]:
    """Arguments for ``chat.completions.create`` that send the same JSON body as ``params``."""
    call = {k: v for k, v in params.items() if k not in _PASSTHROUGH}
    body = {k: params[k] for k in _PASSTHROUGH if k in params}
    call["messages"] = []
    if extra_body:
        body.update(extra_body)
    call["extra_body"] = body
    return call


def body_message(body: Any) -> str | None:
    """The provider's own words in a decoded error body, in the shapes servers use:
    ``{"error": {"message": …}}``, ``{"error": "…"}`` or ``{"message": …}``."""
    if not isinstance(body, dict):
        return None
    err = body.get("error", body)
    if isinstance(err, dict) and err.get("message"):
        return str(err["message"])
    if isinstance(err, str):
        return err
    return str(body["message"]) if body.get("message") else None


def provider_message(exc: openai.APIStatusError) -> str:
    return body_message(exc.body) or exc.message


class OpenAIClient:
    provider = "openai"

    def __init__(self, config: ModelConfig) -> None:
        self.model = config.name
        self.config = config
        options = config.backend_options(_OPTIONS)
        extra = options.get("extra_body")
        if extra is not None and not isinstance(extra, dict):
            raise ConfigError(f"model {config.model!r}: options.extra_body must be a mapping of "
                              f"request fields, not {type(extra).__name__}")
        self.extra_body: dict[str, Any] | None = extra
        required = options.get("tool_choice_required", True)
        if not isinstance(required, bool):
            raise ConfigError(f"model {config.model!r}: options.tool_choice_required must be "
                              f"true or false, not {required!r}")
        # OpenAI's API and servers that follow it honour tool_choice "required"; a server that
        # refuses or ignores it is set to false, and the agent reminds the model instead.
        self.tool_choice_required = required
        self.token_limit_param = str(options.get("token_limit_param", "max_tokens"))
        self.transport = str(options.get("transport", "aiohttp"))
        if self.transport in _REMOVED_TRANSPORTS:
            raise ConfigError(f"model {config.model!r}: options.transport "
                              f"{self.transport!r}: {_REMOVED_TRANSPORTS[self.transport]}; "
                              f"use one of {', '.join(TRANSPORTS)} or leave it out")
        if self.transport not in TRANSPORTS:
            raise ConfigError(f"model {config.model!r}: options.transport must be one of "
                              f"{', '.join(TRANSPORTS)}, not {self.transport!r}")
        cap = options.get("max_response_bytes", DEFAULT_MAX_RESPONSE_BYTES)
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1024:
            raise ConfigError(f"model {config.model!r}: options.max_response_bytes must be a "
                              f"whole number of bytes, at least 1024, not {cap!r}")
        self.base_url = config.base_url
        self._label = f"{self.provider}/{self.model}"
        api_key = resolve_api_key(config)
        self._client: openai.AsyncOpenAI | None = None
        self._poster: JSONPoster | None = None
        self._fragments = FragmentCache()
        if self.transport == "sdk":
            # The SDK insists on a key; a placeholder carries no secret.
            self._client = openai.AsyncOpenAI(api_key=api_key or "no-key",
                                              base_url=config.base_url,
                                              timeout=config.timeout_s, max_retries=0)
        else:
            root = (config.base_url or DEFAULT_BASE_URL).rstrip("/")
            auth = {"Authorization": f"Bearer {api_key}"} if api_key else {}
            self._poster = JSONPoster(f"{root}/chat/completions", auth, config.timeout_s,
                                      max_response_bytes=cap)

    async def complete(self, request: CompletionRequest) -> Completion:
        label = self._label
        if self._poster is not None:
            try:
                body = request_body(request, self.model, self.config.max_tokens,
                                    self.token_limit_param, self.extra_body, self._fragments)
            except (ValueError, RecursionError) as exc:
                raise ProviderError(f"{label}: the request cannot be sent as JSON: {exc}",
                                    retryable=False) from None
            try:
                reply = await self._poster.post(body)
            except TransportError as exc:
                raise ProviderError(f"{label}: {exc}", retryable=exc.retryable) from None
            return _reply_to_completion(_reply_json(reply, label), request, label)
        assert self._client is not None
        params = build_params(request, self.model, self.config.max_tokens,
                              self.token_limit_param)
        try:
            raw = await self._client.chat.completions.with_raw_response.create(
                **sdk_call_params(params, self.extra_body)
            )
            rate_headers.note(raw.headers)
            response = raw.parse()
        except openai.APIStatusError as exc:
            status = exc.status_code
            headers = dict(exc.response.headers)
            rate_headers.note(headers)
            raise ProviderError(
                f"{label}: HTTP {status}: {provider_message(exc)}",
                retryable=status_is_retryable(status), status=status,
                retry_after_s=parse_retry_after(headers),
            ) from None
        except openai.APITimeoutError:
            raise ProviderError(f"{label}: request timed out", retryable=True) from None
        except openai.APIConnectionError as exc:
            raise ProviderError(f"{label}: connection failed: {exc}", retryable=True) from None
        except (openai.APIResponseValidationError, ValueError, RecursionError) as exc:
            # A cut-off or garbled body is usually a transient fault of the server or network.
            raise ProviderError(f"{label}: malformed response: {_short(exc)}",
                                retryable=True) from None
        return _to_completion(response, request, label)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
        if self._poster is not None:
            await self._poster.aclose()


def _reply_json(reply: HTTPReply, label: str) -> dict[str, Any]:
    """The JSON object of a reply from the aiohttp transport, or the ProviderError it is."""
    rate_headers.note(reply.headers)
    if reply.status >= 400:
        raise ProviderError(
            f"{label}: HTTP {reply.status}: {_error_message(reply.body)}",
            retryable=status_is_retryable(reply.status), status=reply.status,
            retry_after_s=parse_retry_after(reply.headers),
        )
    body = reply.body
    try:
        # JSON between systems is UTF-8 (RFC 8259): an object's text is decoded as such, once;
        # anything else (a byte-order mark, another encoding, not an object) goes through
        # json.loads, which tells them apart.
        data = (_DECODER.decode(body.decode()) if body[:1] == b"{"
                else json.loads(body))
    except (ValueError, RecursionError) as exc:
        # A cut-off or garbled body is usually a transient fault of the server or network;
        # ValueError covers bad UTF-8 and integers of thousands of digits too.
        raise ProviderError(f"{label}: malformed response: {_short(exc)}",
                            retryable=True) from None
    if not isinstance(data, dict):
        raise ProviderError(f"{label}: malformed response: not a JSON object",
                            retryable=True)
    return data


_DECODER = json.JSONDecoder()


def _short(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "the JSON nests too deeply"
    return str(exc)[:300]


def _error_message(body: bytes) -> str:
    """The provider's own words from an error reply, in the shapes servers use."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        text = body.decode("utf-8", "replace").strip()
        return text[:500] or "(empty body)"
    try:
        return (body_message(data) or json.dumps(data))[:500]
    except (ValueError, RecursionError):
        return "(an error body too deeply nested to show)"


def _arguments_text(args: Any) -> str:
    """Tool arguments as text for the agent, which parses them and answers a bad one with a tool
    error; some servers send them decoded."""
    if args is None:
        return "{}"
    if isinstance(args, str):
        return args
    try:
        return json.dumps(args)
    except (ValueError, RecursionError):
        # Text that is not a JSON object: the agent reports it to the model as a tool error.
        return '"arguments nested too deeply to encode"'


def _readable_count(value: Any) -> int | None:
    """A usage count as a provider must send it (a whole, non-negative JSON number), or None."""
    if type(value) is int:  # what every provider sends
        return value if 0 <= value <= MAX_USAGE_TOKENS else None
    ok = (not isinstance(value, bool) and isinstance(value, int | float)
          and math.isfinite(value) and 0 <= value <= MAX_USAGE_TOKENS and value == int(value))
    return int(value) if ok else None


def prompt_bound(request: CompletionRequest) -> int:
    """The most prompt tokens ``request`` can have cost: its bytes (messages, tool calls and
    tool schemas), since no tokenizer lens speaks to makes a token of less than a byte."""
    size = sum(len(m.content.encode("utf-8")) for m in request.messages)
    size += sum(len(c.arguments.encode("utf-8")) + len(c.name.encode("utf-8"))
                for m in request.messages for c in m.tool_calls)
    size += sum(len(t.model_dump_json().encode("utf-8")) for t in request.tools)
    return max(1, size)


def completion_bound(request: CompletionRequest, text: str, calls: list[ToolCall]) -> int:
    """The most completion tokens the reply can have cost: the request's ``max_tokens`` (its
    limit), else the reply's bytes."""
    if request.max_tokens:
        return request.max_tokens
    return max(1, len(text.encode("utf-8")) + sum(len(c.arguments.encode("utf-8"))
                                                  for c in calls))


def _usage(raw: Mapping[str, Any], label: str, request: CompletionRequest, text: str,
           calls: list[ToolCall]) -> Usage:
    """The reply's usage block read as lens meters it. A count that is not a count (a string,
    a negative or absurd number) is neither guessed low nor a reason to throw the paid answer
    away: it is recorded as unknown and charged at the most the call can have cost
    (:func:`prompt_bound`, :func:`completion_bound`), so budgets and cost caps still hold."""
    unknown: list[str] = []
    prompt = _readable_count(raw.get("prompt_tokens"))
    if prompt is None:
        unknown.append("prompt_tokens")
        prompt = prompt_bound(request)
    completion_raw = raw.get("completion_tokens")
    completion = 0 if completion_raw is None else _readable_count(completion_raw)
    if completion is None:
        unknown.append("completion_tokens")
        completion = completion_bound(request, text, calls)
    read_n, write_n = _cache_counts(raw, unknown)
    if read_n + write_n > prompt:
        unknown.append("cached_tokens")
        read_n = write_n = 0  # charged as uncached, the dearer reading
    if unknown:
        log.warning("a model reply's usage block is unreadable: the counts are recorded as "
                    "unknown and charged at the most the call can have cost", model=label,
                    unknown=unknown, usage=str(dict(raw))[:300])
    return Usage(prompt_tokens=prompt, completion_tokens=completion,
                 cached_prompt_tokens=read_n, cache_write_tokens=write_n, unknown=unknown)


def _cache_counts(raw: Mapping[str, Any], unknown: list[str]) -> tuple[int, int]:
    """The prompt-cache counts the provider reported: OpenAI's
    ``prompt_tokens_details.cached_tokens``, Anthropic's ``cache_read_input_tokens`` and
    ``cache_creation_input_tokens`` (as litellm passes them on, counted within prompt_tokens);
    an unreadable one counts 0 (charged as uncached) and is named in ``unknown``."""
    details = raw.get("prompt_tokens_details")
    read = details.get("cached_tokens") if isinstance(details, Mapping) else None
    if read is None:
        read = raw.get("cache_read_input_tokens")
    write = raw.get("cache_creation_input_tokens")
    counts = []
    for name, value in (("cached_tokens", read), ("cache_creation_input_tokens", write)):
        n = 0 if value is None else _readable_count(value)
        if n is None:
            unknown.append(name)
            n = 0
        counts.append(n)
    return counts[0], counts[1]


class _CachedTokens(TypedDict):
    cached_tokens: object


class _CacheUsage(TypedDict):
    """The cache fields of a usage block, unchecked (``_usage`` reads them)."""

    prompt_tokens_details: _CachedTokens
    cache_read_input_tokens: object
    cache_creation_input_tokens: object


def _usage_mapping(usage: Any) -> _CacheUsage:
    """The cache fields of an SDK (openai or litellm) usage object, as the JSON reply has them."""
    details = getattr(usage, "prompt_tokens_details", None)
    cached = details.get("cached_tokens") if isinstance(details, Mapping) \
        else getattr(details, "cached_tokens", None)
    return {"prompt_tokens_details": {"cached_tokens": cached},
            "cache_read_input_tokens": getattr(usage, "cache_read_input_tokens", None),
            "cache_creation_input_tokens": getattr(usage, "cache_creation_input_tokens", None)}


def _reply_to_completion(data: dict[str, Any], request: CompletionRequest,
                         label: str) -> Completion:
    choices = data.get("choices") or []
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ProviderError(f"{label}: the response has no choices", retryable=True)
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise ProviderError(f"{label}: malformed response: a choice without a message",
                            retryable=True)
    calls = []
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise ProviderError(f"{label}: malformed response: tool_calls is not a list",
                            retryable=True)
    for i, c in enumerate(raw_calls):
        fn = c.get("function") if isinstance(c, dict) else None
        if not isinstance(fn, dict):
            continue
        call_id, name = c.get("id"), fn.get("name")
        calls.append(ToolCall(id=call_id if isinstance(call_id, str) and call_id else
                              f"call_{i}", name=name if isinstance(name, str) else "",
                              arguments=_arguments_text(fn.get("arguments"))))
    text = message.get("content") or ""
    if not isinstance(text, str):
        try:
            text = json.dumps(text)
        except (ValueError, RecursionError):
            raise ProviderError(f"{label}: malformed response: the content nests too deeply",
                                retryable=True) from None
    usage = data.get("usage")
    if isinstance(usage, dict) and usage.get("prompt_tokens") is not None:
        tokens = _usage(usage, label, request, text, calls)
    else:
        tokens = _estimated_usage(request, text, calls)
    finish = choice.get("finish_reason")
    return Completion(text=text, tool_calls=calls, usage=tokens,
                      finish_reason=finish if isinstance(finish, str) else None, cost_usd=None)


def _estimated_usage(request: CompletionRequest, text: str, calls: list[ToolCall]) -> Usage:
    # Some servers omit usage; an estimate keeps budgets biting.
    return Usage(
        prompt_tokens=sum(estimate_tokens(m.content) for m in request.messages),
        completion_tokens=estimate_tokens(text) + sum(estimate_tokens(c.arguments)
                                                      for c in calls),
    )


def _to_completion(response: Any, request: CompletionRequest, label: str) -> Completion:
    choices = getattr(response, "choices", None) or []
    if not choices:
        raise ProviderError(f"{label}: the response has no choices", retryable=True)
    choice = choices[0]
    message = choice.message
    calls = []
    for i, c in enumerate(getattr(message, "tool_calls", None) or []):
        fn = getattr(c, "function", None)
        if fn is None:
            continue
        calls.append(ToolCall(id=c.id or f"call_{i}", name=fn.name or "",
                              arguments=_arguments_text(fn.arguments)))
    text = message.content or ""
    if not isinstance(text, str):
        raise ProviderError(f"{label}: malformed response: the content is not text",
                            retryable=True)
    usage = getattr(response, "usage", None)
    if usage is not None and getattr(usage, "prompt_tokens", None) is not None:
        tokens = _usage({"prompt_tokens": usage.prompt_tokens,
                         "completion_tokens": getattr(usage, "completion_tokens", None),
                         **_usage_mapping(usage)}, label, request, text, calls)
    else:
        tokens = _estimated_usage(request, text, calls)
    return Completion(text=text, tool_calls=calls, usage=tokens,
                      finish_reason=choice.finish_reason, cost_usd=None)
