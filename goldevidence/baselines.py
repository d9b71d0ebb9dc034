"""Model-free baselines: ``naive`` (the last ``key = value`` anywhere wins) and ``ledger`` (replay
the authoritative lines). Both answer open book (the episode log) or closed book (the book)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

from goldevidence.grammar import (
    LEDGER_HEADER,
    UID_RE,
    line_step,
    parse_book_ledger,
    parse_updates,
)
from goldevidence.rows import PredictionLine, Row
from goldevidence.state import answer, query_from_meta, replay

PROTOCOLS = ("open_book", "closed_book")
BASELINES = ("naive", "ledger")
_ASSIGN = re.compile(r"(?P<key>tag\.\d{2})\s*=\s*(?P<value>[A-Za-z0-9][A-Za-z0-9,_-]*)")


def predict_ledger(row: Row, protocol: str = "open_book") -> PredictionLine:
    meta = row.get("meta", {})
    mode = meta.get("state_mode") or row.get("state_mode") or "kv"
    if protocol == "open_book":
        entries = parse_updates(row["document"])
    elif protocol == "closed_book":
        entries = parse_book_ledger(row["book"])
    else:
        raise ValueError(f"protocol must be one of {PROTOCOLS}")
    value, support = answer(replay(mode, entries, meta.get("as_of_step")), query_from_meta(meta))
    return {"id": row["id"], "value": value, "support_ids": support}


def predict_naive(row: Row, protocol: str = "open_book") -> PredictionLine:
    meta = row.get("meta", {})
    text = row["document"] if protocol == "open_book" else row["book"]
    value, support = _last_value(text, meta.get("key"), meta.get("as_of_step"))
    op = meta.get("derived_op") if meta.get("query_type") == "derived" else None
    if op == "reports":
        value, support = None, None
    elif value and op in _DERIVE:
        value = _DERIVE[op](value)
    return {"id": row["id"], "value": value, "support_ids": [support] if support else []}


def _last_value(text: str, key: str | None, as_of: int | None) -> tuple[str | None, str | None]:
    """The value the last line naming ``key`` (up to step ``as_of``, before any ledger) gives
    it, and the id on the last such line that had one."""
    value: str | None = None
    support: str | None = None
    for line in text.splitlines():
        if line.strip() == LEDGER_HEADER:
            break  # the naive reader of a book reads the narrative only
        if not key or key not in line:
            continue
        step = line_step(line)
        if as_of is not None and step is not None and step > as_of:
            break
        updates, new = _line_update(line, key)
        if updates:
            uid = UID_RE.search(line)
            value, support = new, uid.group(0) if uid else support
    return value, support


def _line_update(line: str, key: str) -> tuple[bool, str | None]:
    """Whether ``line`` sets or clears ``key``, and the value it sets (None: it clears)."""
    if f"{key} = UNKNOWN" in line or re.search(rf"CLEAR {re.escape(key)}\b", line):
        return True, None
    m = next((m for m in _ASSIGN.finditer(line) if m.group("key") == key), None)
    return (True, m.group("value").rstrip(",.-")) if m else (False, None)


def _parity(value: str) -> str | None:
    if not value.lstrip("-").isdigit():
        return None
    return "even" if int(value) % 2 == 0 else "odd"


# A derived query's answer from the value the naive reader found.
_DERIVE: dict[str, Callable[[str], str | None]] = {
    "color": lambda value: value.split("-", 1)[0],
    "parity": _parity,
    "count": lambda value: str(len([p for p in value.split(",") if p])),
}


def predictions(rows: Iterable[Row], baseline: str,
                protocol: str = "open_book") -> Iterator[PredictionLine]:
    if baseline not in BASELINES:
        raise ValueError(f"unknown baseline {baseline!r}; known: {', '.join(BASELINES)}")
    fn = predict_ledger if baseline == "ledger" else predict_naive
    for row in rows:
        if protocol == "closed_book":
            # The closed-book reader must never see the log: take it away before predicting.
            row = row.copy()
            row.pop("document", None)
        pred = fn(row, protocol)
        # What was in front of the reader: the whole log or the whole book.
        source = row["document"] if protocol == "open_book" else row["book"]
        pred["presented_ids"] = sorted(set(UID_RE.findall(source or "")))
        yield pred
