"""Wrong answers built from the benchmark's own data, to measure how lenient a scorer is: for each
question, one answer of each kind, chosen by a hash of the data (never of a name), so the same
file gives the same answers.

- ``vague``: on topic, says nothing checkable (the question's own words, no value);
- ``specific``: the gold's shape with another value of its kind (another year, month, day,
  number or name, taken from the data where it can be);
- ``other_gold``: another question's gold answer (of the same category where there is one).

Kept apart from lens's scoring code so one generator can later serve both."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from lens.claims.items import ClaimItem

KINDS = ("vague", "specific", "other_gold")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")
_YEAR = re.compile(r"\b(19|20)\d\d\b")
_MONTH = re.compile(r"\b(" + "|".join(MONTHS) + r")\b")
_NUMBER = re.compile(r"\b\d+\b")
_NAME = re.compile(r"\b[A-Z][a-z]{2,}\b")
_WH = re.compile(r"^\s*(when|what|which|who|whom|whose|where|why|how( many| much| long| often)?"
                 r"|did|does|do|is|are|was|were|would|could|has|have)\b\s*", re.I)


@dataclass(frozen=True)
class WrongAnswer:
    item: ClaimItem
    kind: str
    answer: str


def _pick(key: str, n: int) -> int:
    return int(hashlib.sha256(key.encode()).hexdigest()[:12], 16) % n


def vague(item: ClaimItem) -> str:
    topic = _WH.sub("", item.question).rstrip(" ?.").strip()
    return (f"That came up in their conversations ({topic}), but nothing specific was said "
            "about it that I can point to.")


def specific(item: ClaimItem, seed: str, names: Sequence[str]) -> str | None:
    """The gold with one value swapped for another of its kind; None when it has no value lens
    can swap."""
    gold = item.gold
    key = f"{seed}\0{item.id}"
    if (m := _MONTH.search(gold)) is not None:
        others = [x for x in MONTHS if x != m.group()]
        return gold[:m.start()] + others[_pick(key, len(others))] + gold[m.end():]
    if (m := _YEAR.search(gold)) is not None:
        shift = 1 + _pick(key, 3)
        return gold[:m.start()] + str(int(m.group()) - shift) + gold[m.end():]
    if (m := _NUMBER.search(gold)) is not None:
        value = int(m.group())
        return gold[:m.start()] + str(value + 1 + _pick(key, 5)) + gold[m.end():]
    found = _names(gold)
    pool = [n for n in names if n not in found]
    if found and pool:
        return gold.replace(found[0], pool[_pick(key, len(pool))])
    return None


def _names(text: str) -> list[str]:
    """Capitalised words that are names: not the first word, unless the text is that word."""
    words = text.split()
    if len(words) == 1:
        return _NAME.findall(text)
    return [m.group() for m in _NAME.finditer(text) if m.start() > 0]


def other_gold(item: ClaimItem, items: Sequence[ClaimItem], seed: str) -> str | None:
    same = [i for i in items if i.category == item.category and i.gold.strip()
            and i.gold.strip().lower() != item.gold.strip().lower()]
    pool = same or [i for i in items if i.gold.strip()
                    and i.gold.strip().lower() != item.gold.strip().lower()]
    if not pool:
        return None
    return pool[_pick(f"{seed}\0{item.id}\0other", len(pool))].gold


def build(items: Sequence[ClaimItem], everything: Sequence[ClaimItem],
          seed: str) -> list[WrongAnswer]:
    """One wrong answer of each kind per item where the data allows it; ``everything`` is the
    whole file (other golds and names come from it), ``seed`` the hash of its content."""
    names = sorted({n for i in everything for n in _names(i.gold)} - set(MONTHS))
    out: list[WrongAnswer] = []
    for item in items:
        built = {"vague": vague(item), "specific": specific(item, seed, names),
                 "other_gold": other_gold(item, everything, seed)}
        out.extend(WrongAnswer(item, kind, text) for kind, text in built.items()
                   if text is not None)
    return out
