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
from dataclasses import dataclass

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
    out: list[str] = []
    heading = ""
    lead_ins: list[_LeadIn] = []
    header = ""
    for line in text.split("\n"):
        if not line.strip():
            out.append(line)
            continue
        head = _HEADING.match(line)
        if head:
            heading = next(g for g in head.groups() if g)
            lead_ins, header = [], ""
            out.append(line)
            continue
        row = _TABLE_ROW.match(line)
        if _TABLE_RULE.match(line):
            out.append(line)
            continue
        if row:
            if not header:
                header = _cells(row.group(1))
                out.append(_joined([heading], line))
            else:
                out.append(_joined([heading, header], line))
            continue
        header = ""
        item = _ITEM.match(line)
        if item:
            indent = len(item.group(1))
            while lead_ins and lead_ins[-1].indent >= indent:
                lead_ins.pop()
            body = item.group(2)
            context = [heading, *(x.text for x in lead_ins)]
            out.append(_joined(context, body) if any(context) else line)
            if body.rstrip().endswith(":"):
                lead_ins.append(_LeadIn(indent, body))
            continue
        out.append(_joined([heading], line))
        # A plain line ending in ":" leads the list below it; any other plain line ends it.
        lead_ins = [_LeadIn(-1, line)] if line.rstrip().endswith(":") else []
    return "\n".join(out)
