"""lens's judge tasks (pairwise comparisons, fact grades) and the judge that asks them through
the one judge engine (:mod:`lens.scoring.judging.judge_engine`: verdicts reused from the run's
events, the concurrency limit, each verdict recorded).

A task's key is a hash of (judge model, judge prompts, task kind, prompt). A reply that cannot be
read is asked once more with a format reminder; if that reply cannot be read either, the verdict
is ``invalid`` (stored, so re-scoring is identical) and every score resting on it is missing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import anyio

from lens.models.base import Completion, CompletionRequest, Message, ModelClient
from lens.runs.store import RunStore
from lens.scoring.judging.judge_engine import Ask, JudgeEngine, JudgeUsage, Verdict, verdict_totals
from lens.scoring.judging.judge_prompts import (
    FACT_GRADE_CHOICES,
    FACT_GRADE_REPLY_START,
    FACT_GRADE_TEMPLATE,
    JUDGE_SYSTEM,
    KINDS,
    PAIRWISE_TEMPLATE,
    judge_prompts_hash,
    local_fact_verdict,
)

__all__ = ["Judge", "JudgeTask", "JudgeUsage", "Verdict", "fact_grade_task", "local_fact_prompt",
           "pairwise_task", "parse_verdict", "verdict_totals"]

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


def parse_verdict(kind: str, text: str) -> str:
    return KINDS[kind].parse(text)


def judge_messages(task: JudgeTask) -> list[Message]:
    return [Message(role="system", content=JUDGE_SYSTEM),
            Message(role="user", content=task.prompt)]


def _local_prompt(request: CompletionRequest) -> str:
    from lens.models.local_prompt import render_prompt

    return render_prompt(request) + FACT_GRADE_REPLY_START


def local_fact_prompt(question: str, fact: str, answer: str) -> str:
    """What a local model reads to grade a key fact: lens's judge prompt for it as the model
    would see it, up to the start of the one-word reply whose next token is the verdict (the
    local judge's reading, and the offline grader's)."""
    return _local_prompt(CompletionRequest(messages=judge_messages(
        fact_grade_task(question, fact, answer))))


@runtime_checkable
class ChoiceModel(Protocol):
    """A local model that gives the probabilities of a raw prompt's next token among a few
    choices (lens.models.llama_backend.LlamaCppClient)."""

    def choice_probabilities(self, prompt: str, choices: tuple[str, ...]) -> dict[str, float]:
        ...


def local_choice_model(client: ModelClient) -> ChoiceModel | None:
    """The local model behind ``client`` (itself or the backend of lens's model stack) when it
    reads next-token probabilities, else None (a hosted judge writes its verdict)."""
    backend = getattr(client, "backend", client)
    return backend if isinstance(backend, ChoiceModel) else None


class Judge:
    """Asks lens's judge tasks through the judge engine, under a concurrency limit, reusing the
    verdicts stored in the run. A local judge's fact grades are read from its probabilities of
    the verdict words (judge_prompts.LOCAL_YES_AT); every other verdict is the model's reply."""

    def __init__(self, client: ModelClient, store: RunStore | None = None, *,
                 concurrency: int = 16, max_tokens: int | None = 200) -> None:
        self.engine = JudgeEngine(client, store, concurrency=concurrency)
        self.model = self.engine.model
        self.max_tokens = max_tokens
        self._local = local_choice_model(client)

    @property
    def usage(self) -> JudgeUsage:
        return self.engine.usage

    async def run(self, tasks: Iterable[JudgeTask]) -> dict[str, Verdict]:
        """Verdicts by task key; a task whose call failed is absent."""
        return await self.engine.run(self._ask(t) for t in tasks)

    def _ask(self, task: JudgeTask) -> Ask:
        key = task.key(self.model)
        kind = KINDS[task.kind]
        messages = judge_messages(task)

        def retry(reply: str) -> CompletionRequest:
            # Showing the model its own reply and the exact format wanted.
            return self._request(key, task, [
                *messages, Message(role="assistant", content=reply[:2000]),
                Message(role="user", content=kind.reminder)])

        by_probability = self._by_probability if (
            task.kind == "fact_grade" and self._local is not None) else None
        return Ask(key, task.kind, self._request(key, task, messages), kind.parse, retry,
                   by_probability)

    async def _by_probability(self, request: CompletionRequest) -> Completion:
        """The local judge's verdict from one forward pass: the prompt as the model would read
        it, the start of the reply the schema forces, the probabilities of the verdict words."""
        assert self._local is not None
        prompt = _local_prompt(request)
        probabilities = await anyio.to_thread.run_sync(
            self._local.choice_probabilities, prompt, FACT_GRADE_CHOICES)
        return Completion(text=local_fact_verdict(probabilities), provider="llama_cpp",
                          model=self.model, cost_usd=0.0)

    def _request(self, key: str, task: JudgeTask, messages: list[Message]) -> CompletionRequest:
        return CompletionRequest(
            messages=messages,
            response_schema=KINDS[task.kind].schema,
            temperature=0.0,
            max_tokens=self.max_tokens,
            seed=int.from_bytes(bytes.fromhex(key[:8]), "big"),
            role="judge",
        )
