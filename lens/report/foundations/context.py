"""What the memory handed the agent in one question's session, measured from its stored record
(the transcript's tool messages, the fixed reader's prompt, the standing-context block, the
tool calls' refs). A report measures each record once as it loads it, then keeps the numbers
instead of the transcript (``lens/report/checks/parity.py`` reads them across arms)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lens.core.tokens import estimate_chars_tokens
from lens.data.reader_prompts import READER_TEMPLATE, SESSION_TEMPLATE
from lens.data.standing import HEADING, INTRO
from lens.runner.agent import BUDGET_NOTICE
from lens.runs.records import QuestionRecord
from lens.scoring.text.refs import episode_of, is_synthetic

if TYPE_CHECKING:
    from lens.report.foundations.data import QuestionRow

_STANDING_MARK = f"{HEADING}\n{INTRO}\n\n"


@dataclass(frozen=True)
class QuestionContext:
    search_chars: int = 0
    retrieve_chars: int = 0
    other_tool_chars: int = 0
    standing_chars: int = 0
    # Distinct episodes the question's searches returned, and the episodes ingested by then.
    episodes_returned: int = 0
    episodes_ingested: int = 0

    @property
    def chars(self) -> int:
        return (self.search_chars + self.retrieve_chars + self.other_tool_chars
                + self.standing_chars)

    @property
    def tokens(self) -> int:
        return estimate_chars_tokens(self.chars)

    @property
    def scope_share(self) -> float | None:
        if self.episodes_ingested <= 0:
            return None
        return min(1.0, self.episodes_returned / self.episodes_ingested)


def _standing_chars(record: QuestionRecord) -> int:
    if record.standing_context_bytes <= 0:
        return 0
    system = next((m.content for m in record.transcript if m.role == "system"), "")
    if _STANDING_MARK not in system:
        return 0
    return len(system.split(_STANDING_MARK, 1)[1].rstrip("\n"))


_HISTORY_HEAD = READER_TEMPLATE.split("{history}", 1)[0].rsplit("\n\n\n", 1)[-1]


def _reader_history_chars(record: QuestionRecord) -> int | None:
    """The characters of memory text the fixed reader put in its one prompt (its "History
    Chats" block: the retrieved sessions with their headers), or None for an agent's session.
    The reader writes no tool message: what the memory gave is in the prompt itself."""
    if any(m.role == "tool" for m in record.transcript):
        return None
    prompt = next((m.content for m in record.transcript if m.role == "user"), "")
    start = prompt.find(_HISTORY_HEAD)
    if start < 0:
        return _file_prompt_history_chars(record, prompt)
    start += len(_HISTORY_HEAD)
    # The block ends where the template goes on: "Current Date: …" when the question has a
    # date, else "Question: …" (the last one: the memory's text may hold the words too).
    end = prompt.rfind("\n\nCurrent Date: ")
    if end < start:
        end = prompt.rfind("\n\nQuestion: ")
    return max(0, (end if end >= start else len(prompt)) - start)


_FIRST_SESSION = SESSION_TEMPLATE.split("{n}", 1)[0] + "1:"


def _file_prompt_history_chars(record: QuestionRecord, prompt: str) -> int | None:
    """The history's characters in a prompt of ``agent.reader_prompt_file``, whose wording is
    the publisher's: the history starts at its first session and is as long as the search's
    recorded payload bytes."""
    searches = [c for c in record.tool_calls if c.name == "memory_search"]
    if len(searches) != 1:
        return None
    size = searches[0].payload_bytes
    start = prompt.find(_FIRST_SESSION)
    if size <= 0 or start < 0:
        return 0 if size <= 0 else None
    return len(prompt[start:].encode("utf-8")[:size].decode("utf-8", errors="ignore"))


def context_of(record: QuestionRecord, synthetic_prefixes: Sequence[str] = ()) -> QuestionContext:
    """What the memory handed the agent (or the fixed reader) in one question's session."""
    # The agent appends one tool message per tool-call record, in the same order; the fixed
    # reader appends none and puts its one search's results in the prompt.
    tool_texts: list[str | None] = [m.content for m in record.transcript if m.role == "tool"]
    reader = _reader_history_chars(record) if not tool_texts else None
    if reader is not None:
        tool_texts = [None] * len(record.tool_calls)
    chars = {"memory_search": 0, "memory_retrieve": 0, "other": 0}
    episodes: set[str] = set()
    for call, text in zip(record.tool_calls, tool_texts, strict=False):
        if not call.ok or call.result_count <= 0 or call.name == "memory_capabilities":
            continue
        if text is None:
            chars["memory_search"] += reader or 0
            reader = 0  # one prompt, counted once
        elif text != BUDGET_NOTICE:
            chars[call.name if call.name in chars else "other"] += len(text)
        if call.name == "memory_search":
            episodes.update(episode_of(r) for r in call.result_refs
                            if not is_synthetic(r, synthetic_prefixes))
    return QuestionContext(search_chars=chars["memory_search"],
                           retrieve_chars=chars["memory_retrieve"],
                           other_tool_chars=chars["other"],
                           standing_chars=_standing_chars(record),
                           episodes_returned=len(episodes),
                           episodes_ingested=record.episodes_ingested)


def synthetic_prefixes_of(events: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    """Each unit's declared synthetic ref prefixes (they name no episode of the scope), from the
    run's events."""
    out: dict[str, list[str]] = {}
    for e in events:
        if e.get("kind") == "unit_started" and isinstance(e.get("capabilities"), dict):
            prefixes = e["capabilities"].get("synthetic_ref_prefixes") or []
            out[str(e.get("key"))] = [str(p) for p in prefixes]
    return out


def row_context(row: QuestionRow, prefixes: Mapping[str, Sequence[str]]) -> QuestionContext:
    """A row's context: measured when its record was loaded, else from its record now."""
    if row.context is not None:
        return row.context
    return context_of(row.record, prefixes.get(row.record.unit_key, ()))
