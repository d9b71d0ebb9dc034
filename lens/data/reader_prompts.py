"""The fixed reader's prompt (lens/runner/reader.py): lens's own wording in the shape of
LongMemEval's reader prompt (``src/generation/run_generation.py``): an instruction, the
"History Chats" (one section per retrieved result, with its date), "Current Date" and the
question.

The defaults are the official generation's (``run_generation.sh``): the top 50 results, and the
step-by-step reading (``--cot true``: extract the relevant information, then reason over it).
``agent.reading: direct`` asks for the answer alone, as the official ``direct`` method does.

``agent.reader_prompt_file`` replaces lens's wording with a publisher's reader prompt: a text
template with lens's placeholders (``READER_FIELDS``), read once when the run is checked; its
sha256 stands in the run's condition for lens's template."""

from __future__ import annotations

import hashlib
import string
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from lens.core.errors import UserError
from lens.core.promptfile import read_prompt_text

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


# The placeholders a reader prompt file may use: the retrieved history and the question are
# required, the question's date line ("Current Date: ...\n", empty when the dataset gives none)
# is optional. The aliases are the names publishers' prompts give the history (mem0's
# ANSWER_PROMPT: ``{{memories}}``), so such a prompt needs only its Jinja braces made single.
REQUIRED_FIELDS = ("history", "question")
OPTIONAL_FIELDS = ("now_line",)
HISTORY_ALIASES = ("memories", "context")
READER_FIELDS = REQUIRED_FIELDS + OPTIONAL_FIELDS + HISTORY_ALIASES
_FIELD = "agent.reader_prompt_file"


@dataclass(frozen=True)
class ReaderPromptFile:
    """A reader prompt read from a file: its template, its file name and its text's sha256."""

    template: str
    name: str
    sha256: str


def _placeholders(template: str) -> list[str]:
    return [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]


def load_reader_prompt(path: Path) -> ReaderPromptFile:
    """The reader prompt of ``path``; a UserError naming the field, the file and every problem
    when it cannot be read or its placeholders are not lens's."""
    text, raw = read_prompt_text(
        path, _FIELD,
        missing_fix="give the path of a text file holding the reader prompt (see "
                    "docs/datasets.md, 'A publisher's reader prompt')",
        large_fix="give the reader prompt alone")
    where = f"{_FIELD}: {path}"
    try:
        fields = _placeholders(text)
    except ValueError as exc:
        raise UserError(f"{where}: not a template ({exc}); write a literal brace twice "
                        "('{{' or '}}')") from None
    problems = []
    unknown = sorted({f for f in fields if f not in READER_FIELDS})
    if unknown:
        problems.append("unknown placeholders " + ", ".join("{" + f + "}" for f in unknown)
                        + " (lens fills " + ", ".join("{" + f + "}" for f in READER_FIELDS)
                        + "; write a literal brace twice)")
    has = set(fields)
    if not has & {"history", *HISTORY_ALIASES}:
        problems.append("no {history} placeholder (or its aliases {memories}, {context}) for "
                        "the retrieved memories")
    if "question" not in has:
        problems.append("no {question} placeholder")
    if problems and "{{" in text and not unknown:
        problems.append("Jinja-style placeholders such as {{memories}} are literal text here: "
                        "write them with single braces ({memories})")
    if problems:
        raise UserError(f"{where}: " + "; ".join(problems))
    return ReaderPromptFile(template=text, name=path.name,
                            sha256=hashlib.sha256(raw).hexdigest())


def template_hash(reading: Reading = "direct", template: str | None = None) -> str:
    """The reader prompt's identity in a run's condition (``template``: a reader prompt file's
    text, in place of lens's wording for ``reading``)."""
    chosen = READER_TEMPLATES[reading] if template is None else template
    blob = chosen + "\x00" + SESSION_TEMPLATE + "\x00" + DATE_FORMAT
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def reader_prompt(question: str, now: datetime | None,
                  sessions: list[tuple[datetime | None, str]], max_bytes: int,
                  marker: str, reading: Reading = "direct",
                  template: str | None = None) -> tuple[str, int, bool]:
    """The reader's prompt, the bytes of memory text it carries, and whether the history was
    cut to ``max_bytes`` (ending in ``marker``). ``sessions`` are (date, text) in rank order;
    they are shown by date, undated ones last, rank order kept among equals. ``template``: a
    reader prompt file's text, in place of lens's wording for ``reading``."""
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
    chosen = READER_TEMPLATES[reading] if template is None else template
    aliases = dict.fromkeys(HISTORY_ALIASES, history)
    return (chosen.format(history=history, now_line=now_line, question=question, **aliases),
            size, cut)


