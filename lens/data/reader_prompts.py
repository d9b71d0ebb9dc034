"""The fixed reader's prompt (lens/runner/reader.py): lens's own wording in the shape of
LongMemEval's reader prompt (``src/generation/run_generation.py``): an instruction, the
"History Chats" (one section per retrieved result, with its date), "Current Date" and the
question.

The defaults are the official generation's (``run_generation.sh``): the top 50 results, and the
step-by-step reading (``--cot true``: extract the relevant information, then reason over it).
``agent.reading: direct`` asks for the answer alone, as the official ``direct`` method does.

The history is cut as the official generation cuts it (``main``: ``max_retrieval_length =
model_max_length - gen_length - 1000``, then ``tokens[:max_retrieval_length]`` of the
date-sorted history in ``prepare_prompt``): at the reader model's context window less the
answer's ``max_tokens`` and 1,000 tokens (``HistoryLimit``, ``context_window``), or at
``agent.budget.max_payload_bytes`` when the config sets it. ``reader_cut`` resolves that rule
from the agent's config, once for the reader (lens/runner/reader.py), the run's condition
(``reader_cut``, lens/runs/condition.py) and ``lens plan`` (lens/flow/plan_cost.py).

``agent.reader_prompt_file`` replaces lens's wording with a publisher's reader prompt: a text
template with lens's placeholders (``READER_FIELDS``), read once when the run is checked; its
sha256 stands in the run's condition for lens's template."""

from __future__ import annotations

import hashlib
import re
import string
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

from lens.core.errors import UserError
from lens.core.promptfile import read_prompt_text
from lens.core.tokens import CHARS_PER_TOKEN, estimate_tokens
from lens.data.config import AgentConfig

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


# The official generation's room beside the history and the answer (run_generation.py, main:
# ``max_retrieval_length = model_max_length - gen_length - 1000``).
OFFICIAL_MARGIN_TOKENS = 1_000
# The official generation's context windows (run_generation.py, ``model2maxlength``), by the
# model's name without its organisation or date.
OFFICIAL_WINDOWS: dict[str, int] = {
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "meta-llama-3.1-8b-instruct": 128_000,
    "meta-llama-3.1-70b-instruct": 128_000,
    "phi-3-medium-128k-instruct": 120_000,
    "phi-3.5-mini-instruct": 120_000,
    "phi-4": 16_000,
    "mistral-7b-instruct-v0.2": 32_000,
    "mistral-7b-instruct-v0.3": 32_000,
    "film-7b": 32_000,
}
# The window lens uses for a model whose window it does not know: the official reader's
# (gpt-4o's).
FALLBACK_WINDOW = 128_000
_SNAPSHOT = re.compile(r"-\d{4}-\d{2}-\d{2}$")


def known_window(model: str) -> int | None:
    """The official generation's context window of ``model`` (``provider/name``, a name, or a
    Hugging Face id), or None."""
    name = model.rsplit("/", 1)[-1].lower()
    return OFFICIAL_WINDOWS.get(name) or OFFICIAL_WINDOWS.get(_SNAPSHOT.sub("", name))


def window_of(model: str, n_ctx: int | None = None, configured: int | None = None
              ) -> tuple[int, str]:
    """The reader model's context window in tokens and where lens got it: ``configured``
    (``agent.budget.context_window``), llama_cpp's ``n_ctx`` (``n_ctx``: the loaded model's,
    given for a ``llama_cpp/...`` model), the official generation's table, or gpt-4o's, the
    official reader's, when the model's is unknown."""
    provider, _, name = model.partition("/")
    if configured is not None:
        return configured, "agent.budget.context_window"
    if provider == "llama_cpp" and n_ctx is not None:
        return n_ctx, "llama_cpp's options.n_ctx"
    known = known_window(name)
    if known is not None:
        return known, f"{name}'s in LongMemEval's run_generation.py"
    return FALLBACK_WINDOW, (f"unknown for {model}, so lens used gpt-4o's, the official "
                             "reader's (agent.budget.context_window sets it)")


def counted_by(model: str) -> str:
    """How the history's tokens are counted for ``model`` (``provider/name``)."""
    return (LLAMA_COUNTED_BY if model.partition("/")[0] == "llama_cpp"
            else EstimatedTokens.counted_by)


LLAMA_COUNTED_BY = "counted by the model's tokenizer"
# The reader's answer in tokens (the request's max_tokens) when ``agent.max_tokens`` is not set.
READER_MAX_TOKENS = 2_048
# llama_cpp's context window when ``options.n_ctx`` is not set (lens/models/llama_backend.py
# loads the model with it; a test holds the two equal).
LLAMA_N_CTX = 8_192


class Tokenizer(Protocol):
    """How the history is counted and cut in tokens."""

    # "the model's tokenizer", or how the count is estimated.
    counted_by: str

    def count(self, text: str) -> int: ...

    def head(self, text: str, tokens: int) -> str:
        """The text of the first ``tokens`` tokens of ``text``."""
        ...


class EstimatedTokens:
    """Tokens estimated at four characters each (lens/core/tokens.py), where lens has no
    tokenizer of the reader model."""

    counted_by = f"estimated at {CHARS_PER_TOKEN} characters a token"

    def count(self, text: str) -> int:
        return estimate_tokens(text)

    def head(self, text: str, tokens: int) -> str:
        return text[:tokens * CHARS_PER_TOKEN]


@dataclass(frozen=True)
class HistoryLimit:
    """Where the fixed reader's history is cut: at ``max_tokens`` tokens (the window's rule)
    counted by ``tokenizer``, or at ``max_bytes`` (``agent.budget.max_payload_bytes`` set in the
    config). ``window`` and ``window_source`` say where the token limit came from."""

    max_tokens: int | None = None
    tokenizer: Tokenizer | None = None
    max_bytes: int | None = None
    window: int | None = None
    window_source: str = ""
    answer_tokens: int = 0

    def describe(self) -> str:
        if self.max_bytes is not None:
            return f"{self.max_bytes:,} bytes (agent.budget.max_payload_bytes, set in the config)"
        counted = self.tokenizer.counted_by if self.tokenizer else EstimatedTokens.counted_by
        return (f"{self.max_tokens or 0:,} tokens: the context window {self.window or 0:,} "
                f"({self.window_source}) less {self.answer_tokens:,} for the answer and "
                f"{OFFICIAL_MARGIN_TOKENS:,}; {counted}")


class ReaderCut(BaseModel):
    """Where the fixed reader cuts its history, resolved once from the agent's config
    (``reader_cut``) for the reader, the run's condition and ``lens plan``.

    ``rule`` "window": at ``max_history_tokens``, the context window less ``answer_tokens`` and
    ``margin_tokens`` (the official generation's rule), the tokens counted by the model's
    tokenizer (``tokens`` "tokenizer", llama_cpp) or estimated ("estimate"). ``rule`` "bytes":
    at ``max_payload_bytes`` (set in the config). ``window_source`` says where the window came
    from, for people: two runs cut alike are one condition wherever their windows came from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rule: Literal["window", "bytes"]
    answer_tokens: int
    context_window: int | None = None
    margin_tokens: int | None = None
    max_history_tokens: int | None = None
    tokens: Literal["tokenizer", "estimate"] | None = None
    max_payload_bytes: int | None = None
    window_source: str = ""

    def condition(self) -> dict[str, object]:
        """The cut as the run's condition records it (``reader_cut``)."""
        return self.model_dump(exclude={"window_source"}, exclude_none=True)

    def limit(self, tokenizer: Tokenizer | None = None) -> HistoryLimit:
        """The history's limit, its tokens counted by ``tokenizer`` (an estimate without)."""
        if self.max_payload_bytes is not None:
            return HistoryLimit(max_bytes=self.max_payload_bytes)
        return HistoryLimit(max_tokens=self.max_history_tokens or 0,
                            tokenizer=tokenizer or EstimatedTokens(),
                            window=self.context_window, window_source=self.window_source,
                            answer_tokens=self.answer_tokens)


def _n_ctx(agent: AgentConfig) -> int:
    raw = agent.options.get("n_ctx", LLAMA_N_CTX)
    try:
        return int(raw)
    except (TypeError, ValueError):
        # The llama_cpp backend refuses it when it loads the model, naming the option.
        return LLAMA_N_CTX


def reader_cut(agent: AgentConfig) -> ReaderCut:
    """Where the fixed reader of ``agent`` cuts its history: at ``agent.budget.max_payload_bytes``
    when the config sets it, else at the window (``window_of``: ``budget.context_window``,
    llama_cpp's ``options.n_ctx``, the official table, gpt-4o's) less the answer's
    ``max_tokens`` and 1,000 tokens."""
    answer = agent.max_tokens or READER_MAX_TOKENS
    if "max_payload_bytes" in agent.budget.model_fields_set:
        return ReaderCut(rule="bytes", answer_tokens=answer,
                         max_payload_bytes=agent.budget.max_payload_bytes,
                         window_source="agent.budget.max_payload_bytes, set in the config")
    local = agent.provider == "llama_cpp"
    window, source = window_of(agent.model, _n_ctx(agent) if local else None,
                               agent.budget.context_window)
    return ReaderCut(rule="window", answer_tokens=answer, context_window=window,
                     margin_tokens=OFFICIAL_MARGIN_TOKENS,
                     max_history_tokens=max(0, window - answer - OFFICIAL_MARGIN_TOKENS),
                     tokens="tokenizer" if local else "estimate", window_source=source)


@dataclass(frozen=True)
class History:
    """The "History Chats" block as the reader gets it."""

    text: str
    size: int  # bytes
    tokens: int | None  # counted under a token limit, else None
    cut: bool


def history_block(sessions: list[tuple[datetime | None, str]], limit: HistoryLimit | int,
                  marker: str) -> History:
    """The history of ``sessions`` ((date, text) in rank order), shown by date (undated ones
    last, rank order kept among equals), cut at ``limit`` (a ``HistoryLimit``, or bytes) and then
    ending in ``marker``. The cut keeps the history's start, as the official generation's
    ``tokens[:max_retrieval_length]`` does."""
    ordered = sorted(enumerate(sessions),
                     key=lambda p: (p[1][0] is None, p[1][0] or datetime.min, p[0]))
    history = "".join(SESSION_TEMPLATE.format(
        n=i + 1, date=d.strftime(DATE_FORMAT) if d else "unknown", text=text.strip())
        for i, (_, (d, text)) in enumerate(ordered))
    if isinstance(limit, int):
        limit = HistoryLimit(max_bytes=limit)
    if limit.max_bytes is not None:
        max_bytes = limit.max_bytes
        cut = len(history.encode("utf-8")) > max_bytes
        if cut:
            keep = max(0, max_bytes - len(marker.encode("utf-8")))
            history = (history.encode("utf-8")[:keep].decode("utf-8", errors="ignore")
                       + marker)
        return History(history, len(history.encode("utf-8")), None, cut)
    tok = limit.tokenizer or EstimatedTokens()
    max_tokens = limit.max_tokens or 0
    tokens = tok.count(history)
    cut = tokens > max_tokens
    if cut:
        history = tok.head(history, max(0, max_tokens - tok.count(marker))) + marker
        tokens = tok.count(history)
    return History(history, len(history.encode("utf-8")), tokens, cut)


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
                  sessions: list[tuple[datetime | None, str]], limit: HistoryLimit | int,
                  marker: str, reading: Reading = "direct",
                  template: str | None = None) -> tuple[str, int, bool]:
    """The reader's prompt, the bytes of memory text it carries, and whether the history was
    cut at ``limit`` (a ``HistoryLimit``, or bytes; ending in ``marker``). ``sessions`` are
    (date, text) in rank order; they are shown by date, undated ones last, rank order kept among
    equals. ``template``: a reader prompt file's text, in place of lens's wording for
    ``reading``."""
    prompt, history = reader_prompt_history(question, now, sessions, limit, marker, reading,
                                            template)
    return prompt, history.size, history.cut


def reader_prompt_history(question: str, now: datetime | None,
                          sessions: list[tuple[datetime | None, str]],
                          limit: HistoryLimit | int, marker: str, reading: Reading = "direct",
                          template: str | None = None) -> tuple[str, History]:
    """The reader's prompt and its history (``reader_prompt``'s arguments)."""
    history = history_block(sessions, limit, marker)
    now_line = f"Current Date: {now.strftime(DATE_FORMAT)}\n" if now else ""
    chosen = READER_TEMPLATES[reading] if template is None else template
    aliases = dict.fromkeys(HISTORY_ALIASES, history.text)
    return (chosen.format(history=history.text, now_line=now_line, question=question,
                          **aliases), history)
