"""Shared pieces of the importers: reading the source file and locating malformed items."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ijson
from ijson.common import ObjectBuilder

from lens.core.errors import DatasetError
from lens.core.jsonguard import (
    MAX_JSON_DEPTH,
    STREAM_BUFFER,
    JsonRefused,
    TokenChunks,
    loads_guarded,
)
from lens.data.dataset_check import json_path

SHORT_ANSWER_WORDS = 12


def read_source(path: Path) -> Any:
    if not path.is_file():
        raise DatasetError(f"{path}: source file not found")
    try:
        return loads_guarded(path.read_bytes(), what=str(path))
    except JsonRefused as exc:
        message = str(exc).removeprefix(f"{path}: ").removeprefix(f"{path} ")
        raise DatasetError(f"{path}: {message}") from None


def stream_items(path: Path, what: str) -> Iterator[tuple[int, Any]]:
    """The items of a top-level JSON list, parsed one at a time (ijson): memory holds one item,
    not the file. Errors name the file and the item where parsing stopped."""
    if not path.is_file():
        raise DatasetError(f"{path}: source file not found")
    with path.open("rb") as fh:
        head = fh.read(3)
        start = 3 if head == b"\xef\xbb\xbf" else 0
        fh.seek(start)
        first = b""
        while True:
            first = fh.read(1)
            if not first or not first.isspace():
                break
        if first != b"[":
            raise DatasetError(f"{path}: $: expected {what}")
        fh.seek(start)
        index = -1
        try:
            for index, item in enumerate(_items(fh)):
                yield index, item
        except TooDeep:
            raise DatasetError(f"{path}: $[{index + 1}]: JSON nested more than "
                               f"{MAX_JSON_DEPTH} levels deep; repair the file or export it "
                               "again") from None
        except ijson.JSONError as exc:
            raise DatasetError(f"{path}: $[{index + 1}]: invalid JSON: {exc}") from None
        except UnicodeDecodeError as exc:
            raise DatasetError(f"{path}: $[{index + 1}]: not UTF-8 text ({exc.reason})") from None
        except JsonRefused as exc:
            raise DatasetError(f"{path}: $[{index + 1}]: {exc}") from None


class TooDeep(Exception):
    """JSON nested deeper than :data:`MAX_JSON_DEPTH`."""


def guarded_events(fh: Any) -> Iterator[tuple[str, str, Any]]:
    """``ijson.parse(fh)`` that raises :class:`TooDeep` past :data:`MAX_JSON_DEPTH` levels of
    nesting, read in small buffers (see :data:`lens.core.jsonguard.STREAM_BUFFER`): a file of
    nested brackets is refused at once instead of filling memory with their paths."""
    depth = 0
    for prefix, event, value in ijson.parse(TokenChunks(fh), use_float=True,
                                            buf_size=STREAM_BUFFER):
        if event in ("start_map", "start_array"):
            depth += 1
            if depth > MAX_JSON_DEPTH:
                raise TooDeep
        elif event in ("end_map", "end_array"):
            depth -= 1
        yield prefix, event, value


def _items(fh: Any) -> Iterator[Any]:
    """``ijson.items(fh, "item")`` under the depth guard of :func:`guarded_events`."""
    builder: ObjectBuilder | None = None
    for prefix, event, value in guarded_events(fh):
        if builder is not None:
            builder.event(event, value)
            if prefix == "item" and event in ("end_map", "end_array"):
                yield builder.value
                builder = None
        elif prefix == "item":
            if event in ("start_map", "start_array"):
                builder = ObjectBuilder()
                builder.event(event, value)
            else:
                yield value


class Locator:
    """Builds errors that name the source file and the JSON path of the bad item."""

    def __init__(self, file: Path | str) -> None:
        self.file = str(file)

    def error(self, loc: tuple[int | str, ...], message: str) -> DatasetError:
        return DatasetError(f"{self.file}: {json_path(loc)}: {message}")

    def field(self, obj: Any, key: str, kind: type | tuple[type, ...],
              loc: tuple[int | str, ...]) -> Any:
        if not isinstance(obj, dict):
            raise self.error(loc, f"expected an object, got {type(obj).__name__}")
        if key not in obj:
            raise self.error((*loc, key), "required field is missing")
        value = obj[key]
        if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _kinds(kind)):
            want = " or ".join(k.__name__ for k in _kinds(kind))
            raise self.error((*loc, key), f"expected {want}, got {type(value).__name__}")
        return value


def _kinds(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def answer_text(value: Any) -> str:
    """Answers are strings in most items but plain numbers or lists in some."""
    if isinstance(value, list):
        return "; ".join(str(v) for v in value)
    return str(value)


def short_facts(answer: str) -> list[str]:
    """A short answer is its own key fact; a long free-text one (a rubric) cannot be matched
    mechanically and gets none, leaving it to the judge."""
    answer = answer.strip()
    if not answer or len(answer.split()) > SHORT_ANSWER_WORDS:
        return []
    return [answer]


# A yes/no answer opens with its verdict: "Yes", "No.", "no, she did not", "Likely yes, he
# trains …". A verdict alone is no key fact the matcher can check; it is the conclusion.
_VERDICT = re.compile(r"^\W*(?:(?:most\s+)?(?:likely|probably)\s*,?\s*)?(yes|no)\b"
                      r"(?=\s*(?:[.,:;!\u2014-]|$))", re.I)
_YES_NO_PROMPT = re.compile(r"^\W*(?:is|are|was|were|do|does|did|has|have|had|can|could|should"
                            r"|would|will|shall)\b", re.I)
VERDICT_ONLY_WORDS = 2


def conclusion_of(answer: str, prompt: str | None = None) -> str | None:
    """The verdict ("yes" or "no") a source answer opens with, when it opens with one (and,
    given the prompt, the prompt asks a yes/no question); else None."""
    m = _VERDICT.match(answer)
    if not m or (prompt is not None and not _YES_NO_PROMPT.match(prompt)):
        return None
    return m.group(1).lower()


def answer_truth(answer: str) -> tuple[list[str], str | None]:
    """(key facts, conclusion) of a short source answer: a bare verdict ("Yes.") is the
    conclusion and no key fact; a longer answer opening with one keeps both."""
    conclusion = conclusion_of(answer)
    if conclusion is not None and len(re.findall(r"\w+", answer)) <= VERDICT_ONLY_WORDS:
        return [], conclusion
    return short_facts(answer), conclusion
