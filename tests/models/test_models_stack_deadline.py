"""The stack's per-call deadline: a hung backend is timed out and retried, while a cancellation
from outside (the agent's time budget, a failing sibling) stays a cancellation."""

from __future__ import annotations

import anyio
import pytest

from lens.models.base import Completion, CompletionRequest, Message, ModelError, Usage
from lens.models.limits import EndpointLimiter, LimitSettings
from lens.models.retry import RetryPolicy
from lens.models.stack import StackClient
from lens.models.usage import UsageMeter


class HangingBackend:
    provider = "stub"
    model = "hangs"

    def __init__(self, answer_on_call: int | None = None) -> None:
        self.calls = 0
        self.answer_on_call = answer_on_call
        self.called = anyio.Event()

    async def complete(self, request: CompletionRequest) -> Completion:
        self.calls += 1
        self.called.set()
        if self.calls == self.answer_on_call:
            return Completion(text="ok", usage=Usage(prompt_tokens=3, completion_tokens=1))
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        return None


def stack(backend: HangingBackend, timeout_s: float | None, retries: int) -> StackClient:
    return StackClient(backend, meter=UsageMeter(),
                       limiter=EndpointLimiter(LimitSettings(max_concurrency=4)),
                       retry=RetryPolicy(max_retries=retries, base_wait_s=0.01, max_wait_s=0.02),
                       timeout_s=timeout_s)


def request() -> CompletionRequest:
    return CompletionRequest(messages=[Message(role="user", content="hi")])


@pytest.mark.anyio
async def test_a_hung_call_times_out_and_the_retry_answers() -> None:
    backend = HangingBackend(answer_on_call=2)
    completion = await stack(backend, timeout_s=0.2, retries=2).complete(request())
    assert completion.text == "ok" and completion.retries == 1 and backend.calls == 2


@pytest.mark.anyio
async def test_a_call_that_never_answers_ends_with_a_timeout_error() -> None:
    backend = HangingBackend()
    with pytest.raises(ModelError, match=r"no answer within 0\.1 s"):
        await stack(backend, timeout_s=0.1, retries=1).complete(request())
    assert backend.calls == 2


@pytest.mark.anyio
async def test_an_outside_cancellation_is_not_taken_for_a_timeout() -> None:
    backend = HangingBackend()
    client = stack(backend, timeout_s=30, retries=3)
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.complete, request())
            # Cancelled from outside once the call is under way, as a time budget would.
            await backend.called.wait()
            scope.cancel()
    assert scope.cancelled_caught
    assert backend.calls == 1  # cancelled, not retried


@pytest.mark.anyio
async def test_no_deadline_when_the_backend_is_untimed() -> None:
    backend = HangingBackend()
    client = stack(backend, timeout_s=None, retries=3)
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.complete, request())
            await backend.called.wait()
            await anyio.sleep(0.3)  # at least this long inside the call: no deadline ended it
            scope.cancel()
    assert scope.cancelled_caught and backend.calls == 1
