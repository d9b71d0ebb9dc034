"""Writing an imported dataset one episode at a time: a conversation of ten million tokens is
never held whole. Each episode and question is checked against the LENS models as it is written;
the file appears under its name only once complete."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import IO

from pydantic import ValidationError

from lens.core.errors import DatasetError, UserError
from lens.data.dataset import Episode, Question
from lens.data.importers.records import EpisodeJson, QuestionJson


def check_out(out: Path, sources: list[Path]) -> None:
    """Refuse an ``--out`` that would replace what the import reads or a folder: the source
    would be lost when the finished file takes its name. Links are resolved first."""
    target = out.resolve()
    if out.is_dir():
        raise UserError(f"{out}: --out names an existing folder; give a file path inside it "
                        f"(e.g. {out / 'dataset.json'})")
    for src in sources:
        real = src.resolve()
        if target == real or (src.is_dir() and real in target.parents):
            raise UserError(f"{out}: --out is the import's source {src} (or inside it); the "
                            "import would replace what it reads; name another file")


def make_parents(out: Path) -> list[Path]:
    """Create the missing folders of ``out``; returns them, deepest first, for
    :func:`remove_parents` to take back when the import fails."""
    missing = [p for p in out.parent.absolute().parents if not p.exists()][::-1]
    missing = [*missing, out.parent.absolute()] if not out.parent.exists() else missing
    out.parent.mkdir(parents=True, exist_ok=True)
    return missing[::-1]


def remove_parents(created: list[Path]) -> None:
    for folder in created:
        try:
            folder.rmdir()
        except OSError:
            break


def _check(model: type[Episode] | type[Question], obj: EpisodeJson | QuestionJson,
           where: str) -> None:
    try:
        model.model_validate(obj)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise DatasetError(f"{where}: the imported {model.__name__.lower()} is not valid LENS "
                           f"({field}: {first['msg']})") from None


class StreamingDatasetWriter:
    """``with StreamingDatasetWriter(out, dataset_id) as w:`` then, per scope, ``begin_scope``,
    ``episode`` for each episode in stream order and ``end_scope``; ``question`` at any time
    (questions are small and kept until the end); ``finish(meta)`` last."""

    def __init__(self, out: Path, dataset_id: str) -> None:
        self.out = out
        self.tmp = out.with_name(out.name + ".tmp")
        self.dataset_id = dataset_id
        self.scopes = self.episodes = 0
        self.questions: list[QuestionJson] = []
        self._fh: IO[str] | None = None
        self._in_scope = False
        self._scope_episodes = 0
        self._done = False
        self._created: list[Path] = []

    def __enter__(self) -> StreamingDatasetWriter:
        self._created = make_parents(self.out)
        self._fh = self.tmp.open("w", encoding="utf-8")
        self._fh.write('{\n "version": "0.1.0",\n "dataset_id": ' + json.dumps(self.dataset_id)
                       + ',\n "scopes": [')
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._fh is not None:
            self._fh.close()
        if self._done and kind is None:
            self.tmp.replace(self.out)
        self.tmp.unlink(missing_ok=True)
        if not (self._done and kind is None):
            remove_parents(self._created)

    @property
    def fh(self) -> IO[str]:
        assert self._fh is not None, "use the writer in a with block"
        return self._fh

    def begin_scope(self, scope_id: str) -> None:
        self.fh.write(("," if self.scopes else "") + "\n  {\"scope_id\": " + json.dumps(scope_id)
                      + ", \"episodes\": [")
        self.scopes += 1
        self._in_scope = True
        self._scope_episodes = 0

    def episode(self, ep: EpisodeJson, where: str) -> None:
        _check(Episode, ep, where)
        self.fh.write(("," if self._scope_episodes else "") + "\n   "
                      + json.dumps(ep, ensure_ascii=False))
        self._scope_episodes += 1
        self.episodes += 1

    def end_scope(self, meta: Mapping[str, object]) -> int:
        """Closes the scope; returns how many episodes it has."""
        self.fh.write("\n  ], \"meta\": " + json.dumps(meta, ensure_ascii=False) + "}")
        self._in_scope = False
        return self._scope_episodes

    def question(self, q: QuestionJson, where: str) -> None:
        _check(Question, q, where)
        self.questions.append(q)

    def finish(self, meta: Mapping[str, object]) -> dict[str, int]:
        assert not self._in_scope
        self.fh.write('\n ],\n "questions": [\n')
        self.fh.write(",\n".join(json.dumps(q, ensure_ascii=False) for q in self.questions))
        self.fh.write('\n ],\n "meta": ' + json.dumps(meta, ensure_ascii=False) + "\n}\n")
        self._done = True
        return {"scopes": self.scopes, "episodes": self.episodes,
                "questions": len(self.questions)}
