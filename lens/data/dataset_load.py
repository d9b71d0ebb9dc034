"""Loading a dataset file: streamed when it is valid (:mod:`lens.data.dataset_stream`), read whole
for the messages when it is not (every problem with its JSON path), and only ever streamed when
it is too large to read whole; the questions an errata file or ``--drop-invalid-questions``
leaves out; the content hash of a file without holding it."""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from lens.core.errors import DatasetError, Problem
from lens.data.dataset import Dataset, Scope
from lens.data.dataset_check import semantic_problems, validate_raw
from lens.data.dataset_hash import fields_hash
from lens.data.dataset_json import parse_whole
from lens.data.dataset_stream import StreamProblem, stream_dataset
from lens.data.scope_spill import ScopeSpill

# Files up to this size that hold a problem are read whole, so that every problem is listed with
# its JSON path; reading whole peaks at about five times the file (bytes, text, parsed objects).
# Larger files are only ever streamed (held once, as models, or as an outline with the text on
# disk: lens.data.scope_spill) and report the first problem the stream meets.
MAX_WHOLE_FILE_BYTES = 64 * 1024 * 1024


def _read_json(path: Path) -> Any:
    name = str(path)
    if not path.exists():
        raise DatasetError(f"{name}: dataset file not found; check the path (relative paths in a "
                           "config are resolved against the config file's folder)")
    if path.is_dir():
        raise DatasetError(f"{name}: is a folder; give the path of a LENS JSON file")
    if not path.is_file():
        # A FIFO would block the read for good, a device (/dev/zero) would never end.
        raise DatasetError(f"{name}: not a regular file; give the path of a LENS JSON file")
    size = path.stat().st_size
    if size > MAX_WHOLE_FILE_BYTES:
        # Reached only when the file could not be streamed either (an unreadable file).
        raise DatasetError(f"{name}: {size} bytes is over the {MAX_WHOLE_FILE_BYTES} byte limit "
                           "for reading a dataset file whole, and the file could not be read "
                           "as a stream; check that it is readable")
    return parse_whole(path.read_bytes(), name)


def file_content_hash(path: str | Path) -> str:
    """``load_dataset(path).content_hash()`` with one scope in memory at a time (the file is
    streamed twice), for checking a file against a recorded hash while a run holds its dataset.
    A file the stream cannot read is loaded, which raises the usual :class:`DatasetError`."""
    p = Path(path)
    try:
        head = stream_dataset(p, on_scope=lambda scope: None)
        fields: dict[str, object] = {k: getattr(head, k) for k in Dataset.model_fields
                                  if k != "dataset_id"}
        fields["scopes"] = lambda add: stream_dataset(p, on_scope=add)
        return fields_hash(fields)
    except (OSError, StreamProblem):
        return load_dataset(p).content_hash()


def _stream(path: Path, outline: bool) -> Dataset:
    if not outline:
        return stream_dataset(path)
    spill = ScopeSpill()
    scopes: list[Scope] = []
    try:
        head = stream_dataset(path, on_scope=lambda scope: scopes.append(spill.add(scope)))
    except BaseException:
        spill.close()
        raise
    return head.model_copy(update={"scopes": scopes}).with_spill(spill)


def _stream_or_problem(path: Path, outline: bool = False
                       ) -> tuple[Dataset | None, StreamProblem | None]:
    """The streamed dataset, or the first problem the stream met (both None when the path is
    not a readable regular file: the whole-file reader names why)."""
    try:
        return (_stream(path, outline), None) if path.is_file() else (None, None)
    except StreamProblem as exc:
        return None, exc
    except OSError:
        return None, None


def _too_big_to_read_whole(path: Path) -> bool:
    try:
        return path.stat().st_size > MAX_WHOLE_FILE_BYTES
    except OSError:
        return False


def _first_problem_error(path: Path, problem: StreamProblem) -> DatasetError:
    return DatasetError(
        f"{path}: invalid dataset (the first problem in file order: the file is "
        f"{path.stat().st_size} bytes, over the {MAX_WHOLE_FILE_BYTES} bytes lens reads whole "
        "to list every problem; fix this one and load it again for the next)",
        [Problem(str(path), problem.location, problem.message)])


def _load_with_problems(p: Path, outline: bool = False
                        ) -> tuple[Dataset | None, list[Problem]]:
    ds, first = _stream_or_problem(p, outline)
    if ds is not None:
        return ds, semantic_problems(ds, str(p))
    if first is not None and _too_big_to_read_whole(p):
        raise _first_problem_error(p, first)
    # The whole file at once, for the messages: every problem with its JSON path.
    return validate_raw(_read_json(p), str(p))


def load_dataset(path: str | Path) -> Dataset:
    """Load and validate a LENS dataset file; raise :class:`DatasetError` listing every problem
    (only the first one for a file over :data:`MAX_WHOLE_FILE_BYTES`, which is never read
    whole)."""
    return load_dataset_dropping(path)[0]


class DroppedQuestion(BaseModel):
    """A question left out of a run because the dataset gets it wrong, and why."""

    question_id: str
    reason: str


_QUESTION_LOC = re.compile(r"^\$\.questions\[(\d+)\]")


def load_dataset_dropping(path: str | Path, *, drop: Collection[str] = (),
                          drop_invalid: bool = False, outline: bool = False
                          ) -> tuple[Dataset, list[DroppedQuestion]]:
    """:func:`load_dataset`, leaving out the questions that have problems of their own (a
    ref streamed after the checkpoint, a checkpoint out of range, an unknown scope) when
    ``drop_invalid`` is set or their id is in ``drop`` (an errata file's exclusions); every
    other problem still refuses the file. Returns the dataset and what was left out.
    ``outline``: the dataset as an outline (:class:`lens.data.scope_spill.ScopeSpill`), its
    episodes' text on disk, one scope read back at a time with ``Dataset.full_scope``; a file
    read whole for its problems is returned whole."""
    p = Path(path)
    ds, problems = _load_with_problems(p, outline)
    dropped, kept = _sort_problems(ds, problems, drop, drop_invalid)
    if ds is not None and dropped and not kept:
        ds, kept = _without(ds, dropped, p)
    if kept or ds is None:
        raise _invalid(p, kept, can_drop=ds is not None and not drop_invalid)
    if ds.dataset_id is None:
        ds = ds.model_copy(update={"dataset_id": p.stem})
    return ds, [DroppedQuestion(question_id=q, reason="; ".join(r)) for q, r in dropped.items()]


def _sort_problems(ds: Dataset | None, problems: list[Problem], drop: Collection[str],
                   drop_invalid: bool) -> tuple[dict[str, list[str]], list[Problem]]:
    """The problems that leave their question out (the reasons by question id) and those
    that still refuse the file."""
    dropped: dict[str, list[str]] = {}
    kept: list[Problem] = []
    for problem in problems:
        m = _QUESTION_LOC.match(problem.location)
        qid = ds.questions[int(m.group(1))].question_id if ds is not None and m else None
        if qid is not None and (drop_invalid or qid in drop):
            where = _QUESTION_LOC.sub("", problem.location).lstrip(".")
            dropped.setdefault(qid, []).append(f"{where}: {problem.message}" if where
                                               else problem.message)
        else:
            kept.append(problem)
    return dropped, kept


def _without(ds: Dataset, dropped: Collection[str], p: Path) -> tuple[Dataset, list[Problem]]:
    """``ds`` without the ``dropped`` questions, and the problem of having none left."""
    questions = [q for q in ds.questions if q.question_id not in dropped]
    problems = [] if questions else [Problem(str(p), "$.questions", "every question has a "
                                             "problem; nothing would be asked")]
    return ds.model_copy(update={"questions": questions}), problems


def _invalid(p: Path, kept: list[Problem], *, can_drop: bool) -> DatasetError:
    """The refusal of a dataset with problems; it says how to leave out the questions whose
    problems are their own when ``can_drop`` (a dataset was read and nothing was dropped)."""
    message = f"{p}: invalid dataset ({len(kept)} problem(s))"
    own = sum(1 for x in kept if _QUESTION_LOC.match(x.location))
    if can_drop and own:
        message += (f"; {own} of them belong to single questions: run with "
                    "--drop-invalid-questions to leave those questions out (reported in "
                    "the checklist), or exclude them in an errata file (scoring.errata)")
    return DatasetError(message, kept)


def check_dataset_file(path: str | Path) -> list[Problem]:
    """Every problem with a dataset file (empty when it is valid); for a file over
    :data:`MAX_WHOLE_FILE_BYTES`, the first problem the stream meets."""
    p = Path(path)
    try:
        if p.is_file() and _too_big_to_read_whole(p):
            load_dataset(p)
            return []
        data = _read_json(p)
    except DatasetError as exc:
        if exc.problems:
            return list(exc.problems)
        return [Problem(str(p), "", str(exc.args[0]).removeprefix(f"{p}: "))]
    return validate_raw(data, str(p))[1]
