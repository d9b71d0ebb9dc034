"""Gold errata: corrections to a dataset's ground truth, applied when scoring.

An errata file (YAML or JSON) lists questions whose gold answer is known to be wrong::

    dataset: locomo10                # optional: refused when the run's dataset has another id
    source: "public audit, 2025"     # optional default source for every entry
    errata:
      - question_id: locomo_conv-26_q012
        action: exclude              # the question leaves the score
        source: "audit row 17"
      - question_id: locomo_conv-26_q031
        action: correct
        answer: "7 May 2023"         # the corrected gold answer
        key_facts: ["7 May 2023"]    # optional; lens's own matcher uses them

Every entry needs a source (its own or the file's): a correction nobody can check is a silent
change of ground truth. The scores report how many questions the errata touched and the
ceiling they imply for scores against the uncorrected gold.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from lens.core.errors import UserError
from lens.core.jsonguard import JsonRefused, loads_guarded
from lens.core.yamlguard import YamlRefused, load_yaml
from lens.data.dataset import Question
from lens.runs.condition import stable_hash


class Erratum(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question_id: str = Field(min_length=1)
    action: Literal["exclude", "correct"]
    answer: str | None = None
    key_facts: list[str] | None = None
    source: str | None = None
    note: str | None = None

    @model_validator(mode="after")
    def _answer_iff_correct(self) -> Erratum:
        if self.action == "correct" and not (self.answer or "").strip():
            raise ValueError("action 'correct' needs the corrected 'answer'")
        if self.action == "exclude" and (self.answer is not None or self.key_facts is not None):
            raise ValueError("action 'exclude' takes no 'answer' or 'key_facts'; use action "
                             "'correct' to change the gold answer")
        return self


class ErrataFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dataset: str | None = None
    source: str | None = None
    errata: list[Erratum]


class Errata:
    """A loaded errata file: entries by question id, and the file's hash for the condition."""

    def __init__(self, path: Path, doc: ErrataFile) -> None:
        self.path = path
        self.dataset = doc.dataset
        self.entries: dict[str, Erratum] = {}
        for i, e in enumerate(doc.errata):
            if e.question_id in self.entries:
                raise UserError(f"{path}: errata[{i}].question_id: {e.question_id!r} is listed "
                                "twice; keep one entry per question")
            source = e.source or doc.source
            if not source:
                raise UserError(f"{path}: errata[{i}].source: every entry needs a source (or "
                                "give one for the whole file in 'source')")
            self.entries[e.question_id] = e.model_copy(update={"source": source})
        self.hash = stable_hash([e.model_dump() for e in self.entries.values()])

    def condition(self) -> dict[str, Any]:
        """What enters the scoring condition: the content, not the file's name."""
        return {"entries": len(self.entries), "hash": self.hash[:16]}


def load_errata(path: Path) -> Errata:
    if not path.is_file():
        raise UserError(f"{path}: errata file not found (scoring.errata)")
    text = path.read_text(encoding="utf-8-sig")
    try:
        raw = (loads_guarded(text, what=str(path)) if path.suffix == ".json"
               else load_yaml(text))
    except (JsonRefused, YamlRefused) as exc:
        raise UserError(f"{path}: not valid {'JSON' if path.suffix == '.json' else 'YAML'}: "
                        f"{exc}") from None
    try:
        doc = ErrataFile.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = "".join(f"[{x}]" if isinstance(x, int) else f".{x}"
                        for x in err["loc"]).lstrip(".") or "(top level)"
        msg = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field (known: question_id, action, answer, key_facts, source, note)"
        raise UserError(f"{path}: {where}: {msg}") from None
    return Errata(path, doc)


class ErrataReport(BaseModel):
    """What the errata did to one scoring."""

    model_config = ConfigDict(extra="forbid")

    file: str
    entries: int
    excluded: list[str] = Field(default_factory=list)
    corrected: list[str] = Field(default_factory=list)
    # Entries naming no question of the scored dataset (a typo, or another dataset's ids).
    unmatched: list[str] = Field(default_factory=list)
    questions: int = 0

    @property
    def touched(self) -> int:
        return len(self.excluded) + len(self.corrected)

    @property
    def ceiling(self) -> float | None:
        """The best score possible against the uncorrected gold: the share of questions whose
        gold answer the errata leave standing."""
        if not self.questions:
            return None
        return 1.0 - self.touched / self.questions

    def note(self) -> str:
        ceiling = "unknown" if self.ceiling is None else f"{self.ceiling:.1%}"
        text = (f"gold errata {self.file}: touched {self.touched} of {self.questions} "
                f"question(s) ({len(self.excluded)} excluded, {len(self.corrected)} corrected); "
                f"against the uncorrected gold the score ceiling is {ceiling}")
        if self.unmatched:
            text += (f"; {len(self.unmatched)} entr(ies) name no question of this dataset "
                     f"(first: {self.unmatched[0]})")
        return text


def apply_errata(questions: Iterable[Question], errata: Errata, *, dataset_id: str | None,
                 dropped: Collection[str] = ()
                 ) -> tuple[dict[tuple[str, str], Question | None], ErrataReport]:
    """Each question by (scope, question id) after the errata: corrected, or None when
    excluded. Questions the errata do not name are returned unchanged. ``dropped``: the
    questions the run left out (its manifest's ``dataset.dropped``), which are not in the
    dataset it scores; an entry naming one matched before the run, and counts as excluded."""
    if errata.dataset and dataset_id and errata.dataset != dataset_id:
        raise UserError(f"{errata.path}: field 'dataset': these errata are for dataset "
                        f"{errata.dataset!r}, but the run's dataset is {dataset_id!r}; give "
                        "the errata of this dataset")
    out: dict[tuple[str, str], Question | None] = {}
    report = ErrataReport(file=errata.path.name, entries=len(errata.entries))
    seen: set[str] = set()
    for q in questions:
        report.questions += 1
        e = errata.entries.get(q.question_id)
        key = (q.scope_id, q.question_id)
        if e is None:
            out[key] = q
            continue
        seen.add(q.question_id)
        if e.action == "exclude":
            out[key] = None
            report.excluded.append(q.question_id)
            continue
        gt = q.ground_truth.model_copy(update={
            "canonical_answer": e.answer,
            "key_facts": e.key_facts if e.key_facts is not None else q.ground_truth.key_facts})
        meta = {**q.meta, "erratum": {"original_answer": q.ground_truth.canonical_answer,
                                      "source": e.source}}
        out[key] = q.model_copy(update={"ground_truth": gt, "meta": meta})
        report.corrected.append(q.question_id)
    left_out = sorted((set(dropped) & set(errata.entries)) - seen)
    report.unmatched = sorted(set(errata.entries) - seen - set(left_out))
    report.excluded.extend(left_out)
    report.questions += len(left_out)
    return out, report

