"""Judges with known habits, for the fake OpenAI-compatible server (and in-process clients).

- ``oracle``: knows the faithful answers (which state every key fact) and prefers whichever
  response is one; grades a key fact present only in a faithful answer (an honest judge, by
  construction);
- ``longer``: prefers the longer response; grades a fact present whenever its words appear,
  pasted records included (the length-biased, stuffing-prone judge);
- ``position_a``: always answers A;
- ``garbage``: never replies in a readable format.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping

from tests.support.fake_openai import RecordedRequest, Reply


def _between(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0]


def _prompt_of(messages: list[dict]) -> str:
    # The task prompt is the first user message; a format retry appends a reminder after it.
    return next(m.get("content", "") for m in messages if m.get("role") == "user")


def _norm(text: str) -> str:
    no_refs = re.sub(r"\[[^\]]+\]", " ", text).lower()
    return " ".join(re.sub(r"[^a-z0-9]+", " ", no_refs).split())


Policy = Callable[[str], str]


def oracle(faithful: Iterable[str] | Mapping[str, Iterable[str]]) -> Policy:
    """Given {question prompt: its faithful answers}, it also knows which question an answer
    answers (another question's canonical answer is not faithful to this one)."""
    by_question = ({q: [_norm(f) for f in fs] for q, fs in faithful.items()}
                   if isinstance(faithful, Mapping) else None)
    everywhere = [] if by_question is not None else [_norm(f) for f in faithful]

    def is_faithful(answer: str, prompt: str) -> bool:
        a = _norm(answer)
        good = everywhere
        if by_question is not None:
            good = by_question.get(_between(prompt, "Question: ", "\n"), [])
        return any(g and g in a for g in good) and not a.startswith("here is what the records")

    def decide(prompt: str) -> str:
        if "Criterion:" in prompt:
            a = is_faithful(_between(prompt, "Response A:\n<<<\n", "\n>>>"), prompt)
            b = is_faithful(_between(prompt, "Response B:\n<<<\n", "\n>>>"), prompt)
            v = "A" if a and not b else "B" if b and not a else "TIE"
            return json.dumps({"verdict": v, "reason": "content"})
        answer = _between(prompt, "Answer:\n<<<\n", "\n>>>")
        return json.dumps({"grade": "present" if is_faithful(answer, prompt) else "absent"})

    return decide


def longer(prompt: str) -> str:
    if "Criterion:" in prompt:
        a = _between(prompt, "Response A:\n<<<\n", "\n>>>")
        b = _between(prompt, "Response B:\n<<<\n", "\n>>>")
        return json.dumps({"verdict": "A" if len(a) >= len(b) else "B"})
    fact = _between(prompt, "Key fact: ", "\n").lower()
    answer = _between(prompt, "Answer:\n<<<\n", "\n>>>").lower()
    words = re.findall(r"[a-z0-9]{3,}", fact)
    return json.dumps({"grade": "present" if all(w in answer for w in words) else "absent"})


def position_a(prompt: str) -> str:
    if "Criterion:" in prompt:
        return json.dumps({"verdict": "A"})
    return json.dumps({"grade": "present"})


def garbage(prompt: str) -> str:
    return "Both responses have their merits, and I would rather not pick one."


def responder(policy: Policy) -> Callable[[RecordedRequest], Reply]:
    def respond(req: RecordedRequest) -> Reply:
        return Reply.text(policy(_prompt_of(req.body.get("messages", []))),
                          prompt_tokens=300, completion_tokens=12)

    return respond
