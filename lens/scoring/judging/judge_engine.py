"""The one judge engine: verdicts reused from the run's events, calls made under a limit, each
new verdict recorded; lens's judge (:mod:`lens.scoring.judging.judge`) and the published protocols'
(:mod:`lens.scoring.protocols.run`) both ask through it.

Every verdict is appended to ``events.jsonl`` as a ``judge_verdict`` event under its task key
(a hash of the judge model, the prompts and the task). Scoring the same run again with the same
judge reads them back and makes no new model call; another judge model has other keys. A failed
call (the model stack gave up after its retries) is not stored, so the next scoring asks again.
A reply that cannot be read is asked once more when the task says how (a format reminder).

The transport is the judge's model client: a synchronous one is asked under the concurrency
limit; a client that gathers calls into a provider batch (``batched = True``, as
:class:`lens.scoring.judging.batch_judge.BatchJudgeClient`) is given every call at once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

import anyio

from lens.models.base import Completion, CompletionRequest, ModelClient, ModelError
from lens.runs.store import RunStore
from lens.scoring.judging.judge_prompts import INVALID

# A batched transport answers every call it is given together: no limit on calls in flight.
UNLIMITED = 1_000_000


@dataclass(frozen=True)
class Verdict:
    # "A", "B", "TIE" for pairwise; "present"/"partial"/"absent" for fact grades; "correct" or
    # "wrong" for a protocol's; "invalid" when no reply (nor the one retry) could be read.
    value: str
    raw: str
    reused: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    # Model calls behind this verdict: 2 when the first reply was unreadable.
    attempts: int = 1

    @property
    def readable(self) -> bool:
        return self.value != INVALID


@dataclass
class JudgeUsage:
    """What one scoring did: new model calls, verdicts read back, failures, format retries."""

    calls: int = 0
    reused: int = 0
    errors: int = 0
    retries: int = 0
    error_messages: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Ask:
    """One judge call as the engine makes it: the task's key, its label in the event, the
    request, how a reply is read into a verdict value, and (optionally) the request that asks
    again after an unreadable reply, given that reply's text."""

    key: str
    label: str
    request: CompletionRequest
    read: Callable[[str], str]
    retry: Callable[[str], CompletionRequest] | None = None
    # How the call is made when not by the client's complete (a local judge read by its
    # next-token probabilities: lens.scoring.judging.judge).
    complete: Callable[[CompletionRequest], Awaitable[Completion]] | None = None


class VerdictTotals(TypedDict):
    verdicts: int
    invalid: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None


def verdict_totals(verdicts: Iterable[Verdict]) -> VerdictTotals:
    """Tokens and cost of the verdicts a score rests on, whether asked now or earlier: the judge
    usage of the scores, the same on every re-scoring."""
    vs = list(verdicts)
    costs = [v.cost_usd for v in vs]
    return {
        "verdicts": len(vs),
        "invalid": sum(not v.readable for v in vs),
        "prompt_tokens": sum(v.prompt_tokens for v in vs),
        "completion_tokens": sum(v.completion_tokens for v in vs),
        "cost_usd": (None if any(c is None for c in costs) else sum(c for c in costs if c)),
    }


def _add_cost(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


class JudgeEngine:
    """Asks judge calls, reusing the verdicts stored in the run under the same model and
    ``scope`` (None for lens's own tasks, a protocol's name for its tasks)."""

    def __init__(self, client: ModelClient, store: RunStore | None, *, concurrency: int = 16,
                 scope: str | None = None) -> None:
        self.client = client
        self.model = f"{client.provider}/{client.model}"
        self.store = store
        self.scope = scope
        batched = bool(getattr(client, "batched", False))
        self.limiter = anyio.CapacityLimiter(UNLIMITED if batched else max(1, concurrency))
        self.usage = JudgeUsage()
        self._known: dict[str, Verdict] = {}
        if store is not None:
            for e in store.events():
                if (e.get("kind") == "judge_verdict" and e.get("model") == self.model
                        and e.get("protocol") == scope and isinstance(e.get("verdict"), str)):
                    self._known[e["key"]] = Verdict(
                        e["verdict"], str(e.get("raw", "")), True,
                        int(e.get("prompt_tokens") or 0), int(e.get("completion_tokens") or 0),
                        e.get("cost_usd"), int(e.get("attempts") or 1))

    async def run(self, asks: Iterable[Ask]) -> dict[str, Verdict]:
        """Verdicts by task key; a task whose call failed is absent."""
        unique: dict[str, Ask] = {}
        for a in asks:
            unique.setdefault(a.key, a)
        out: dict[str, Verdict] = {}
        todo = []
        for key, ask in unique.items():
            if key in self._known:
                out[key] = self._known[key]
                self.usage.reused += 1
            else:
                todo.append(ask)
        async with anyio.create_task_group() as tg:
            for ask in todo:
                tg.start_soon(self._ask, ask, out)
        return out

    async def _complete(self, request: CompletionRequest,
                        call: Callable[[CompletionRequest], Awaitable[Completion]] | None = None
                        ) -> Completion | None:
        async with self.limiter:
            try:
                return await (call or self.client.complete)(request)
            except ModelError as exc:
                self.usage.errors += 1
                if len(self.usage.error_messages) < 5:
                    self.usage.error_messages.append(str(exc))
                return None

    async def _ask(self, ask: Ask, out: dict[str, Verdict]) -> None:
        first = await self._complete(ask.request, ask.complete)
        if first is None:
            return
        value, last, attempts = ask.read(first.text), first, 1
        prompt_tokens, completion_tokens = first.usage.prompt_tokens, first.usage.completion_tokens
        cost = first.cost_usd
        raw = first.text
        if value == INVALID and ask.retry is not None:
            self.usage.retries += 1
            second = await self._complete(ask.retry(first.text), ask.complete)
            if second is None:
                return
            value, last, attempts = ask.read(second.text), second, 2
            prompt_tokens += second.usage.prompt_tokens
            completion_tokens += second.usage.completion_tokens
            cost = _add_cost(cost, second.cost_usd)
            raw = f"{first.text[:1000]}\n--- after the format reminder ---\n{second.text}"
        verdict = Verdict(value, raw, False, prompt_tokens, completion_tokens, cost, attempts)
        out[ask.key] = verdict
        self._known[ask.key] = verdict
        self.usage.calls += attempts
        if self.store is not None:
            scope: Mapping[str, Any] = {} if self.scope is None else {"protocol": self.scope}
            self.store.append_event(
                "judge_verdict", ask.key, model=self.model, task=ask.label, **scope,
                verdict=value, raw=raw[:2000], prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens, latency_s=round(last.latency_s, 4),
                cached=last.cached, cost_usd=cost, attempts=attempts,
            )
