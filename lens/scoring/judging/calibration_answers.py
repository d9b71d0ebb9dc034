"""Answers of known quality built from a dataset's ground truth, to test a judge against.

For each question: the canonical answer (correct), and the flawed answers a trustworthy
judge must rank below it:

- ``wrong``: the canonical answer with one subtle change (an identifier, a date, a number or a
  direction flipped), preferring a token that a key fact names, so the change matters;
- ``stuffed``: the question's evidence records pasted with their refs, drawing no conclusion
  (longer than the correct answer, and full of the right numbers);
- ``vague``: a short non-answer citing two refs;
- ``reversed``: the canonical answer with its conclusion reversed ("Yes." where it is No, "No
  action is needed." where action is), for questions with a yes/no conclusion;
- ``hedged``: every figure of the key facts offered with another one ("211 ms (or possibly
  252 ms)");
- ``bare_list``: the key facts' values listed with nothing said about them;
- ``other_question``: the canonical answer of another question of the same scope.

Every choice is seeded by hashlib from the data, so the same dataset gives the same answers.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import date, timedelta

from lens.data.dataset import Dataset, Question
from lens.data.ground_truth_text import fact_subject, parse_conclusion

FLAWED_KINDS = ("wrong", "stuffed", "vague", "reversed", "hedged", "bare_list", "other_question")
MAX_RECORD_CHARS = 1200
MAX_RECORDS = 3
LENGTH_MARGIN = 1.2  # one answer counts as longer at a fifth more characters

_VAGUE = (
    "The records point to some changes over this period that could matter here; it is worth "
    "watching the trend before drawing firm conclusions.",
    "There were a few notable developments in the reports around this time, and things seem "
    "to have shifted somewhat; more data would help.",
    "Several factors may be involved, and the reports suggest the situation evolved over "
    "time; it is hard to say more with confidence.",
    "Things changed somewhat over this period.",
    "Hard to say; the picture is mixed.",
)

_DIRECTIONS = {
    "rose": "fell", "fell": "rose", "rising": "falling", "falling": "rising",
    "increased": "decreased", "decreased": "increased", "increase": "decrease",
    "decrease": "increase", "increasing": "decreasing", "decreasing": "increasing",
    "higher": "lower", "lower": "higher", "climbed": "dropped", "dropped": "climbed",
    "climbing": "dropping", "above": "below", "below": "above", "before": "after",
    "after": "before", "improved": "worsened", "worsened": "improved", "up": "down",
    "down": "up", "more": "fewer", "fewer": "more", "Yes": "No", "No": "Yes",
}
_ID = re.compile(r"\b([A-Z][A-Z0-9]{1,}-)(\d+)\b")
_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_NUMBER = re.compile(r"(?<![\w.,-])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w-]|[.,]\d)")
_WORD = re.compile(r"\b(" + "|".join(sorted(_DIRECTIONS, key=len, reverse=True)) + r")\b")


def seed_of(*parts: str) -> int:
    return int.from_bytes(hashlib.sha256("\0".join(parts).encode()).digest()[:8], "big")


@dataclass(frozen=True)
class Change:
    start: int
    end: int
    old: str
    new: str
    what: str  # identifier, date, number, direction


def _candidates(text: str) -> list[Change]:
    out: list[Change] = []
    taken: list[tuple[int, int]] = []

    def add(c: Change) -> None:
        if all(c.end <= a or c.start >= b for a, b in taken):
            out.append(c)
            taken.append((c.start, c.end))

    for m in _ID.finditer(text):
        n = m.group(2)
        add(Change(m.start(), m.end(), m.group(0),
                   f"{m.group(1)}{int(n) + 1:0{len(n)}d}", "identifier"))
    for m in _DATE.finditer(text):
        try:
            d = date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            continue
        add(Change(m.start(), m.end(), m.group(0), (d + timedelta(days=3)).isoformat(), "date"))
    for m in _NUMBER.finditer(text):
        whole = int(m.group(1).replace(",", ""))
        # Big enough to be wrong, small enough to look plausible: about a third more.
        changed = whole + max(1, round(whole * 0.3))
        new = f"{changed:,}" if "," in m.group(1) else str(changed)
        add(Change(m.start(), m.end(), m.group(0), new + (m.group(2) or ""), "number"))
    for m in _WORD.finditer(text):
        add(Change(m.start(), m.end(), m.group(0), _DIRECTIONS[m.group(0)], "direction"))
    return out


def subtly_wrong(answer: str, key_facts: list[str], seed: int) -> tuple[str, Change] | None:
    """``answer`` with one change; None if nothing to change. The kind of change (identifier,
    date, number, direction) rotates with the seed; within it, a token a key fact names is
    preferred."""
    found = _candidates(answer)
    if not found:
        return None
    kinds = sorted({c.what for c in found})
    kind = kinds[seed % len(kinds)]
    of_kind = [c for c in found if c.what == kind]
    facts = " ".join(key_facts)
    named = [c for c in of_kind
             if re.search(rf"(?<![\w-]){re.escape(c.old)}(?![\w-])", facts)]
    pool = named or of_kind
    c = pool[(seed // len(kinds)) % len(pool)]
    return answer[:c.start] + c.new + answer[c.end:], c


def _stuffed(ds: Dataset, q: Question) -> str:
    scope = ds.scope(q.scope_id)
    episodes = {e.episode_id: e for e in scope.episodes}
    chosen = [episodes[r] for r in q.ground_truth.required_evidence_refs if r in episodes]
    if not chosen:
        chosen = scope.ordered_episodes()[:max(1, q.checkpoint_after)]
    parts = []
    for e in chosen[:MAX_RECORDS]:
        text = e.text if len(e.text) <= MAX_RECORD_CHARS else e.text[:MAX_RECORD_CHARS] + " …"
        parts.append(f"[{e.episode_id}] {text}")
    return "Here is what the records say:\n\n" + "\n\n".join(parts)


def _vague(q: Question, seed: int) -> str:
    """A non-answer, shorter than the correct answer where one fits: with the stuffed answer
    always longer, both sides of the length bias can be measured."""
    refs = q.ground_truth.required_evidence_refs[:2]
    cites = " " + " ".join(f"[{r}]" for r in refs) if refs else ""
    options = [v + cites for v in _VAGUE]
    shorter = [v for v in options
               if len(v) * LENGTH_MARGIN <= len(q.ground_truth.canonical_answer)]
    return shorter[seed % len(shorter)] if shorter else min(options, key=len)


# The verdict that opens a canonical answer, removed before the opposite one is put in front.
VERDICT_LEAD = re.compile(r"^(?:(?:No|Yes|Not yet|Too early to call a trend)\.\s+|(?:No|Yes),\s+"
                   r"|(?:Act now|Moderate and rising|High):\s+)")
_DATE_VALUE = re.compile(r"\d{4}-\d{2}-\d{2}")
_FIGURE_VALUE = re.compile(r"[$€£]?\d[\d,]*(?:\.\d+)?(?:\s?\S.*)?")


def reversed_answer(q: Question) -> str | None:
    """The canonical answer concluding the opposite of its yes/no conclusion; None when the
    question has no such conclusion."""
    verdict, _ = parse_conclusion(q.ground_truth.conclusion or "")
    if verdict is None:
        return None
    text = q.ground_truth.canonical_answer
    if text.startswith("No, not as of"):
        return "Yes, already as of" + text[len("No, not as of"):]
    body = VERDICT_LEAD.sub("", text)
    if q.question_type.value == "action_recommendation" and verdict == "yes":
        return f"No action is needed. {body}"
    return f"{'Yes' if verdict == 'no' else 'No'}. {body}"


def _figures(q: Question) -> list[str]:
    values = [fact_subject(f)[1] for f in q.ground_truth.key_facts]
    return list(dict.fromkeys(v for v in values if _FIGURE_VALUE.fullmatch(v)
                              and not _DATE_VALUE.fullmatch(v)))


def _bump(value: str) -> str:
    """Another figure of the same kind: the first number raised by a fifth."""
    m = re.search(r"\d[\d,]*", value)
    assert m is not None
    n = int(m.group(0).replace(",", "")) * 6 // 5 + 1
    return value[:m.start()] + f"{n:,}" + value[m.end():]


def hedged_answer(q: Question) -> str | None:
    """The canonical answer with every figure of its key facts offered beside another one;
    None when it states none."""
    text = q.ground_truth.canonical_answer
    values = [v for v in _figures(q) if v in text]
    if not values:
        return None
    pattern = re.compile("|".join(rf"(?<![\w$.,]){re.escape(v)}(?!\w)" for v in values))

    def hedge(m: re.Match[str]) -> str:
        others = [f for f in values if f != m.group(0)]
        return f"{m.group(0)} (or possibly {others[0] if others else _bump(m.group(0))})"

    return pattern.sub(hedge, text)


def bare_list_answer(q: Question) -> str | None:
    """The key facts' values, listed with nothing said about them; None without key facts."""
    values = [fact_subject(f)[1] for f in q.ground_truth.key_facts]
    return ", ".join(values) if values else None


def other_answer(ds: Dataset, q: Question) -> str | None:
    """The canonical answer of the next question of the scope that asks something else."""
    scope = ds.questions_for(q.scope_id)
    i = scope.index(q)
    return next((x.ground_truth.canonical_answer for x in scope[i + 1:] + scope[:i]
                 if x.prompt != q.prompt
                 and x.ground_truth.canonical_answer != q.ground_truth.canonical_answer), None)


@dataclass(frozen=True)
class CalibrationItem:
    question_id: str
    question: str
    key_facts: list[str]
    correct: str
    flawed: dict[str, str] = field(default_factory=dict)
    change: Change | None = None
    conclusion: str | None = None

    def facts_hit_by_change(self) -> list[str]:
        """The key facts the ``wrong`` answer contradicts (they name the changed token)."""
        if self.change is None:
            return []
        pat = re.compile(rf"(?<![\w-]){re.escape(self.change.old)}(?![\w-])")
        return [f for f in self.key_facts if pat.search(f)]


def build_items(ds: Dataset, limit: int | None = None) -> list[CalibrationItem]:
    """Up to ``limit`` questions (a seeded sample, the same for the same dataset), each with
    its correct and flawed answers."""
    salt = ds.content_hash()
    questions = [q for q in ds.questions if q.ground_truth.canonical_answer.strip()]
    questions.sort(key=lambda q: seed_of(salt, q.question_id))
    if limit is not None:
        questions = questions[:limit]
    items = []
    for q in questions:
        seed = seed_of(salt, q.question_id, "answers")
        gt = q.ground_truth
        flawed: dict[str, str] = {}
        wrong = subtly_wrong(gt.canonical_answer, gt.key_facts, seed)
        if wrong is not None:
            flawed["wrong"] = wrong[0]
        flawed["stuffed"] = _stuffed(ds, q)
        flawed["vague"] = _vague(q, seed)
        for kind, answer in (("reversed", reversed_answer(q)), ("hedged", hedged_answer(q)),
                             ("bare_list", bare_list_answer(q)),
                             ("other_question", other_answer(ds, q))):
            if answer is not None:
                flawed[kind] = answer
        items.append(CalibrationItem(q.question_id, q.prompt, list(gt.key_facts),
                                     gt.canonical_answer, flawed,
                                     wrong[1] if wrong else None, gt.conclusion))
    return items
