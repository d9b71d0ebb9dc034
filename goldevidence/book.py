"""The book artifact: title, reading rules, glossary, chapters of narrative, and the state ledger.

The book is what a closed-book reader gets instead of the raw log. The validator rejects books a
reader could be misled by: unknown sections, leaked log lines, or ledger lines outside the grammar.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from goldevidence.grammar import LEDGER_HEADER, LOG_HEADER, Entry, parse_ledger_line, parse_log_line

READING_RULES = (
    "The STATE LEDGER is authoritative for current state.",
    "Only SET/CLEAR lines update state; NOTE lines are commentary.",
    "Chapter narrative may contain errors or distractors.",
    "Support IDs (e.g., [U0A1B2C]) refer to ledger entries.",
)
RULES_HEADER = "## Reading Rules"
GLOSSARY_HEADER = "## Glossary (Tags)"
_CHAPTER = re.compile(r"^## Chapter \d+$")
_GLOSSARY_LINE = re.compile(r"^- tag\.\d{2}: .+$")


def render_book(
    *, title: str, chapters: Sequence[str], glossary: dict[str, str], ledger: Sequence[Entry]
) -> str:
    out = [f"# {title}", "", RULES_HEADER, *[f"- {r}" for r in READING_RULES], "",
           GLOSSARY_HEADER, *[f"- {k}: {glossary[k]}" for k in sorted(glossary)], ""]
    for i, text in enumerate(chapters, start=1):
        out += [f"## Chapter {i}", text.rstrip(), ""]
    out += [LEDGER_HEADER, *[e.ledger_line() for e in ledger], ""]
    return "\n".join(out)


@dataclass
class BookCheck:
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def validate_book(book: str) -> BookCheck:
    """Every structural problem of a book, each as ``line N: what``."""
    check = BookCheck()
    lines = book.splitlines()
    section = "preamble"
    seen: list[str] = []
    for n, raw in enumerate(lines, start=1):
        line = raw.rstrip()
        if not line.strip():
            continue
        if section == "preamble":
            if not line.startswith("# "):
                check.errors.append(f"line {n}: the book must start with a '# Title' line")
                return check
            section = "title"
            continue
        if line.startswith("## "):
            name = line.strip()
            if name == RULES_HEADER:
                section = "rules"
            elif name == GLOSSARY_HEADER:
                section = "glossary"
            elif _CHAPTER.match(name):
                section = "chapter"
            elif name == LEDGER_HEADER:
                section = "ledger"
            elif name == LOG_HEADER:
                check.errors.append(f"line {n}: the episode log leaked into the book")
                section = "unknown"
            else:
                check.errors.append(f"line {n}: unknown section {name!r}")
                section = "unknown"
            if seen and seen[-1] == "ledger" and section != "unknown":
                check.errors.append(f"line {n}: section {name!r} after the state ledger")
            seen.append(section)
            continue
        if section == "rules" and not line.startswith("- "):
            check.errors.append(f"line {n}: reading rules must be '- ' bullets")
        elif section == "glossary" and not _GLOSSARY_LINE.match(line):
            check.errors.append(f"line {n}: glossary lines must read '- tag.NN: description'")
        elif section == "chapter" and parse_log_line(line) is not None:
            check.errors.append(f"line {n}: an UPDATE log line leaked into a chapter")
        elif section == "ledger" and parse_ledger_line(line) is None:
            check.errors.append(f"line {n}: ledger line breaks the grammar "
                                "'- [UXXXXXX] step=N SET|NOTE tag.NN = value' / 'CLEAR tag.NN'")
        elif section == "title":
            check.errors.append(f"line {n}: text before the first section")
    order = [s for s in seen if s != "unknown"]
    for required in ("rules", "glossary", "chapter", "ledger"):
        if required not in order:
            check.errors.append(f"missing section: {required}")
    if "ledger" in order and "chapter" in order and order.index("chapter") > order.index("ledger"):
        check.errors.append("chapters must come before the state ledger")
    return check
