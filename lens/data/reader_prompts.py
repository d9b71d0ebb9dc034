"""The fixed reader's prompt (lens/runner/reader.py): lens's own wording in the shape of
LongMemEval's reader prompt (``src/generation/run_generation.py``): an instruction, the
"History Chats" (one section per retrieved result, with its date), "Current Date" and the
question.

The defaults are the official generation's (``run_generation.sh``): the top 50 results, and the
step-by-step reading (``--cot true``: extract the relevant information, then reason over it).
``agent.reading: direct`` asks for the answer alone, as the official ``direct`` method does."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Literal

Reading = Literal["step_by_step", "direct"]
DEFAULT_TOP_K = 50
DEFAULT_READING: Reading = "step_by_step"
_INSTRUCTION = ("Below are earlier chat sessions between you and the user. Use the ones that "
                "bear on the question to answer it.")
_HISTORY = "\n\n\nHistory Chats:\n\n{history}\n\n{now_line}Question: {question}\n"
READER_TEMPLATES: dict[Reading, str] = {
    "direct": _INSTRUCTION + _HISTORY + "Answer:",
    "step_by_step": (_INSTRUCTION + " Answer step by step: first gather what the sessions say "
                     "about the question, then reason from it to the answer." + _HISTORY
                     + "Answer (step by step):"),
}
READER_TEMPLATE = READER_TEMPLATES["direct"]
SESSION_TEMPLATE = "\n### Session {n}:\nSession Date: {date}\nSession Content:\n{text}\n"
# LongMemEval's own way of writing a date ("2023/05/20 (Sat) 02:21").
DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"


def template_hash(reading: Reading = "direct") -> str:
    """The reader prompt's identity in a run's condition."""
    blob = READER_TEMPLATES[reading] + "\x00" + SESSION_TEMPLATE + "\x00" + DATE_FORMAT
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def reader_prompt(question: str, now: datetime | None,
                  sessions: list[tuple[datetime | None, str]], max_bytes: int,
                  marker: str, reading: Reading = "direct") -> tuple[str, int, bool]:
    """The reader's prompt, the bytes of memory text it carries, and whether the history was
    cut to ``max_bytes`` (ending in ``marker``). ``sessions`` are (date, text) in rank order;
    they are shown by date, undated ones last, rank order kept among equals."""
    ordered = sorted(enumerate(sessions),
                     key=lambda p: (p[1][0] is None, p[1][0] or datetime.min, p[0]))
    history = "".join(SESSION_TEMPLATE.format(
        n=i + 1, date=d.strftime(DATE_FORMAT) if d else "unknown", text=text.strip())
        for i, (_, (d, text)) in enumerate(ordered))
    size = len(history.encode("utf-8"))
    cut = size > max_bytes
    if cut:
        keep = max(0, max_bytes - len(marker.encode("utf-8")))
        history = (history.encode("utf-8")[:keep].decode("utf-8", errors="ignore")
                   + marker)
        size = len(history.encode("utf-8"))
    now_line = f"Current Date: {now.strftime(DATE_FORMAT)}\n" if now else ""
    return (READER_TEMPLATES[reading].format(history=history, now_line=now_line, question=question),
            size, cut)


