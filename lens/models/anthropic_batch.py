"""A small client for Anthropic's Message Batches API: create a batch of Messages requests,
retrieve its status, download its results (JSONL) from the ``results_url`` it gives. The
transport, retries and errors are the OpenAI batch client's (lens.models.openai_batch); only
the headers and the routes differ."""

from __future__ import annotations

from typing import Any

from lens.models.base import ModelError
from lens.models.openai_batch import OpenAIBatchAPI

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
# processing_status after which a batch changes no more.
ENDED = "ended"


class AnthropicBatchAPI(OpenAIBatchAPI):
    def __init__(self, base_url: str | None, api_key: str, *, timeout_s: float = 120.0,
                 attempts: int = 4, backoff_s: float = 1.0) -> None:
        super().__init__(base_url or DEFAULT_BASE_URL, api_key, timeout_s=timeout_s,
                         attempts=attempts, backoff_s=backoff_s)
        self._headers = {"x-api-key": api_key, "anthropic-version": API_VERSION}

    async def create_batch(self, requests: list[dict[str, Any]]) -> dict[str, Any]:
        data = await self._json("batch create", "POST", "/v1/messages/batches",
                                json={"requests": requests})
        if not isinstance(data.get("id"), str):
            raise ModelError("message batches create: the reply has no batch id")
        return data

    async def retrieve(self, batch_id: str) -> dict[str, Any]:
        return await self._json("batch retrieve", "GET", f"/v1/messages/batches/{batch_id}")

    async def results(self, batch_id: str, results_url: str | None) -> bytes:
        if results_url and results_url.startswith(self.base_url):
            path = results_url[len(self.base_url):]
        else:
            # A results_url elsewhere is not followed (it would receive the API key).
            path = f"/v1/messages/batches/{batch_id}/results"
        return await self._call("results download", "GET", path)
