"""The book artifact: title, reading rules, glossary, chapters of narrative, and the state ledger.

The book is what a closed-book reader gets instead of the raw log. The validator rejects books a
reader could be misled by: unknown sections, leaked log lines, or ledger lines outside the grammar.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
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
            section, problems = _open_section(line.strip(), seen)
            check.errors += [f"line {n}: {p}" for p in problems]
            continue
        problem = _line_problem(section, line)
        if problem is not None:
            check.errors.append(f"line {n}: {problem}")
    check.errors += _order_problems([s for s in seen if s != "unknown"])
    return check


_SECTIONS = {RULES_HEADER: "rules", GLOSSARY_HEADER: "glossary", LEDGER_HEADER: "ledger"}


def _open_section(name: str, seen: list[str]) -> tuple[str, list[str]]:
    """The section the header ``name`` opens (added to the sections ``seen``), and what is
    wrong with the header where it stands."""
    section, problem = _section(name)
    problems = [] if problem is None else [problem]
    if seen and seen[-1] == "ledger" and section != "unknown":
        problems.append(f"section {name!r} after the state ledger")
    seen.append(section)
    return section, problems


def _section(name: str) -> tuple[str, str | None]:
    """The section a ``## `` header opens, and what is wrong with the header (None: nothing)."""
    if name in _SECTIONS:
        return _SECTIONS[name], None
    if _CHAPTER.match(name):
        return "chapter", None
    if name == LOG_HEADER:
        return "unknown", "the episode log leaked into the book"
    return "unknown", f"unknown section {name!r}"


# What a line of each section must be, and the problem when it is not.
_LINE_RULES: dict[str, tuple[Callable[[str], bool], str]] = {
    "rules": (lambda line: line.startswith("- "), "reading rules must be '- ' bullets"),
    "glossary": (lambda line: _GLOSSARY_LINE.match(line) is not None,
                 "glossary lines must read '- tag.NN: description'"),
    "chapter": (lambda line: parse_log_line(line) is None,
                "an UPDATE log line leaked into a chapter"),
    "ledger": (lambda line: parse_ledger_line(line) is not None,
               "ledger line breaks the grammar "
               "'- [UXXXXXX] step=N SET|NOTE tag.NN = value' / 'CLEAR tag.NN'"),
    "title": (lambda line: False, "text before the first section"),
}


def _line_problem(section: str, line: str) -> str | None:
    rule = _LINE_RULES.get(section)
    if rule is None or rule[0](line):
        return None
    return rule[1]


def _order_problems(order: list[str]) -> list[str]:
    """What is wrong with the order of a book's known sections."""
    problems = [f"missing section: {required}"
                for required in ("rules", "glossary", "chapter", "ledger") if required not in order]
    if "ledger" in order and "chapter" in order and order.index("chapter") > order.index("ledger"):
        problems.append("chapters must come before the state ledger")
    return problems
