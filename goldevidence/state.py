"""Replaying entries into state, and the answer a query has over a state.

Shared by the generator (gold), the ledger baseline and the grader (entailment), so that all
three agree on what a line means.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from goldevidence.grammar import Entry
from goldevidence.rows import RowMeta

STATE_MODES = ("kv", "kv_commentary", "counter", "set", "relational")


def parse_value(state_mode: str, raw: str | None) -> Any:
    if raw is None:
        return None
    if state_mode == "counter":
        try:
            return int(raw)
        except ValueError:
            return None
    if state_mode == "set":
        return frozenset(p for p in raw.split(",") if p) if raw else frozenset()
    return raw


def format_value(state_mode: str, value: Any) -> str | None:
    if value is None:
        return None
    if state_mode == "set":
        return ",".join(sorted(value)) if value else None
    return str(value)


@dataclass
class State:
    """State after replaying authoritative entries; NOTE entries are skipped by construction."""

    mode: str
    values: dict[str, Any] = field(default_factory=dict)
    support: dict[str, str] = field(default_factory=dict)
    last_op: dict[str, str] = field(default_factory=dict)

    def apply(self, e: Entry) -> None:
        if not e.authoritative:
            return
        self.values[e.key] = parse_value(self.mode, e.value) if e.op == "SET" else None
        self.support[e.key] = e.uid
        self.last_op[e.key] = e.op

    def formatted(self, key: str) -> str | None:
        return format_value(self.mode, self.values.get(key))


def replay(mode: str, entries: Iterable[Entry], as_of_step: int | None = None) -> State:
    """State after the entries with ``step <= as_of_step`` (all when None), in step order."""
    st = State(mode)
    chosen = [e for e in entries if as_of_step is None or e.step <= as_of_step]
    for e in sorted(chosen, key=lambda e: e.step):
        st.apply(e)
    return st


@dataclass(frozen=True)
class Query:
    key: str
    query_type: str = "direct"  # direct | derived
    derived_op: str | None = None  # color | parity | count | reports
    derived_manager: str | None = None


def answer(state: State, q: Query) -> tuple[str | None, list[str]]:
    """The gold value and the ids that establish it."""
    if q.query_type == "derived" and q.derived_op == "reports":
        keys = sorted(k for k, v in state.values.items() if v is not None
                      and v == q.derived_manager)
        if not keys:
            return None, []
        return ",".join(keys), [state.support[k] for k in keys]
    raw = state.values.get(q.key)
    support = [state.support[q.key]] if q.key in state.support else []
    value: str | None
    if q.query_type == "derived" and q.derived_op == "color":
        text = format_value(state.mode, raw)
        value = text.split("-", 1)[0] if text else None
    elif q.query_type == "derived" and q.derived_op == "parity":
        value = None if raw is None else ("even" if int(raw) % 2 == 0 else "odd")
    elif q.query_type == "derived" and q.derived_op == "count":
        value = str(len(raw)) if raw else None
    else:
        value = format_value(state.mode, raw)
    return value, support


def query_from_meta(meta: RowMeta) -> Query:
    return Query(
        key=str(meta.get("key") or ""),
        query_type=str(meta.get("query_type") or "direct"),
        derived_op=meta.get("derived_op"),
        derived_manager=meta.get("derived_manager"),
    )


def implied_by(mode: str, entries: Iterable[Entry], meta: RowMeta) -> str | None:
    """The answer that replaying only ``entries`` implies for the query in ``meta``."""
    st = replay(mode, entries, meta.get("as_of_step"))
    return answer(st, query_from_meta(meta))[0]
