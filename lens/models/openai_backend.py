"""The ``openai`` backend: OpenAI or any OpenAI-compatible ``base_url`` (vLLM, llama.cpp server,
Ollama, …). Retries are the stack's, so the SDK's own are off.

Three transports send the same JSON body: ``http`` (the default) posts it with lens's own
HTTP/1.1 client (``http1``; through aiohttp when a proxy variable applies to the endpoint) and
parses the reply with ``json.loads``; ``aiohttp`` always uses aiohttp; ``sdk`` goes through
``AsyncOpenAI``. The client's CPU per call caps how many calls one process keeps in flight, and
the three differ severalfold there (``bench/RESULTS.md``); the SDK stays for servers that need
its quirks.
"""

from __future__ import annotations

import json
import os
from typing import Any

import openai

from lens.config import ModelConfig
from lens.errors import ConfigError
from lens.models.base import Completion, CompletionRequest, Message, ToolCall, Usage
from lens.models.chat_body import ChatBodyEncoder, openai_message, openai_tools
from lens.models.errors import ProviderError, parse_retry_after, status_is_retryable
from lens.models.http1 import HTTP1Poster
from lens.models.json_http import JSONPoster, TransportError, dumps, env_proxy
from lens.models.scripted import estimate_tokens

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
_OPTIONS = ("extra_body", "token_limit_param", "transport")
TRANSPORTS = ("http", "aiohttp", "sdk")
DEFAULT_BASE_URL = "https://api.openai.com/v1"


def resolve_api_key(config: ModelConfig, *, required: bool) -> str:
    env = config.api_key_env or DEFAULT_KEY_ENV
    key = os.environ.get(env)
    if key:
        return key
    if required:
        raise ConfigError(
            f"model {config.model!r}: no API key: set the environment variable {env} "
            "(or name another one with 'api_key_env')"
        )
    # Local OpenAI-compatible servers usually ignore the key, but the SDK wants one.
    return "no-key"


def to_openai_messages(messages: list[Message]) -> list[dict[str, Any]]:
    return [openai_message(m) for m in messages]


def sends_tools(request: CompletionRequest) -> bool:
    return bool(request.tools) and request.tool_choice != "none"


def build_params(request: CompletionRequest, model: str, config_max_tokens: int | None,
                 token_limit_param: str, *, conversation: bool = True) -> dict[str, Any]:
    """The chat request's parameters; without ``conversation``, all but its messages and
    tools (which ``ChatBodyEncoder`` adds)."""
    params: dict[str, Any] = {"model": model, "temperature": request.temperature}
    if conversation:
        params["messages"] = to_openai_messages(request.messages)
    if sends_tools(request):
        if conversation:
            params["tools"] = openai_tools(request.tools)
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
        options = dict(config.options)
        unknown = sorted(set(options) - set(_OPTIONS))
        if unknown:
            raise ConfigError(f"model {config.model!r}: unknown option(s) {unknown}; known: "
                              f"{', '.join(_OPTIONS)}")
        self.extra_body: dict[str, Any] | None = options.get("extra_body")
        self.token_limit_param = str(options.get("token_limit_param", "max_tokens"))
        self.transport = str(options.get("transport", "http"))
        if self.transport not in TRANSPORTS:
            raise ConfigError(f"model {config.model!r}: options.transport must be one of "
                              f"{', '.join(TRANSPORTS)}, not {self.transport!r}")
        self.base_url = config.base_url
        api_key = resolve_api_key(config, required=config.base_url is None)
        self._client: openai.AsyncOpenAI | None = None
        self._poster: HTTP1Poster | JSONPoster | None = None
        self._encoder = ChatBodyEncoder()
        if self.transport == "sdk":
            self._client = openai.AsyncOpenAI(api_key=api_key, base_url=config.base_url,
                                              timeout=config.timeout_s, max_retries=0)
        else:
            root = (config.base_url or DEFAULT_BASE_URL).rstrip("/")
            url = f"{root}/chat/completions"
            auth = {"Authorization": f"Bearer {api_key}"}
            if self.transport == "http" and env_proxy(url) is None:
                try:
                    self._poster = HTTP1Poster(url, auth, config.timeout_s)
                except ValueError as exc:
                    raise ConfigError(f"model {config.model!r}: base_url: {exc}") from None
            else:
                self._poster = JSONPoster(url, auth, config.timeout_s)

    async def complete(self, request: CompletionRequest) -> Completion:
        label = f"{self.provider}/{self.model}"
        if self._poster is not None:
            return _reply_to_completion(await self._post(self._body(request), label), request,
                                        label)
        params = build_params(request, self.model, self.config.max_tokens,
                              self.token_limit_param)
        assert self._client is not None
        try:
            response = await self._client.chat.completions.create(
                **sdk_call_params(params, self.extra_body)
            )
        except openai.APIStatusError as exc:
            status = exc.status_code
            raise ProviderError(
                f"{label}: HTTP {status}: {provider_message(exc)}",
                retryable=status_is_retryable(status), status=status,
                retry_after_s=parse_retry_after(dict(exc.response.headers)),
            ) from None
        except openai.APITimeoutError:
            raise ProviderError(f"{label}: request timed out", retryable=True) from None
        except openai.APIConnectionError as exc:
            raise ProviderError(f"{label}: connection failed: {exc}", retryable=True) from None
        except (openai.APIResponseValidationError, json.JSONDecodeError, ValueError) as exc:
            # A cut-off or garbled body is usually a transient fault of the server or network.
            raise ProviderError(f"{label}: malformed response: {exc}", retryable=True) from None
        return _to_completion(response, request, label)

    def _body(self, request: CompletionRequest) -> bytes:
        extra = self.extra_body or {}
        if "messages" in extra or "tools" in extra:
            # extra_body replaces the conversation itself: send it as given.
            return dumps(build_params(request, self.model, self.config.max_tokens,
                                      self.token_limit_param) | extra)
        params = build_params(request, self.model, self.config.max_tokens,
                              self.token_limit_param, conversation=False) | extra
        return self._encoder.body(params, request.messages,
                                  request.tools if sends_tools(request) else None)

    async def _post(self, body: bytes, label: str) -> dict[str, Any]:
        assert self._poster is not None
        try:
            reply = await self._poster.post(body)
        except TransportError as exc:
            raise ProviderError(f"{label}: {exc}", retryable=True) from None
        if reply.status >= 400:
            raise ProviderError(
                f"{label}: HTTP {reply.status}: {_error_message(reply.body)}",
                retryable=status_is_retryable(reply.status), status=reply.status,
                retry_after_s=parse_retry_after(reply.headers),
            )
        try:
            data = json.loads(reply.body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            # A cut-off or garbled body is usually a transient fault of the server or network.
            raise ProviderError(f"{label}: malformed response: {exc}", retryable=True) from None
        if not isinstance(data, dict):
            raise ProviderError(f"{label}: malformed response: not a JSON object",
                                retryable=True)
        return data

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
        if self._poster is not None:
            await self._poster.aclose()


def _error_message(body: bytes) -> str:
    """The provider's own words from an error reply, in the shapes servers use."""
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        text = body.decode("utf-8", "replace").strip()
        return text[:500] or "(empty body)"
    return body_message(data) or json.dumps(data)[:500]


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
    for i, c in enumerate(message.get("tool_calls") or []):
        fn = c.get("function") if isinstance(c, dict) else None
        if not isinstance(fn, dict):
            continue
        args = fn.get("arguments")
        calls.append(ToolCall(id=c.get("id") or f"call_{i}", name=fn.get("name") or "",
                              arguments=args if isinstance(args, str) else
                              ("{}" if args is None else json.dumps(args))))
    text = message.get("content") or ""
    if not isinstance(text, str):
        text = json.dumps(text)
    usage = data.get("usage")
    if isinstance(usage, dict) and usage.get("prompt_tokens") is not None:
        tokens = Usage(prompt_tokens=int(usage["prompt_tokens"]),
                       completion_tokens=int(usage.get("completion_tokens") or 0))
    else:
        tokens = _estimated_usage(request, text, calls)
    return Completion(text=text, tool_calls=calls, usage=tokens,
                      finish_reason=choice.get("finish_reason"), cost_usd=None)


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
                              arguments=fn.arguments if fn.arguments is not None else "{}"))
    text = message.content or ""
    usage = getattr(response, "usage", None)
    if usage is not None and usage.prompt_tokens is not None:
        tokens = Usage(prompt_tokens=int(usage.prompt_tokens or 0),
                       completion_tokens=int(usage.completion_tokens or 0))
    else:
        tokens = _estimated_usage(request, text, calls)
    return Completion(text=text, tool_calls=calls, usage=tokens,
                      finish_reason=choice.finish_reason, cost_usd=None)
