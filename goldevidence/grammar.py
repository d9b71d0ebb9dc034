"""The line grammar of GoldEvidenceBench logs and books, and parsers for both.

Only ``UPDATE ... SET`` and ``UPDATE ... CLEAR`` lines change state. ``UPDATE ... NOTE`` lines
(kv_commentary) carry an id and look authoritative but never change state; every other line
(DISTRACTOR, STALE, SUMMARY, INSTRUCTION, FORMAT, QUOTE) is untrusted narrative.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

UID_PATTERN = r"U[A-F0-9]{6}"
KEY_PATTERN = r"tag\.\d{2}"
UID_RE = re.compile(rf"\b{UID_PATTERN}\b")
KEY_RE = re.compile(rf"\b{KEY_PATTERN}\b")

LOG_HEADER = "## Episode Log"
LEDGER_HEADER = "## State Ledger"

_LOG_SET = re.compile(
    rf"^- \[(?P<uid>{UID_PATTERN})\] UPDATE step=(?P<step>\d+) (?P<op>SET|NOTE) "
    rf"(?P<key>{KEY_PATTERN}) = (?P<value>.+)$"
)
_LOG_CLEAR = re.compile(
    rf"^- \[(?P<uid>{UID_PATTERN})\] UPDATE step=(?P<step>\d+) CLEAR (?P<key>{KEY_PATTERN})$"
)
_BOOK_SET = re.compile(
    rf"^- \[(?P<uid>{UID_PATTERN})\] step=(?P<step>\d+) (?P<op>SET|NOTE) "
    rf"(?P<key>{KEY_PATTERN}) = (?P<value>.+)$"
)
_BOOK_CLEAR = re.compile(
    rf"^- \[(?P<uid>{UID_PATTERN})\] step=(?P<step>\d+) CLEAR (?P<key>{KEY_PATTERN})$"
)
_STEP = re.compile(r"\bstep=(\d+)\b")


@dataclass(frozen=True)
class Entry:
    """One id-carrying line: an authoritative SET/CLEAR, or a non-authoritative NOTE."""

    uid: str
    step: int
    op: str  # SET | CLEAR | NOTE
    key: str
    value: str | None

    @property
    def authoritative(self) -> bool:
        return self.op in ("SET", "CLEAR")

    def log_line(self) -> str:
        if self.op == "CLEAR":
            return f"- [{self.uid}] UPDATE step={self.step} CLEAR {self.key}"
        return f"- [{self.uid}] UPDATE step={self.step} {self.op} {self.key} = {self.value}"

    def ledger_line(self) -> str:
        if self.op == "CLEAR":
            return f"- [{self.uid}] step={self.step} CLEAR {self.key}"
        return f"- [{self.uid}] step={self.step} {self.op} {self.key} = {self.value}"


def _entry(m: re.Match[str], op: str | None = None) -> Entry:
    groups = m.groupdict()
    return Entry(
        uid=groups["uid"],
        step=int(groups["step"]),
        op=op or groups["op"],
        key=groups["key"],
        value=groups["value"].strip() if groups.get("value") is not None else None,
    )


def parse_log_line(line: str) -> Entry | None:
    """The entry an id-carrying log line states, or None for any other line."""
    m = _LOG_SET.match(line)
    if m:
        return _entry(m)
    m = _LOG_CLEAR.match(line)
    return _entry(m, "CLEAR") if m else None


def parse_ledger_line(line: str) -> Entry | None:
    m = _BOOK_SET.match(line)
    if m:
        return _entry(m)
    m = _BOOK_CLEAR.match(line)
    return _entry(m, "CLEAR") if m else None


def parse_updates(document: str, *, include_notes: bool = False) -> list[Entry]:
    """Entries of the episode log (lines after ``## Episode Log``), in file order.

    A document without that header (a bare list of lines) is read whole."""
    lines = document.splitlines()
    if any(line.strip() == LOG_HEADER for line in lines):
        start = next(i for i, line in enumerate(lines) if line.strip() == LOG_HEADER) + 1
        lines = lines[start:]
    out = []
    for line in lines:
        e = parse_log_line(line.rstrip())
        if e is not None and (include_notes or e.authoritative):
            out.append(e)
    return out


def parse_book_ledger(book: str, *, include_notes: bool = False) -> list[Entry]:
    """Entries of the book's ``## State Ledger`` section."""
    out: list[Entry] = []
    inside = False
    for line in book.splitlines():
        if line.strip() == LEDGER_HEADER:
            inside = True
            continue
        if not inside:
            continue
        if line.startswith("## "):
            break
        e = parse_ledger_line(line.rstrip())
        if e is not None and (include_notes or e.authoritative):
            out.append(e)
    return out


def line_step(line: str) -> int | None:
    """The ``step=N`` a log line carries (every generated log line has one)."""
    m = _STEP.search(line)
    return int(m.group(1)) if m else None


def log_lines(document: str) -> list[str]:
    """The bullet lines of the episode log, in order (headers and blanks dropped)."""
    lines = document.splitlines()
    if any(line.strip() == LOG_HEADER for line in lines):
        start = next(i for i, line in enumerate(lines) if line.strip() == LOG_HEADER) + 1
        lines = lines[start:]
    return [line.rstrip() for line in lines if line.startswith("- ")]
