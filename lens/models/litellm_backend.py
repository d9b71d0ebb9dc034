"""The ``litellm`` backend (optional extra): any provider litellm speaks, named
``litellm/<provider>/<model>`` (e.g. ``litellm/anthropic/claude-3-5-haiku-latest``).

Requests and responses use the OpenAI shapes, so conversion is shared with the openai backend.
litellm's own retries are off: the lens stack retries, limits, caches and meters.
"""

from __future__ import annotations

import os
from typing import Any

from lens.core.distribution import install_hint
from lens.core.envscope import environment
from lens.core.errors import ConfigError
from lens.data.config import ModelConfig
from lens.models.base import Completion, CompletionRequest
from lens.models.errors import ProviderError, parse_retry_after, status_is_retryable
from lens.models.openai_backend import _to_completion, build_params

_OPTIONS = ("extra_body", "drop_params", "cache_breakpoints")
# Anthropic's prompt cache: a breakpoint marks the end of a prefix to cache for 5 minutes.
_EPHEMERAL = {"type": "ephemeral"}


def wants_breakpoints(model: str) -> bool:
    """Whether litellm sends ``model``'s requests to Anthropic's API (directly, or on Bedrock
    or Vertex), whose prompt cache works only from the breakpoints a request marks."""
    name = model.lower()
    return name.startswith("anthropic/") or "claude" in name


def with_breakpoints(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with cache breakpoints on what is the same for every question of a unit: the
    tool definitions (Anthropic's prefix begins with them) and the system prompt, which holds
    the standing context; and, once the session has a tool result, on the last one, so that the
    session's next call reads everything sent so far from the cache (bench/cache_share.py
    measures both shares). Three of the four breakpoints Anthropic allows."""
    tools = params.get("tools")
    if tools:
        params["tools"] = [*tools[:-1], {**tools[-1], "cache_control": _EPHEMERAL}]
    messages = list(params.get("messages") or [])
    for i, m in enumerate(messages):
        if m.get("role") != "system":
            continue
        content = m.get("content")
        if isinstance(content, str) and content:
            messages[i] = {**m, "content": [{"type": "text", "text": content,
                                             "cache_control": _EPHEMERAL}]}
    if messages and messages[-1].get("role") == "tool":
        messages[-1] = {**messages[-1], "cache_control": _EPHEMERAL}
    params["messages"] = messages
    return params


def import_litellm() -> Any:
    try:
        # Without it, importing litellm fetches its price table from the network; litellm reads
        # the variable during its import only.
        with environment(LITELLM_LOCAL_MODEL_COST_MAP="True"):
            import litellm
    except ImportError:
        raise ConfigError(
            f"the litellm provider needs the 'litellm' extra: {install_hint('litellm')}"
        ) from None
    return litellm


class LiteLLMClient:
    provider = "litellm"
    tool_choice_required = True

    def __init__(self, config: ModelConfig) -> None:
        options = config.backend_options(_OPTIONS)
        self._litellm = import_litellm()
        self.model = config.name
        self.config = config
        self.options = options
        self.api_key: str | None = None
        if config.api_key_env:
            self.api_key = os.environ.get(config.api_key_env)
            if not self.api_key:
                raise ConfigError(f"model {config.model!r}: the environment variable "
                                  f"{config.api_key_env} (api_key_env) is not set")

    async def complete(self, request: CompletionRequest) -> Completion:
        params = build_params(request, self.model, self.config.max_tokens, "max_tokens")
        if request.tools:
            # litellm's tool path imports the MCP client types.
            try:
                import mcp  # noqa: F401
            except ImportError:
                raise ConfigError("litellm tool calls need the 'mcp' package; install lens "
                                  "with the 'litellm' extra") from None
        params.update(timeout=self.config.timeout_s, num_retries=0, max_retries=0)
        if self.config.base_url:
            params["api_base"] = self.config.base_url
        if self.api_key:
            params["api_key"] = self.api_key
        if "extra_body" in self.options:
            params["extra_body"] = self.options["extra_body"]
        if self.options.get("drop_params"):
            params["drop_params"] = True
        if self.options.get("cache_breakpoints", True) and wants_breakpoints(self.model):
            params = with_breakpoints(params)
        label = f"{self.provider}/{self.model}"
        try:
            response = await self._litellm.acompletion(**params)
        except Exception as exc:
            raise _as_provider_error(exc, label) from None
        return _to_completion(response, request, label)

    async def aclose(self) -> None:
        return None


def _as_provider_error(exc: Exception, label: str) -> ProviderError:
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    headers = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
    try:
        retry_after = parse_retry_after(dict(headers) if headers else None)
    except (TypeError, ValueError):
        retry_after = None
    name = type(exc).__name__
    if status is None:
        retryable = any(k in name for k in ("Timeout", "Connection", "ServiceUnavailable"))
    else:
        retryable = status_is_retryable(status)
    message = getattr(exc, "message", None) or str(exc)
    where = f"HTTP {status}: " if status else ""
    return ProviderError(f"{label}: {where}{message}", retryable=retryable, status=status,
                         retry_after_s=retry_after)
