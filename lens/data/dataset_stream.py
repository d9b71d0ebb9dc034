"""A dataset file read as a stream, one scope at a time: each scope's parsed JSON is dropped once
it is a model, so a file of any size is held in memory once, as models. It refuses what the
whole-file reader (:mod:`lens.data.dataset_json`) refuses and stops at the first problem, with
its JSON path."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import ijson
from ijson.common import ObjectBuilder
from pydantic import ValidationError

from lens.core.errors import DatasetError
from lens.core.jsonguard import MAX_JSON_DEPTH, STREAM_BUFFER, JsonRefused, TokenChunks
from lens.data.dataset import Dataset, Scope
from lens.data.dataset_check import json_path, validation_problems
from lens.data.dataset_json import (
    Refused,
    TooDeep,
    duplicate_key_message,
    not_finite_message,
)

# The dataset's top-level fields; a scope is read on its own, the others are kept as parsed.
_KNOWN = frozenset(Dataset.model_fields)
_OPENS = ("start_map", "start_array")
_CLOSES = ("end_map", "end_array")
_BOM = b"\xef\xbb\xbf"
_TOO_DEEP = (f"JSON nested more than {MAX_JSON_DEPTH} levels deep (a LENS dataset is a few "
             "levels deep); repair the file or export it again")


class StreamProblem(Exception):
    """The first problem the stream met: where (a JSON path) and what, with the fix."""

    def __init__(self, loc: tuple[int | str, ...] | str, message: str) -> None:
        super().__init__(message)
        self.location = loc if isinstance(loc, str) else json_path(loc)
        self.message = message

    @classmethod
    def first_of(cls, exc: ValidationError, at: tuple[int | str, ...] = ()) -> StreamProblem:
        first = validation_problems(exc, "", at)[0]
        return cls(first.location, first.message)


class _StrictBuilder(ObjectBuilder):
    """ijson's object builder, refusing what the whole-file reader refuses: a key repeated in
    one object and numbers that are not finite."""

    def __init__(self) -> None:
        super().__init__()
        self._keys: list[set[str]] = []

    def event(self, event: str, value: Any) -> None:
        if event == "start_map":
            self._keys.append(set())
        elif event == "end_map":
            self._keys.pop()
        elif event == "map_key":
            if value in self._keys[-1]:
                self.key = value
                raise Refused(duplicate_key_message(value))
            self._keys[-1].add(value)
        elif event == "number" and isinstance(value, float) and not math.isfinite(value):
            raise Refused(not_finite_message(str(value)))
        super().event(event, value)

    def where(self, base: tuple[int | str, ...]) -> tuple[int | str, ...]:
        """The JSON path of the value being read, from ``base`` (the path of the root)."""
        loc = list(base)
        for parent in self.containers[:-1]:
            # Each open container is the last value added to its parent.
            loc.append(len(parent) - 1 if isinstance(parent, list) else next(reversed(parent)))
        if self.containers:
            inner = self.containers[-1]
            if isinstance(inner, list):
                loc.append(len(inner))
            elif hasattr(self, "key"):
                loc.append(self.key)
        return tuple(loc)


class _Reader:
    """One streamed read: ijson's events in, the dataset's top-level fields and its scopes
    out. A scope or a top-level list or object is built by a :class:`_StrictBuilder`; the
    events between them are checked here."""

    def __init__(self, on_scope: Callable[[Scope], None] | None) -> None:
        self.on_scope = on_scope
        self.top: dict[str, Any] = {}
        self.scopes: list[Scope] = []
        self.seen: set[str] = set()
        self.read = 0  # scopes read so far
        self.builder: _StrictBuilder | None = None
        self.base: tuple[int | str, ...] = ()  # the JSON path of what the builder builds
        self.target = ""  # ... and its ijson prefix
        self.prefix = ""  # the prefix of the last event

    def feed(self, events: Iterable[tuple[str, str, Any]]) -> None:
        depth = 0
        for prefix, event, value in events:
            self.prefix = prefix
            if event in _OPENS:
                depth += 1
                if depth > MAX_JSON_DEPTH:
                    raise TooDeep(_TOO_DEEP)
            elif event in _CLOSES:
                depth -= 1
            builder = self.builder
            if builder is None:
                self._between(prefix, event, value)
            else:
                builder.event(event, value)
                if prefix == self.target and event in _CLOSES:
                    self._finish(builder.value)

    def _between(self, prefix: str, event: str, value: Any) -> None:
        """An event outside any value being built: the top level and the list of scopes."""
        if prefix == "":
            self._top_level(event, value)
        elif prefix == "scopes":
            if event not in ("start_array", "end_array"):
                raise StreamProblem(("scopes",), "must be a list of scopes")
            self.top["scopes"] = self.scopes
        elif (prefix == "scopes.item" and event == "start_map") or (
                prefix in _KNOWN and event in _OPENS):
            self._start(prefix, event, value)
        elif prefix in _KNOWN:
            self.top[prefix] = value
        else:
            raise StreamProblem(("scopes", self.read),
                                "must be an object with scope_id and episodes")

    def _top_level(self, event: str, value: Any) -> None:
        if event == "map_key":
            if value not in _KNOWN:
                raise StreamProblem((value,), "unknown field; remove it or move it under 'meta'")
            if value in self.seen:
                raise StreamProblem((value,), duplicate_key_message(value))
            self.seen.add(value)
        elif event not in ("start_map", "end_map"):
            raise StreamProblem((), "the top level must be a JSON object with 'scopes' and "
                                "'questions'")

    def _start(self, prefix: str, event: str, value: Any) -> None:
        builder = _StrictBuilder()
        builder.event(event, value)
        self.builder = builder
        self.target = prefix
        self.base = ("scopes", self.read) if prefix == "scopes.item" else (prefix,)

    def _finish(self, value: Any) -> None:
        if self.target == "scopes.item":
            try:
                scope = Scope.model_validate(value)
            except ValidationError as exc:
                raise StreamProblem.first_of(exc, self.base) from None
            self.read += 1
            if self.on_scope is None:
                self.scopes.append(scope)
            else:
                self.on_scope(scope)
        else:
            self.top[self.target] = value
        self.builder = None

    def where(self) -> tuple[int | str, ...]:
        """The JSON path of the last event read."""
        if self.builder is not None:
            return self.builder.where(self.base)
        if self.prefix.startswith("scopes.item"):
            # Between two scopes: the one after the last read.
            return ("scopes", self.read)
        return tuple(p for p in self.prefix.split(".") if p)


def _json_message(exc: Exception) -> str:
    # yajl's message spans several lines of context; its first line names the problem.
    text = str(exc).removeprefix("b'").removeprefix('b"')
    return text.replace("\\n", "\n").split("\n", 1)[0].strip() or type(exc).__name__


def _refusal(exc: Exception, where: tuple[int | str, ...], chunks: TokenChunks,
             path: Path) -> Exception:
    """What to raise for a refusal, a parser error or bytes that are not UTF-8 at ``where``."""
    if isinstance(exc, TooDeep):
        return DatasetError(f"{path}: {exc}")
    if isinstance(exc, Refused):
        return StreamProblem(where, str(exc))
    if chunks.lone_surrogate is not None and isinstance(exc, ijson.JSONError):
        return StreamProblem(where, chunks.lone_surrogate)
    if isinstance(exc, UnicodeDecodeError) or "UTF8" in str(exc):
        return StreamProblem(where, "not UTF-8 text here; re-save the file as UTF-8")
    return StreamProblem(where, f"invalid JSON in or after this value ({_json_message(exc)}); "
                         "repair the file or export it again")


def stream_dataset(path: Path, on_scope: Callable[[Scope], None] | None = None) -> Dataset:
    """The dataset of the file at ``path``, read one scope at a time; with ``on_scope``, each
    scope goes to it instead and the dataset returned has none. Raises :class:`StreamProblem`
    at the first problem it meets (JSON, structure or a field), :class:`DatasetError` for a
    file refused whole (nested too deep, a string too long)."""
    reader = _Reader(on_scope)
    with path.open("rb") as fh:
        if fh.read(3) != _BOM:
            fh.seek(0)
        chunks = TokenChunks(fh, refuse_lone_surrogates=True)
        try:
            reader.feed(ijson.parse(chunks, use_float=True, buf_size=STREAM_BUFFER))
        except (Refused, ijson.JSONError, UnicodeDecodeError) as exc:
            raise _refusal(exc, reader.where(), chunks, path) from None
        except JsonRefused as exc:
            raise DatasetError(f"{path}: {exc}") from None
    try:
        return Dataset.model_validate(reader.top)
    except ValidationError as exc:
        raise StreamProblem.first_of(exc) from None
