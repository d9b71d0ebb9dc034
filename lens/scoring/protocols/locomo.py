"""The LoCoMo protocol: the dataset's token F1 and the LLM-judge accuracy ("J") of memory papers.

Definitions (implemented here from their published descriptions):

* F1, from LoCoMo's evaluation script (``task_eval/evaluation.py`` of the LoCoMo release, Maharana
  et al., 2024): an answer is normalised (commas dropped, lower-cased, punctuation removed, the
  words a/an/the/and removed, whitespace collapsed), split into words and each word Porter-
  stemmed; F1 is the harmonic mean of the shared-token precision and recall (0 when nothing is
  shared). Category 1 (multi-hop) answers are lists: answer and gold are split on commas and the
  score is the mean, over gold parts, of the best F1 of any answer part. Category 3 (open-domain)
  golds keep only the text before the first ';'. Category 5 (adversarial) scores 1 when the
  answer contains "not mentioned" or "no information available", else 0.
* J, the judge accuracy of the Mem0 paper (Chhikara et al., 2025, its ``llm_judge`` script): a
  generous CORRECT/WRONG label per answer from the gold, same-topic and same-date answers
  counting as correct, asked as JSON; category 5 is left out of J.

Category numbering: the data's numbers are used (1 multi-hop, 2 temporal, 3 open-domain,
4 single-hop, 5 adversarial). Papers disagree on the names of 1 and 4; this numbering is the one
the evaluation script implies (it applies the multi-answer rule to 1; 4 is the most numerous,
single-fact category). Tables follow the paper's order: single-hop, multi-hop, temporal,
open-domain, adversarial.
"""

from __future__ import annotations

import functools
import re
import string
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from lens.data.dataset import Question
from lens.scoring.protocols.base import Protocol, ProtocolTask, json_span, mean

CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
                  5: "adversarial"}
ORDER = ("single-hop", "multi-hop", "temporal", "open-domain", "adversarial")
ADVERSARIAL = 5
# Phrases LoCoMo's adversarial rule accepts as "the conversation does not say".
ABSTAIN_PHRASES = ("no information available", "not mentioned")

_PUNCT = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")

J_PROMPT_ID = "locomo-j@1"
J_PROMPT = """\
Label a generated answer to a question as CORRECT or WRONG against a gold answer.

The question is one user asking another about something they should know from their earlier \
conversations. The gold answer is usually short and names the topic (for instance, question: \
"What did I bring back from my last trip to Hawaii?", gold answer: "A shell necklace"). The \
generated answer may be much longer: grade generously, and count it CORRECT as long as it \
addresses the same topic as the gold answer.

For questions about time, the gold answer is a date, month, year or period. The generated answer \
may be longer or use relative references ("last Tuesday", "next month"): count it CORRECT if it \
refers to the same date or period, whatever the format ("May 7th" and "7 May" are the same date).

Question: {question}
Gold answer: {gold}
Generated answer: {answer}

Explain your reasoning in one short sentence, then give the label. Never use both words CORRECT \
and WRONG. Reply as JSON: {{"reason": "<one sentence>", "label": "CORRECT" | "WRONG"}}"""

J_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"reason": {"type": "string"},
                   "label": {"type": "string", "enum": ["CORRECT", "WRONG"]}},
    "required": ["label"],
    "additionalProperties": False,
}


@functools.cache
def _stemmer() -> Any:
    from nltk.stem.porter import PorterStemmer

    return PorterStemmer()


def normalize(text: str) -> str:
    text = text.replace(",", "").lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def tokens(text: str) -> list[str]:
    stem = _stemmer().stem
    return [stem(w) for w in normalize(text).split()]


def token_f1(answer: str, gold: str) -> float:
    a, g = tokens(answer), tokens(gold)
    same = sum((Counter(a) & Counter(g)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(a), same / len(g)
    return 2 * precision * recall / (precision + recall)


def multi_answer_f1(answer: str, gold: str) -> float:
    parts = [p.strip() for p in answer.split(",")]
    golds = [g.strip() for g in gold.split(",")]
    return sum(max(token_f1(p, g) for p in parts) for g in golds) / len(golds)


def abstains(answer: str) -> bool:
    low = answer.lower()
    return any(p in low for p in ABSTAIN_PHRASES)


def category_f1(category: int, answer: str, gold: str) -> float:
    if category == ADVERSARIAL:
        return 1.0 if abstains(answer) else 0.0
    if category == 1:
        return multi_answer_f1(answer, gold)
    if category == 3:
        gold = gold.split(";")[0].strip()
    return token_f1(answer, gold)


def _category(q: Question) -> int | None:
    c = q.meta.get("category")
    return c if isinstance(c, int) and c in CATEGORY_NAMES else None


class LocomoProtocol(Protocol):
    name = "locomo"
    version = 1
    title = "LoCoMo"
    group_label = "category"
    group_order = ORDER
    metrics = ("locomo_f1", "locomo_j")
    published_judge = "openai/gpt-4o-mini"
    prompts: Mapping[str, str] = {J_PROMPT_ID: J_PROMPT}
    source = ("F1: LoCoMo's evaluation script (task_eval/evaluation.py); J: the Mem0 paper's "
              "llm_judge script")

    def check(self, q: Question) -> str | None:
        if _category(q) is None:
            return (f"question {q.question_id} has no LoCoMo category in meta.category (import "
                    "the data with `lens datasets import --format locomo`)")
        return None

    def group(self, q: Question) -> str:
        return CATEGORY_NAMES[_category(q) or 0]

    def applies(self, metric: str, q: Question) -> bool:
        return not (metric == "locomo_j" and _category(q) == ADVERSARIAL)

    def mechanical(self, q: Question, answer: str) -> dict[str, float | None]:
        cat = _category(q) or 0
        # Outside the adversarial category a "not mentioned" answer is a wrong answer; its
        # rate shows a system that games the adversarial rule by abstaining everywhere.
        return {"locomo_f1": category_f1(cat, answer, q.ground_truth.canonical_answer),
                "locomo_not_mentioned": None if cat == ADVERSARIAL else float(abstains(answer))}

    def tasks(self, q: Question, answer: str) -> dict[str, ProtocolTask]:
        if not self.applies("locomo_j", q):
            return {}
        prompt = J_PROMPT.format(question=q.prompt, gold=q.ground_truth.canonical_answer,
                                 answer=answer)
        return {"locomo_j": ProtocolTask(J_PROMPT_ID, prompt, schema=J_SCHEMA)}

    def parse(self, prompt_id: str, text: str) -> float | None:
        data = json_span(text)
        if isinstance(data, dict) and isinstance(data.get("label"), str):
            label = data["label"].strip().upper()
            return 1.0 if label == "CORRECT" else 0.0 if label == "WRONG" else None
        words = set(re.findall(r"\b(CORRECT|WRONG)\b", text.upper()))
        return None if len(words) != 1 else 1.0 if words == {"CORRECT"} else 0.0

    def overall(self, rows: Sequence[tuple[str, Mapping[str, float | None]]]
                ) -> dict[str, float | None]:
        non_adv = [m for g, m in rows if g != "adversarial"]
        return {
            # LoCoMo's paper: F1 over every category, the adversarial one included.
            "locomo_f1": mean([m.get("locomo_f1") for _, m in rows]),
            # Memory papers' tables: F1 and J over categories 1-4.
            "locomo_f1_no_adversarial": mean([m.get("locomo_f1") for m in non_adv]),
            "locomo_j": mean([m.get("locomo_j") for m in non_adv]),
            "locomo_not_mentioned_rate": mean([m.get("locomo_not_mentioned") for m in non_adv]),
        }
