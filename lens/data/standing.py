"""The standing-context block: an adapter's text placed in the agent's system prompt.

The block is memory payload like a search result: it is charged to the session's payload
budget, and cut with a visible marker when it does not fit.
"""

from __future__ import annotations

from dataclasses import dataclass

from lens.data.prompts import register_template

HEADING = "## Standing context from the memory system"
INTRO = ("The memory system provides the notes below before any search. They may be incomplete "
         "or out of date; search the memory to confirm details and to find citable records.")
CUT_MARKER = " …[standing context truncated by lens: payload budget reached]"
register_template("standing_context", f"{HEADING}\n{INTRO}\n{CUT_MARKER}")


@dataclass(frozen=True)
class StandingBlock:
    system_prompt: str
    # Bytes of the adapter's text that the agent received (charged to the payload budget).
    bytes: int
    truncated: bool


def apply_standing_context(system_prompt: str, text: str | None,
                           allowance: int) -> StandingBlock:
    """``system_prompt`` with ``text`` under its heading, cut to ``allowance`` bytes."""
    if text is None or not text.strip():
        return StandingBlock(system_prompt, 0, False)
    body = text.strip()
    raw = body.encode("utf-8")
    truncated = len(raw) > allowance
    if truncated:
        room = max(0, allowance - len(CUT_MARKER.encode("utf-8")))
        body = raw[:room].decode("utf-8", errors="ignore") + CUT_MARKER if room else ""
        raw = body.encode("utf-8")
        if not body:
            return StandingBlock(system_prompt, 0, True)
    prompt = f"{system_prompt.rstrip()}\n\n{HEADING}\n{INTRO}\n\n{body}\n"
    return StandingBlock(prompt, min(len(raw), allowance), truncated)
