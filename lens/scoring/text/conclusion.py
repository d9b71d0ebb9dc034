"""Whether an answer draws the question's conclusion, its opposite, or both.

A ground truth may carry a conclusion (:func:`lens.data.ground_truth_text.parse_conclusion`): a
verdict ("yes" or "no") and the claim it stands for ("no: DEP-4230 did not cause the rise in
auth p99 latency"), or a claim alone ("moderate and rising"). An answer's own verdicts are the
yes/no words that open one of its sentences ("No.", "Not yet", "Too early to call", "Yes,
already", "No action is needed"), after framing words such as "Either:", "Or, equally
possible:" or a JSON key. The answer:

- **states** the conclusion when it gives the verdict and never its opposite, or, giving no
  verdict, states the claim (by the fact matcher, so a denied or doubted claim does not count);
- **contradicts** it when its only verdict is the opposite one;
- states **both** when it gives both verdicts: an answer that concludes either way concludes
  nothing;
- leaves it **absent** otherwise.

A contradicted or two-way conclusion takes every fact credit of the question with it (see
``mechanical.fact_recall``): figures stated in support of the wrong answer are not a right
answer. The check reads verdict words, so a conclusion paraphrased without one ("DNS looks
healthy") is found only through its claim; it is a lower bound, like the matcher.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from lens.data.ground_truth_text import parse_conclusion
from lens.scoring.text.facts import AnswerText, FactMatcherSettings, match_fact

Status = Literal["stated", "absent", "contradicted", "both"]
# Words that frame a sentence without being its verdict: "Either: No. …", "Or, equally
# possible: Yes …", '{"answer": "No. …', "**Verdict:** No".
_FRAME = re.compile(
    r"^(?:[\W_\d]+|(?:either|or|and|alternatively|equally|possible|possibly|perhaps|maybe|so|well"
    r"|answer|conclusion|verdict|summary|short|bottom|line|in|tl;?dr|result|finding|final"
    r"|overall)\b)", re.I)
_YES = re.compile(r"^(?:yes|yeah|yep|affirmative|already)\b", re.I)
# "No." is a verdict, "No user-facing impact yet" a statement: a bare "no" counts only before
# punctuation.
_NO = re.compile(r"^(?:(?:no|nope)(?=\s*(?:[.,:;!\u2014-]|$))|not\s+(?:yet|as\s+of|so|really"
                 r"|at\s+all|enough|that\s+I\s+can\s+see)\b|too\s+(?:early|soon)\b"
                 r"|no\s+(?:action|need|change|intervention|further\s+action)\b"
                 r"|nothing\s+(?:needs|to\s+do|should|has\s+to)\b|negative\b)", re.I)
_SENTENCE = re.compile(r"(?<=[.!?])(?<!\b[A-Z]\.)\s+|\n+")
MAX_FRAME_WORDS = 8


def _opening(sentence: str) -> str:
    """The sentence without the framing words before its first statement."""
    s = sentence
    for _ in range(MAX_FRAME_WORDS):
        m = _FRAME.match(s)
        if not m or not m.group(0):
            break
        s = s[m.end():]
    return s


def verdicts(answer: str) -> set[str]:
    """The verdicts ("yes", "no") that open a sentence of ``answer``."""
    found: set[str] = set()
    for sentence in _SENTENCE.split(answer):
        head = _opening(sentence.strip())
        if _YES.match(head):
            found.add("yes")
        elif _NO.match(head):
            found.add("no")
    return found


@dataclass(frozen=True)
class ConclusionCheck:
    conclusion: str
    status: Status
    verdicts: tuple[str, ...] = ()
    claim_stated: bool = False

    @property
    def credit(self) -> float:
        return 1.0 if self.status == "stated" else 0.0

    @property
    def voids_facts(self) -> bool:
        """Whether the answer's conclusion is wrong or two-way, so its facts earn nothing."""
        return self.status in ("contradicted", "both")

    def as_detail(self) -> dict[str, Any]:
        return {"conclusion": self.conclusion, "status": self.status,
                "verdicts": list(self.verdicts), "claim_stated": self.claim_stated}


def check_conclusion(conclusion: str, answer: str,
                     settings: FactMatcherSettings | None = None,
                     prepared: AnswerText | None = None) -> ConclusionCheck:
    verdict, claim = parse_conclusion(conclusion)
    said = verdicts(answer)
    claim_stated = bool(claim) and match_fact(claim, prepared or AnswerText(answer),
                                              settings).matched
    status: Status
    if verdict is not None and said:
        opposite = "no" if verdict == "yes" else "yes"
        if said == {verdict}:
            status = "stated"
        elif said == {opposite}:
            status = "contradicted"
        else:
            status = "both"
    else:
        status = "stated" if claim_stated else "absent"
    return ConclusionCheck(conclusion, status, tuple(sorted(said)), claim_stated)


def conclusion_backed(*, fact_credited: bool, claim_stated: bool, has_facts: bool,
                      cites_evidence: bool) -> bool:
    """Whether a stated conclusion may earn its point, whoever grades the facts (the matcher,
    the offline grader or a judge). A bare verdict is a coin flip, and "no" is what an agent
    with no memory says ("No, there are no records of a spike"): a conclusion counts only when
    the answer backs it (a key fact credited, the conclusion's own claim stated, or no key
    facts to back it with) and cites a record it received that exists (evidence, not a
    guess)."""
    return cites_evidence and (fact_credited or claim_stated or not has_facts)


def conclusion_as_fact(conclusion: str) -> str:
    """The conclusion as a statement a judge can grade like a key fact."""
    verdict, claim = parse_conclusion(conclusion)
    if verdict is None:
        return f"The answer concludes: {claim}"
    if not claim:
        return f"The answer to the question is {verdict.capitalize()}"
    return f"The answer to the question is {verdict.capitalize()}: {claim}"
