"""A small client for the OpenAI Batch API: upload a JSONL file of requests, create a batch,
retrieve its status, download an output or error file. Transient failures (connection errors,
429, 5xx) are retried with backoff; anything else is a :class:`ModelError` naming the step."""

from __future__ import annotations

from typing import Any, NotRequired, Required, TypedDict

import aiohttp
from tenacity import (
    AsyncRetrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from lens.core.jsonguard import JsonRefused, loads_guarded
from lens.models.base import ModelError

DEFAULT_BASE_URL = "https://api.openai.com/v1"
CHAT_ENDPOINT = "/v1/chat/completions"
# Statuses after which a batch changes no more.
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, aiohttp.ClientConnectionError | TimeoutError):
        return True
    return isinstance(exc, ModelError) and exc.retryable


class ChatMessage(TypedDict):
    role: str
    content: str


class JsonSchemaFormat(TypedDict):
    name: str
    schema: dict[str, Any]  # the reply's JSON schema, as the request gives it


class ResponseFormat(TypedDict):
    type: str
    json_schema: JsonSchemaFormat


class ChatBody(TypedDict, total=False):
    """One chat completion request of a batch, as its JSONL line's ``body`` sends it."""

    model: Required[str]
    temperature: Required[float]
    messages: Required[list[ChatMessage]]
    response_format: ResponseFormat
    max_tokens: int
    seed: int


class _BatchCreate(TypedDict):
    input_file_id: str
    endpoint: str
    completion_window: str
    metadata: NotRequired[dict[str, str]]


class OpenAIBatchAPI:
    def __init__(self, base_url: str | None, api_key: str, *, timeout_s: float = 120.0,
                 attempts: int = 4, backoff_s: float = 1.0) -> None:
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self._headers = {"Authorization": f"Bearer {api_key}"}
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._attempts = attempts
        self._backoff = backoff_s
        self._session: aiohttp.ClientSession | None = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(headers=self._headers, timeout=self._timeout)
        return self._session

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def _call(self, step: str, method: str, path: str, **kwargs: Any) -> bytes:
        async for attempt in AsyncRetrying(
                stop=stop_after_attempt(self._attempts), reraise=True,
                wait=wait_exponential(multiplier=self._backoff, max=30),
                retry=retry_if_exception(_transient)):
            with attempt:
                async with self._http().request(method, self.base_url + path, **kwargs) as r:
                    body = await r.read()
                    if r.status >= 400:
                        raise ModelError(f"batch API {step}: HTTP {r.status}: "
                                         f"{body[:300].decode('utf-8', 'replace')}",
                                         retryable=r.status == 429 or r.status >= 500,
                                         status=r.status)
                    return body
        raise AssertionError("unreachable")

    async def _json(self, step: str, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        body = await self._call(step, method, path, **kwargs)
        try:
            data = loads_guarded(body, what=f"batch API {step} reply")
        except JsonRefused:
            raise ModelError(f"batch API {step}: the reply is not JSON") from None
        if not isinstance(data, dict):
            raise ModelError(f"batch API {step}: the reply is not a JSON object")
        return data

    async def upload(self, jsonl: bytes, filename: str) -> str:
        form = aiohttp.FormData()
        form.add_field("purpose", "batch")
        form.add_field("file", jsonl, filename=filename, content_type="application/jsonl")
        data = await self._json("file upload", "POST", "/files", data=form)
        if not isinstance(data.get("id"), str):
            raise ModelError("batch API file upload: the reply has no file id")
        return str(data["id"])

    async def create(self, input_file_id: str, *, endpoint: str = CHAT_ENDPOINT,
                     window: str = "24h", metadata: dict[str, str] | None = None
                     ) -> dict[str, Any]:
        payload: _BatchCreate = {"input_file_id": input_file_id, "endpoint": endpoint,
                                 "completion_window": window}
        if metadata:
            payload["metadata"] = metadata
        data = await self._json("batch create", "POST", "/batches", json=payload)
        if not isinstance(data.get("id"), str):
            raise ModelError("batch API batch create: the reply has no batch id")
        return data

    async def retrieve(self, batch_id: str) -> dict[str, Any]:
        return await self._json("batch retrieve", "GET", f"/batches/{batch_id}")

    async def content(self, file_id: str) -> bytes:
        return await self._call("file download", "GET", f"/files/{file_id}/content")
