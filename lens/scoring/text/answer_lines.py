"""Lines of an answer read with the line they continue.

Agents write answers as a lead-in and a list ("Auth p99 latency has climbed since CHG-5382:"
then "- from 211 ms to 307 ms"), as sections under headings, and as tables. Each line of such an
answer is a sentence of its own to the fact matcher, so a list item's values would be read
without the subject its lead-in names, and a heading could not attach them to anything. This
module writes each continued line with its context in front ("Auth p99 latency has climbed since
CHG-5382: from 211 ms to 307 ms"), so the subject rule finds the subject by looking back within
the sentence, as it does in prose; the heading that names the wrong subject is read as naming it.

The context of a line:
- a list item continues the lead-in above its list (a line ending in ":" that is not itself an
  item; an item ending in ":" is the lead-in of the items indented under it) and the heading of
  its section;
- any other line continues the heading of its section (Markdown ``#`` headings, and a line that
  is only bold text);
- a table row continues its header row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_ITEM = re.compile(r"^(\s*)(?:[-*+•]|\d{1,3}[.)])\s+(.*)$")
_HEADING = re.compile(r"^\s{0,3}(?:#{1,6}\s+(.+?)\s*#*\s*"
                      r"|\*\*([^*]+?)\*\*:?\s*|__([^_]+?)__:?\s*)$")
_TABLE_ROW = re.compile(r"^\s*\|(.*)\|\s*$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")


@dataclass
class _LeadIn:
    indent: int
    text: str


def _cells(row: str) -> str:
    return ", ".join(c.strip() for c in row.split("|") if c.strip())


def _joined(context: list[str], line: str) -> str:
    parts = [c.rstrip().rstrip(":").rstrip() for c in context if c.strip()]
    return ": ".join([*parts, line.strip()]) if parts else line


def with_context(text: str) -> str:
    """``text`` with every continued line preceded by the lines it continues (see the module's
    docstring); text without lists, headings or tables comes back unchanged."""
    if "\n" not in text:
        return text
    context = _Context()
    return "\n".join([context.read(line) for line in text.split("\n")])


@dataclass
class _Context:
    """What the next line may continue: the section's heading, the table's header row, and the
    open lead-ins of the list."""

    heading: str = ""
    header: str = ""
    lead_ins: list[_LeadIn] = field(default_factory=list)

    def read(self, line: str) -> str:
        """``line`` written with what it continues; the context moved on past it."""
        if not line.strip() or _TABLE_RULE.match(line):
            return line
        head = _HEADING.match(line)
        if head:
            self.heading = next(g for g in head.groups() if g)
            self.lead_ins, self.header = [], ""
            return line
        row = _TABLE_ROW.match(line)
        if row:
            return self._table_row(row.group(1), line)
        self.header = ""
        item = _ITEM.match(line)
        if item:
            return self._item(len(item.group(1)), item.group(2), line)
        # A plain line ending in ":" leads the list below it; any other plain line ends it.
        self.lead_ins = [_LeadIn(-1, line)] if line.rstrip().endswith(":") else []
        return _joined([self.heading], line)

    def _table_row(self, cells: str, line: str) -> str:
        """A header row continues the heading; the rows below it continue the header too."""
        if not self.header:
            self.header = _cells(cells)
            return _joined([self.heading], line)
        return _joined([self.heading, self.header], line)

    def _item(self, indent: int, body: str, line: str) -> str:
        """A list item continues the heading and the lead-ins it is indented under; an item
        ending in ":" leads the items indented under it."""
        while self.lead_ins and self.lead_ins[-1].indent >= indent:
            self.lead_ins.pop()
        context = [self.heading, *(x.text for x in self.lead_ins)]
        if body.rstrip().endswith(":"):
            self.lead_ins.append(_LeadIn(indent, body))
        return _joined(context, body) if any(context) else line
