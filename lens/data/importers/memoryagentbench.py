"""Import MemoryAgentBench (Hu, Wang and McAuley, 2025) into the LENS format.

The benchmark is released on Hugging Face as four splits (Accurate_Retrieval,
Test_Time_Learning, Long_Range_Understanding, Conflict_Resolution), one row per long context:
``context`` (text), ``questions`` (a list), ``answers`` (a list, per question a list of accepted
answers) and ``metadata`` (``source`` names the sub-dataset, e.g. ``eventqa_full`` or
``factconsolidation_mh_262k``; ``qa_pair_ids``, ``question_ids``, ``question_types``,
``keypoints`` ... per question). lens reads the released Parquet files (with pyarrow), rows
exported as JSON lines (what ``datasets.Dataset.to_json`` writes) or a JSON list of rows;
releases before July 2025 name ``qa_pair_ids`` ``uuids`` and may keep ``source`` beside
``metadata``.

Each row becomes a scope whose episodes are the context cut into chunks of about
``chunk_tokens`` tokens at sentence ends, streamed in order (the benchmark feeds its memory agents
the same way, 4,096 tokens by default); every question is asked after the last chunk. Rows are
read one at a time: memory holds one context, never the file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal, Required, TypedDict

from lens.core.distribution import install_hint
from lens.core.errors import DatasetError
from lens.core.jsonguard import JsonRefused, JsonTooDeep, loads_guarded
from lens.core.tokens import estimate_tokens
from lens.data.dataset import MAX_ANSWER_CHARS, QuestionType
from lens.data.importers.common import Locator, short_facts, stream_items
from lens.data.importers.longmemeval import parse_lme_date
from lens.data.importers.records import QuestionJson
from lens.data.importers.writer import StreamingDatasetWriter

DEFAULT_CHUNK_TOKENS = 4096
# Sub-dataset families by source prefix: (competency, question type, how lens asks).
FAMILIES: dict[str, tuple[str, QuestionType, str]] = {
    "eventqa": ("Accurate_Retrieval", QuestionType.LONGITUDINAL,
                "Using what you have memorised of the book, do the task below.\n\n{q}\n\n"
                "The event that happens next is:"),
    "ruler_qa": ("Accurate_Retrieval", QuestionType.NULL_HYPOTHESIS,
                 "Answer from the documents you have memorised. Reply with the answer only, no "
                 "other words.\n\nQuestion: {q}"),
    "longmemeval": ("Accurate_Retrieval", QuestionType.LONGITUDINAL,
                    "The chat history you have memorised is between you and a user. From the "
                    "relevant part of it, answer as briefly as you can, in one phrase if "
                    "possible.\n\n{q}"),
    "icl": ("Test_Time_Learning", QuestionType.PARAPHRASE,
            "The examples you have memorised map texts to numeric labels. Give the text below "
            "its numeric label, replying \"label: N\" and nothing else.\n\n{q}"),
    "recsys": ("Test_Time_Learning", QuestionType.ACTION_RECOMMENDATION,
               "Act as a movie recommender that has memorised the dialogues above. For the new "
               "conversation below, reply with a numbered list of 20 movie titles and nothing "
               "else.\n\nConversation: {q}"),
    "infbench_sum": ("Long_Range_Understanding", QuestionType.LONGITUDINAL,
                     "Summarise the book you have memorised.\n\n{q}"),
    "detective_qa": ("Long_Range_Understanding", QuestionType.LONGITUDINAL,
                     "Answer the question below from what you have memorised of the book, in "
                     "exactly the output format it asks for.\n\n{q}"),
    "factconsolidation": ("Conflict_Resolution", QuestionType.DISTRACTOR_RESISTANCE,
                          "The facts you have memorised carry serial numbers; when two conflict, "
                          "the one with the larger number is newer and holds. Answer only from "
                          "those facts, not from what you know of the world, as briefly as "
                          "possible.\n\nQuestion: Going by the memorised facts, {q}"),
}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_EPOCH = datetime(2024, 1, 1)
_PerQuestion = Literal["qa_pair_id", "question_id", "question_type", "question_date",
                       "previous_event"]
# Lists in a row's metadata with one entry per question, and the question meta field of each.
_PER_QUESTION: tuple[tuple[str, _PerQuestion], ...] = (
    ("qa_pair_ids", "qa_pair_id"), ("uuids", "qa_pair_id"), ("question_ids", "question_id"),
    ("question_types", "question_type"), ("question_dates", "question_date"),
    ("previous_events", "previous_event"))


class _QuestionMeta(TypedDict, total=False):
    source: Required[str]
    sub_dataset: Required[str]
    family: Required[str]
    competency: Required[str]
    answers: Required[list[str]]  # every accepted answer
    raw_question: Required[str]
    # One entry each of the row's per-question lists, as the file gives it.
    qa_pair_id: object
    question_id: object
    question_type: object
    question_date: object
    previous_event: object
    keypoints: list[str]
    canonical_answer_truncated_from: int


def family(source: str) -> str | None:
    for prefix in sorted(FAMILIES, key=len, reverse=True):
        if source.startswith(prefix):
            return prefix
    return None


def chunk_context(text: str, chunk_tokens: int) -> list[str]:
    """``text`` in pieces of at most ``chunk_tokens`` (estimated) tokens, cut at sentence ends;
    a single sentence longer than that is a piece of its own."""
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    for sentence in _SENTENCE_END.split(text):
        sentence = sentence.strip()
        if not sentence:
            continue
        n = estimate_tokens(sentence)
        if current and size + n > chunk_tokens:
            chunks.append(" ".join(current))
            current, size = [], 0
        current.append(sentence)
        size += n
    if current:
        chunks.append(" ".join(current))
    return chunks


def iter_rows(path: Path) -> Iterator[tuple[int, Any]]:
    """(row number, row): a Parquet split as released, JSON lines read line by line, or a JSON
    list read item by item."""
    if not path.is_file():
        raise DatasetError(f"{path}: source file not found")
    if path.suffix == ".parquet":
        yield from _parquet_rows(path)
        return
    with path.open("rb") as fh:
        head = fh.read(4096).lstrip(b"\xef\xbb\xbf").lstrip()
    if head.startswith(b"["):
        yield from stream_items(path, "a JSON list of MemoryAgentBench rows")
        return
    yield from _json_line_rows(path)


def _json_line_rows(path: Path) -> Iterator[tuple[int, Any]]:
    """The rows of a JSON-lines file, one a line, blank lines skipped."""
    with path.open("rb") as fh:
        row = -1
        for line_no, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8-sig" if line_no == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise DatasetError(f"{path}: line {line_no}: not UTF-8 text (byte {exc.start} "
                                   "of the line); save the file as UTF-8") from None
            if not line.strip():
                continue
            row += 1
            try:
                item = loads_guarded(line, what=f"{path}: line {line_no}")
            except JsonTooDeep:
                raise DatasetError(f"{path}: line {line_no}: JSON nested too deeply to be a "
                                   "MemoryAgentBench row; repair the file or export it "
                                   "again") from None
            except JsonRefused as exc:
                if isinstance(exc.cause, json.JSONDecodeError):
                    raise DatasetError(f"{path}: line {line_no}: invalid JSON: {exc.cause.msg} "
                                       "(expected one row per line, as datasets' to_json "
                                       "writes)") from None
                raise DatasetError(f"{path}: line {line_no}: {exc.reason}") from None
            yield row, item


def _parquet_rows(path: Path) -> Iterator[tuple[int, Any]]:
    """The rows of a Parquet file, one record batch of one row at a time (pyarrow decodes a row
    group's pages as it goes; the Hugging Face files hold a split in one file)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DatasetError(f"{path}: reading Parquet needs pyarrow "
                           f"({install_hint('benchmarks')}), or export the split as JSON "
                           "lines") from None
    import pyarrow as pa

    try:
        reader = pq.ParquetFile(path)
        row = 0
        for batch in reader.iter_batches(batch_size=1):
            for item in batch.to_pylist():
                yield row, item
                row += 1
    except (pa.ArrowException, OSError) as exc:
        raise DatasetError(f"{path}: not a readable Parquet file ({exc})") from None


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    return [] if value is None or value == "" else [value]


def _answers(value: Any) -> list[str]:
    """Accepted answers as a flat list of strings (one answer, a list, or a list of lists)."""
    out: list[str] = []
    for v in _as_list(value):
        out.extend(_answers(v) if isinstance(v, list) else [str(v)])
    return out


class _ScopeStub(TypedDict):
    """What a row's scope needs besides its chunks: its id and where it came from."""

    scope_id: str
    source: str
    competency: str


def _convert(ri: int, row: Any, loc: Locator, chunk_tokens: int, prefix: str
             ) -> tuple[_ScopeStub, list[str], list[QuestionJson]]:
    """One row as (scope stub, its chunks, its questions)."""
    context = loc.field(row, "context", str, (ri,))
    meta = row.get("metadata") or {}
    if not isinstance(meta, dict):
        raise loc.error((ri, "metadata"), "expected an object")
    source, fam = _source(ri, row, meta, loc)
    questions = _questions(ri, row, loc)
    answers = _as_list(row["answers"])
    chunks = chunk_context(context, chunk_tokens)
    if not chunks:
        raise loc.error((ri, "context"), "the context is empty")
    scope_id = f"{prefix}_{_slug(source)}_{ri + 1:03d}"
    competency, qtype, template = FAMILIES[fam]
    qs = []
    for qi, (question, answer) in enumerate(_pairs(ri, questions, answers, loc)):
        accepted = _answers(answer)
        if not accepted:
            raise loc.error((ri, "answers", qi), "no answer for this question")
        qmeta: _QuestionMeta = {"source": "memoryagentbench", "sub_dataset": source,
                                 "family": fam, "competency": competency, "answers": accepted,
                                 "raw_question": question}
        _add_row_meta(qmeta, qi, row, meta)
        canonical = _canonical(accepted[0], qmeta)
        q: QuestionJson = {
            "question_id": f"{scope_id}_q{qi + 1:04d}",
            "scope_id": scope_id,
            "checkpoint_after": len(chunks),
            "question_type": qtype.value,
            "prompt": template.format(q=question),
            "ground_truth": {"canonical_answer": canonical, "required_evidence_refs": [],
                             "key_facts": short_facts(canonical) if fam != "recsys" else []},
            "meta": qmeta,
        }
        _set_asked_at(q, qmeta.get("question_date"), len(chunks))
        qs.append(q)
    return _ScopeStub(scope_id=scope_id, source=source, competency=competency), chunks, qs


def _source(ri: int, row: dict[str, Any], meta: dict[str, Any], loc: Locator
            ) -> tuple[str, str]:
    """The row's sub-dataset (its metadata's ``source``) and the family it belongs to."""
    source = meta.get("source", row.get("source"))
    if not isinstance(source, str) or not source.strip():
        raise loc.error((ri, "metadata", "source"), "required field is missing (it names the "
                        "sub-dataset, e.g. eventqa_full)")
    source = source.strip()
    fam = family(source)
    if fam is None:
        raise loc.error((ri, "metadata", "source"), f"unknown sub-dataset {source!r}; known "
                        f"families: {', '.join(sorted(FAMILIES))}")
    return source, fam


def _questions(ri: int, row: dict[str, Any], loc: Locator) -> list[str]:
    """The row's questions (one string or a list of them); refuses a row without questions
    or without answers."""
    if "questions" not in row:
        raise loc.error((ri, "questions"), "required field is missing")
    if "answers" not in row:
        raise loc.error((ri, "answers"), "required field is missing")
    if not isinstance(row["questions"], (list, str)):
        raise loc.error((ri, "questions"), "expected a list of questions (strings), got "
                        f"{type(row['questions']).__name__}")
    bad = [i for i, q in enumerate(_as_list(row["questions"])) if not isinstance(q, str)]
    if bad:
        raise loc.error((ri, "questions", bad[0]), f"expected a question (a string); "
                        f"{len(bad)} question(s) are not strings")
    questions = list(_as_list(row["questions"]))
    if not questions:
        raise loc.error((ri, "questions"), "the row has no question")
    return questions


def _pairs(ri: int, questions: list[str], answers: list[Any], loc: Locator
           ) -> list[tuple[str, Any]]:
    """(question, its answer or answers) as the benchmark pairs them: questions with answers
    one to one when both are lists of several, otherwise the one question takes every answer."""
    if len(questions) > 1 and len(answers) > 1:
        if len(questions) != len(answers):
            raise loc.error((ri, "answers"), f"{len(answers)} answers for {len(questions)} "
                            "questions")
        return list(zip(questions, answers, strict=True))
    return [(questions[0], answers)]


def _add_row_meta(qmeta: _QuestionMeta, qi: int, row: dict[str, Any],
                  meta: dict[str, Any]) -> None:
    """Copy into question ``qi``'s meta its entry of the row's per-question lists, and the
    row's keypoints."""
    for name, field_name in _PER_QUESTION:
        values = _as_list(meta.get(name, row.get(name)))
        if qi < len(values):
            qmeta[field_name] = values[qi]
    if isinstance(meta.get("keypoints"), list):
        qmeta["keypoints"] = [str(k) for k in meta["keypoints"]]


def _canonical(answer: str, qmeta: _QuestionMeta) -> str:
    """The first accepted answer, cut to :data:`MAX_ANSWER_CHARS` (the cut noted in meta)."""
    if len(answer) > MAX_ANSWER_CHARS:
        # The whole answer stays in meta.answers, which the protocol scores against.
        qmeta["canonical_answer_truncated_from"] = len(answer)
        return answer[:MAX_ANSWER_CHARS]
    return answer


def _set_asked_at(question: QuestionJson, date: Any, chunks: int) -> None:
    """The question's own time where the row gives one (the LongMemEval sub-sets' question
    dates), told to the agent as "now". The chunks' times are invented (a minute apart from
    _EPOCH), so they may fall after it: the question is then marked to allow that."""
    try:
        asked = parse_lme_date(date) if isinstance(date, str) else None
    except ValueError:
        return
    if asked is None:
        return
    question["asked_at"] = asked.strftime("%Y-%m-%dT%H:%M:%S")
    if _EPOCH + timedelta(minutes=max(chunks - 1, 0)) > asked:
        question["allow_later_episodes"] = True


def _slug(source: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", source).strip("-") or "source"


def write_memoryagentbench(path: Path, out: Path, prefix: str = "mab",
                           chunk_tokens: int = DEFAULT_CHUNK_TOKENS) -> dict[str, int]:
    """Import ``path`` straight into the LENS file ``out``, one row at a time."""
    if chunk_tokens < 16:
        raise DatasetError(f"chunk size must be at least 16 tokens (got {chunk_tokens})")
    loc = Locator(path)
    with StreamingDatasetWriter(out, path.stem) as w:
        for ri, row in iter_rows(path):
            scope, chunks, qs = _convert(ri, row, loc, chunk_tokens, prefix)
            w.begin_scope(scope["scope_id"])
            for ci, text in enumerate(chunks):
                w.episode({"episode_id": f"{scope['scope_id']}_c{ci + 1:05d}",
                           "scope_id": scope["scope_id"],
                           "timestamp": (_EPOCH + timedelta(minutes=ci)).strftime(
                               "%Y-%m-%dT%H:%M:%S"),
                           "text": text, "meta": {"chunk": ci + 1}},
                          f"{path}: $[{ri}].context chunk {ci + 1}")
            w.end_scope({"source": "memoryagentbench", "sub_dataset": scope["source"],
                         "competency": scope["competency"], "row": ri,
                         "chunk_tokens": chunk_tokens})
            for qi, q in enumerate(qs):
                w.question(q, f"{path}: $[{ri}].questions[{qi}]")
        return w.finish({"source": {"format": "memoryagentbench", "file": path.name,
                                    "chunk_tokens": chunk_tokens}})
