"""The fixed reader's prompt (lens/runner/reader.py): lens's own wording in the shape of
LongMemEval's reader prompt (``src/generation/run_generation.py``): an instruction, the
"History Chats" (one section per retrieved result, with its date), "Current Date" and the
question."""

from __future__ import annotations

import hashlib
from datetime import datetime

DEFAULT_TOP_K = 10
READER_TEMPLATE = (
    "Below are earlier chat sessions between you and the user. Use the ones that bear on the "
    "question to answer it.\n\n\nHistory Chats:\n\n{history}\n\n{now_line}Question: "
    "{question}\nAnswer:")
SESSION_TEMPLATE = "\n### Session {n}:\nSession Date: {date}\nSession Content:\n{text}\n"
# LongMemEval's own way of writing a date ("2023/05/20 (Sat) 02:21").
DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"


def template_hash() -> str:
    """The reader prompt's identity in a run's condition."""
    blob = READER_TEMPLATE + "\x00" + SESSION_TEMPLATE + "\x00" + DATE_FORMAT
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def reader_prompt(question: str, now: datetime | None,
                  sessions: list[tuple[datetime | None, str]], max_bytes: int,
                  marker: str) -> tuple[str, int, bool]:
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
    return (READER_TEMPLATE.format(history=history, now_line=now_line, question=question),
            size, cut)


