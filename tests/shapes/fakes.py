"""A recording model client for the consolidation baselines' unit tests."""

from __future__ import annotations

from lens.models.base import Completion, CompletionRequest, Usage


class EchoClient:
    """Answers each request with its own user prompt; records every request."""

    provider = "fake"
    model = "echo"

    def __init__(self, cost: float | None = 0.001) -> None:
        self.requests: list[CompletionRequest] = []
        self.cost = cost
        self.closed = False

    async def complete(self, request: CompletionRequest) -> Completion:
        self.requests.append(request)
        text = request.messages[-1].content
        return Completion(text=text, usage=Usage(prompt_tokens=len(text) // 4,
                                                 completion_tokens=len(text) // 8),
                          provider=self.provider, model=self.model, cost_usd=self.cost)

    async def aclose(self) -> None:
        self.closed = True
