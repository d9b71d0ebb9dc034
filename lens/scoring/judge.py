"""The LLM judge runner: concurrency, the one format retry, and verdicts kept in the run's events.

Every verdict is appended to ``events.jsonl`` as a ``judge_verdict`` event keyed by a hash of
(judge model, judge prompts, task kind, prompt). Re-scoring the same run with the same judge
reads them back and makes no new model call; another judge model has other keys and is asked
afresh. Failed calls (the model stack gave up after its retries) are not stored, so the next
scoring asks again. A reply that cannot be read is asked once more with a format reminder; if
that reply cannot be read either, the verdict is ``invalid`` (stored, so re-scoring is
identical) and every score resting on it is missing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import anyio

from lens.models.base import Completion, CompletionRequest, Message, ModelClient, ModelError
from lens.scoring.judge_prompts import (
    FACT_GRADE_TEMPLATE,
    INVALID,
    JUDGE_SYSTEM,
    KINDS,
    PAIRWISE_TEMPLATE,
    judge_prompts_hash,
)
from lens.store import RunStore

_PROMPTS_HASH = judge_prompts_hash()

# Answers are cut to this many characters in judge prompts: budgets keep real answers far
# shorter, and a runaway answer must not blow the judge's context.
MAX_ANSWER_CHARS = 8000


def _clip(text: str) -> str:
    # An answer must not close its own delimiters and pose as the other response.
    text = text.replace("<<<", "< < <").replace(">>>", "> > >")
    return text if len(text) <= MAX_ANSWER_CHARS else text[:MAX_ANSWER_CHARS] + " …[cut]"


@dataclass(frozen=True)
class JudgeTask:
    kind: str  # a key of judge_prompts.KINDS
    prompt: str

    def key(self, model: str) -> str:
        payload = json.dumps([model, _PROMPTS_HASH, self.kind, self.prompt], ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def pairwise_task(question: str, criterion: str, a: str, b: str) -> JudgeTask:
    return JudgeTask("pairwise", PAIRWISE_TEMPLATE.format(question=question, criterion=criterion,
                                                          a=_clip(a), b=_clip(b)))


def fact_grade_task(question: str, fact: str, answer: str) -> JudgeTask:
    return JudgeTask("fact_grade", FACT_GRADE_TEMPLATE.format(question=question, fact=fact,
                                                              answer=_clip(answer)))


@dataclass(frozen=True)
class Verdict:
    # "A", "B", "TIE" for pairwise; "present"/"partial"/"absent" for fact grades; "invalid"
    # when neither the reply nor the one retry could be read.
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


def parse_verdict(kind: str, text: str) -> str:
    return KINDS[kind].parse(text)


@dataclass
class JudgeUsage:
    """What one scoring did: new model calls, verdicts read back, failures, format retries."""

    calls: int = 0
    reused: int = 0
    errors: int = 0
    retries: int = 0
    error_messages: list[str] = field(default_factory=list)


def verdict_totals(verdicts: Iterable[Verdict]) -> dict[str, Any]:
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


class Judge:
    """Runs judge tasks concurrently under a limit, reusing verdicts stored in the run."""

    def __init__(self, client: ModelClient, store: RunStore | None = None, *,
                 concurrency: int = 16, max_tokens: int | None = 200) -> None:
        self.client = client
        self.model = f"{client.provider}/{client.model}"
        self.store = store
        self.limiter = anyio.CapacityLimiter(max(1, concurrency))
        self.max_tokens = max_tokens
        self.usage = JudgeUsage()
        self._known: dict[str, Verdict] = {}
        if store is not None:
            for e in store.events():
                if (e.get("kind") == "judge_verdict" and e.get("model") == self.model
                        and isinstance(e.get("verdict"), str)):
                    self._known[e["key"]] = Verdict(
                        e["verdict"], str(e.get("raw", "")), True,
                        int(e.get("prompt_tokens") or 0), int(e.get("completion_tokens") or 0),
                        e.get("cost_usd"), int(e.get("attempts") or 1))

    async def run(self, tasks: Iterable[JudgeTask]) -> dict[str, Verdict]:
        """Verdicts by task key; a task whose call failed is absent."""
        unique: dict[str, JudgeTask] = {}
        for t in tasks:
            unique.setdefault(t.key(self.model), t)
        out: dict[str, Verdict] = {}
        todo = []
        for key, task in unique.items():
            if key in self._known:
                out[key] = self._known[key]
                self.usage.reused += 1
            else:
                todo.append((key, task))
        async with anyio.create_task_group() as tg:
            for key, task in todo:
                tg.start_soon(self._ask, key, task, out)
        return out

    def _request(self, key: str, task: JudgeTask, messages: list[Message]) -> CompletionRequest:
        return CompletionRequest(
            messages=messages,
            response_schema=KINDS[task.kind].schema,
            temperature=0.0,
            max_tokens=self.max_tokens,
            seed=int.from_bytes(bytes.fromhex(key[:8]), "big"),
            role="judge",
        )

    async def _complete(self, request: CompletionRequest) -> Completion | None:
        async with self.limiter:
            try:
                return await self.client.complete(request)
            except ModelError as exc:
                self.usage.errors += 1
                if len(self.usage.error_messages) < 5:
                    self.usage.error_messages.append(str(exc))
                return None

    async def _ask(self, key: str, task: JudgeTask, out: dict[str, Verdict]) -> None:
        kind = KINDS[task.kind]
        messages = [Message(role="system", content=JUDGE_SYSTEM),
                    Message(role="user", content=task.prompt)]
        first = await self._complete(self._request(key, task, messages))
        if first is None:
            return
        value, last, attempts = kind.parse(first.text), first, 1
        prompt_tokens, completion_tokens = first.usage.prompt_tokens, first.usage.completion_tokens
        cost = first.cost_usd
        raw = first.text
        if value == INVALID:
            # One retry, showing the model its own reply and the exact format wanted.
            self.usage.retries += 1
            retry = [*messages, Message(role="assistant", content=first.text[:2000]),
                     Message(role="user", content=kind.reminder)]
            second = await self._complete(self._request(key, task, retry))
            if second is None:
                return
            value, last, attempts = kind.parse(second.text), second, 2
            prompt_tokens += second.usage.prompt_tokens
            completion_tokens += second.usage.completion_tokens
            cost = _add_cost(cost, second.cost_usd)
            raw = f"{first.text[:1000]}\n--- after the format reminder ---\n{second.text}"
        verdict = Verdict(value, raw, False, prompt_tokens, completion_tokens, cost, attempts)
        out[key] = verdict
        self._known[key] = verdict
        self.usage.calls += attempts
        if self.store is not None:
            self.store.append_event(
                "judge_verdict", key, model=self.model, task=task.kind, verdict=value,
                raw=raw[:2000], prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                latency_s=round(last.latency_s, 4), cached=last.cached, cost_usd=cost,
                attempts=attempts,
            )
