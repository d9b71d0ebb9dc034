"""A small client for Anthropic's Message Batches API: create a batch of Messages requests,
retrieve its status, download its results (JSONL) from the ``results_url`` it gives. The
transport, retries and errors are the OpenAI batch client's (lens.models.openai_batch); only
the headers and the routes differ."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict
from urllib.parse import urlsplit

from lens.models.base import ModelError
from lens.models.openai_batch import ChatMessage, OpenAIBatchAPI

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
# processing_status after which a batch changes no more.
ENDED = "ended"


class MessageParams(TypedDict):
    """One Messages API request of a batch (its ``params``): the system prompt apart."""

    model: str
    temperature: float
    max_tokens: int
    messages: list[ChatMessage]
    system: NotRequired[str]


class BatchRequest(TypedDict):
    custom_id: str
    params: MessageParams


class AnthropicBatchAPI(OpenAIBatchAPI):
    def __init__(self, base_url: str | None, api_key: str, *, timeout_s: float = 120.0,
                 attempts: int = 4, backoff_s: float = 1.0) -> None:
        super().__init__(base_url or DEFAULT_BASE_URL, api_key, timeout_s=timeout_s,
                         attempts=attempts, backoff_s=backoff_s)
        self._headers = {"x-api-key": api_key, "anthropic-version": API_VERSION}

    async def create_batch(self, requests: list[BatchRequest]) -> dict[str, Any]:
        data = await self._json("batch create", "POST", "/v1/messages/batches",
                                json={"requests": requests})
        if not isinstance(data.get("id"), str):
            raise ModelError("message batches create: the reply has no batch id")
        return data

    async def retrieve(self, batch_id: str) -> dict[str, Any]:
        return await self._json("batch retrieve", "GET", f"/v1/messages/batches/{batch_id}")

    async def results(self, batch_id: str, results_url: str | None) -> bytes:
        if results_url and same_origin(results_url, self.base_url):
            path = results_url[len(self.base_url):]
        else:
            # A results_url elsewhere is not followed (it would receive the API key).
            path = f"/v1/messages/batches/{batch_id}/results"
        return await self._call("results download", "GET", path)


def _origin(url: str) -> tuple[str, str, int | None] | None:
    try:
        parts = urlsplit(url)
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme.lower())
    except ValueError:
        return None
    if parts.username is not None or parts.password is not None or not parts.hostname:
        return None
    return parts.scheme.lower(), parts.hostname.lower(), port


def same_origin(url: str, base_url: str) -> bool:
    """Whether ``url`` lies under ``base_url``: the same scheme, host and port, no user part,
    and the base's path as its path's prefix. A URL that merely starts with the base's text
    (``…:4100`` for ``…:41000``, ``api.anthropic.com.evil.example``,
    ``api.anthropic.com@evil.example``) is elsewhere."""
    mine = _origin(base_url)
    return (mine is not None and _origin(url) == mine
            and url.startswith(base_url.rstrip("/") + "/"))
