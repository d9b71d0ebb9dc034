"""Small sources in LoCoMo's and LongMemEval's public formats, imported through lens's importers,
and stored runs whose answers the tests choose."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from lens.data.datagen.generate import dumps
from lens.data.importers import import_locomo, import_longmemeval
from lens.models.base import Completion, CompletionRequest, Usage
from tests.scoring.scoring_fixtures import build_run, record


def _turns(session: int, texts: list[tuple[str, str]]) -> list[dict[str, Any]]:
    return [{"speaker": who, "dia_id": f"D{session}:{i + 1}", "text": text}
            for i, (who, text) in enumerate(texts)]


def locomo_source() -> list[dict[str, Any]]:
    conv = {
        "speaker_a": "Caroline", "speaker_b": "Mel",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": _turns(1, [("Caroline", "I adopted a dog named Rex!"),
                                ("Mel", "I went hiking yesterday, and I love painting.")]),
        "session_2_date_time": "10:37 am on 27 June, 2023",
        "session_2": _turns(2, [("Caroline", "Rex turned one on 7 May 2023."),
                                ("Mel", "Art keeps me sane.")]),
    }
    qa = [
        {"question": "What pet does Caroline have?", "answer": "a dog", "evidence": ["D1:1"],
         "category": 4},
        {"question": "What does Mel like to do?", "answer": "painting, hiking",
         "evidence": ["D1:2"], "category": 1},
        {"question": "When did Rex turn one?", "answer": "7 May 2023", "evidence": ["D2:1"],
         "category": 2},
        # The evidence id names no turn of this conversation (a known variant of the data).
        {"question": "Would Mel enjoy an art class?", "answer": "Likely yes; she enjoys art",
         "evidence": ["D2:2", "D9:9"], "category": 3},
        {"question": "What did Mel name her cat?", "adversarial_answer": "Rex",
         "evidence": ["D1:1"], "category": 5},
        {"question": "Where did Caroline travel in May?", "adversarial_answer": "Paris",
         "evidence": [], "category": 5},
    ]
    return [{"sample_id": "conv-1", "conversation": conv, "qa": qa}]


# The same six questions, answered faithfully (hand-computed scores in the tests).
LOCOMO_FAITHFUL = ["She has a dog named Rex", "hiking, swimming", "On 7 May 2023.", "yes",
                   "That is not mentioned in the conversation.", "He went to Paris."]
LOCOMO_NOT_MENTIONED = ["Not mentioned in the conversation."] * 6


def _lme_item(qid: str, qtype: str, question: str, answer: str) -> dict[str, Any]:
    return {
        "question_id": qid, "question_type": qtype, "question": question, "answer": answer,
        "question_date": "2023/06/30 (Fri) 10:00",
        "haystack_session_ids": [f"noise_{qid}", f"answer_{qid}"],
        "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/22 (Mon) 14:02"],
        "haystack_sessions": [
            [{"role": "user", "content": "Suggest a pasta recipe."},
             {"role": "assistant", "content": "Try cacio e pepe."}],
            [{"role": "user", "content": f"Note for later: {answer}", "has_answer": True}]],
        "answer_session_ids": [f"answer_{qid}"],
    }


def longmemeval_source() -> list[dict[str, Any]]:
    return [
        _lme_item("u1", "single-session-user", "What degree did I get?",
                  "Business Administration"),
        _lme_item("p1", "single-session-preference", "Suggest a dinner for me.",
                  "The user prefers vegetarian Italian dishes"),
        _lme_item("a1", "single-session-assistant", "Which tent did you recommend?",
                  "The Alpine 2"),
        _lme_item("m1", "multi-session", "How many bikes do I have?", "4"),
        _lme_item("t1", "temporal-reasoning", "How many days between my trips?", "18 days"),
        _lme_item("k1", "knowledge-update", "Where do I work now?", "Acme"),
        _lme_item("m2_abs", "multi-session", "How often did I visit the dentist?",
                  "You did not mention the dentist."),
    ]


LME_FAITHFUL = ["You graduated in Business Administration.",
                "Try a vegetarian risotto, since you like vegetarian Italian dishes.",
                "I recommended the Zephyr tent.", "You have 4 bikes.",
                "19 days passed between the trips.", "You work at Initech.",
                "You never mentioned the dentist, so I cannot say."]
LME_DONT_KNOW = ["I don't know."] * 7


def write_source(tmp: Path, name: str, data: Any) -> Path:
    path = tmp / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def imported(tmp: Path, fmt: str) -> Path:
    """The fixture imported into a LENS dataset file."""
    if fmt == "locomo":
        data = import_locomo(write_source(tmp, "locomo10.json", locomo_source()))
    else:
        data = import_longmemeval(write_source(tmp, "longmemeval_s.json", longmemeval_source()))
    out = tmp / f"{fmt}.lens.json"
    out.write_text(dumps(data), encoding="utf-8")
    return out


def stored_run(tmp: Path, dataset: Path, answers: dict[str, list[str]], *,
               name: str = "run") -> Path:
    """A run with one adapter per entry of ``answers`` (its answers in question order)."""
    data = json.loads(dataset.read_text(encoding="utf-8"))
    records = []
    for adapter, texts in answers.items():
        for q, text in zip(data["questions"], texts, strict=True):
            records.append(record(q["question_id"], text, adapter=adapter, scope=q["scope_id"],
                                  checkpoint=q["checkpoint_after"]))
    return build_run(tmp / name, dataset, records)


def prompt_of(request: CompletionRequest) -> str:
    return request.messages[-1].content


def lme_verdict(prompt: str) -> str:
    """A content-only judge for the LongMemEval prompts: yes when the response holds the gold
    answer (off by one day allowed for temporal ones, the rubric's key word for preference
    ones), or, for abstention prompts, when it says it cannot answer."""
    response = prompt.split("Model Response: ", 1)[1].split("\n\n", 1)[0].lower()
    if "unanswerable" in prompt:
        return "Yes." if re.search(r"never mentioned|cannot say|don't know", response) else "No."
    if "Rubric: " in prompt:
        return "yes" if "vegetarian" in response else "no"
    gold = prompt.split("Correct Answer: ", 1)[1].split("\n\n", 1)[0].lower()
    if "off-by-one" in prompt:
        n = int(gold.split()[0])
        return "yes" if re.search(rf"\b({n - 1}|{n}|{n + 1}) days\b", response) else "no"
    return "yes" if gold in response else "no"


class PolicyJudge:
    """A deterministic judge client whose reply is ``policy(prompt)``."""

    provider = "scripted"

    def __init__(self, name: str, policy: Any) -> None:
        self.model = name
        self.policy = policy
        self.requests: list[CompletionRequest] = []

    async def complete(self, request: CompletionRequest) -> Completion:
        self.requests.append(request)
        return Completion(text=self.policy(prompt_of(request)),
                          usage=Usage(prompt_tokens=200, completion_tokens=2),
                          provider=self.provider, model=self.model, cost_usd=0.0)

    async def aclose(self) -> None:
        return None
