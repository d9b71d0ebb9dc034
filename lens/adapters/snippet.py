"""Showing the part of a long text that matched a query."""

from __future__ import annotations

import re

TOKEN = re.compile(r"\w+", re.UNICODE)


def query_terms(query: str) -> set[str]:
    return {w for w in TOKEN.findall(query.lower()) if len(w) > 1}


def best_window(text: str, terms: set[str], width: int) -> str:
    """The ``width``-character window of ``text`` holding the most query words, marked with
    ellipses where it was cut, so a hit shows why it matched."""
    if len(text) <= width:
        return text
    lowered = text.lower()
    best, best_at = -1, 0
    step = max(1, width // 4)
    for start in range(0, len(text) - width + step, step):
        window = lowered[start:start + width]
        hits = sum(1 for t in terms if t in window)
        if hits > best:
            best, best_at = hits, start
    snippet = text[best_at:best_at + width]
    return ("…" if best_at else "") + snippet + ("…" if best_at + width < len(text) else "")
