"""Needs-memory certification: which questions of a dataset measure memory at all.

``lens datasets certify DATASET --model M`` answers every question twice with the same agent:
with the ``null`` adapter (no memory) and with ``full_context`` (every episode up to the
checkpoint, as much as the payload allows). Both runs are scored mechanically (fact_recall, no
judge). A question is

- ``parametric_leak`` when the agent states its key facts without any memory: it measures the
  model's own knowledge (or a guessable answer), not the memory;
- ``unanswerable`` when the agent cannot state them even with every episode in front of it:
  it measures the model (or a flawed question), not the memory;
- ``unknown`` when fact_recall cannot be computed (no key facts, or an errored question);
- ``certified`` otherwise.

The certification is written beside the dataset as ``<stem>.certification.json`` (for
``datasets/quickstart.json``: ``datasets/quickstart.certification.json``) and is bound to the
dataset's content hash and to the model that certified it. A run with ``scoring.subset:
certified`` scores only the certified questions, and its report says how many were left out and
why.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lens.core.errors import UserError
from lens.data.dataset_load import file_content_hash

SUFFIX = ".certification.json"
Status = Literal["certified", "parametric_leak", "unanswerable", "unknown"]
REASONS = {
    "parametric_leak": "answered without memory (null adapter)",
    "unanswerable": "not answered even with every episode (full_context)",
    "unknown": "fact_recall not computable (no key facts, or the question errored)",
}


class QuestionCertificate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scope_id: str
    question_id: str
    status: Status
    null_fact_recall: float | None
    full_context_fact_recall: float | None


class Certification(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dataset_id: str
    dataset_hash: str
    model: str
    threshold: float
    context_bytes: int
    created_at: str
    run_dir: str
    questions: list[QuestionCertificate] = Field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return dict(Counter(q.status for q in self.questions))

    def certified(self) -> set[tuple[str, str]]:
        return {(q.scope_id, q.question_id) for q in self.questions if q.status == "certified"}

    def exclusion_note(self, kept: int) -> str:
        counts = self.counts()
        excluded = {k: v for k, v in sorted(counts.items()) if k != "certified"}
        why = "; ".join(f"{v} {k}: {REASONS[k]}" for k, v in excluded.items()) or "none"
        return (f"scoring.subset certified: {kept} certified question(s) scored; "
                f"{sum(excluded.values())} excluded ({why}) by the certification with "
                f"{self.model} (fact_recall threshold {self.threshold:g})")


def certification_path(dataset_path: str | Path) -> Path:
    p = Path(dataset_path)
    return p.with_name(p.stem + SUFFIX)


def classify(null_fr: float | None, full_fr: float | None, threshold: float) -> Status:
    if null_fr is None or full_fr is None:
        return "unknown"
    if null_fr >= threshold:
        return "parametric_leak"
    if full_fr < threshold:
        return "unanswerable"
    return "certified"


def load_certification(dataset_path: str | Path) -> Certification:
    """The dataset's certification, checked against the whole dataset file's content (a run of
    some of its scopes uses the same certification); a UserError says the fix."""
    path = certification_path(dataset_path)
    fix = f"run `lens datasets certify {dataset_path} --model MODEL`"
    if not path.is_file():
        raise UserError(f"{path}: no certification for this dataset (needed by "
                        f"scoring.subset: certified); {fix}")
    try:
        cert = Certification.model_validate_json(path.read_text(encoding="utf-8"))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise UserError(f"{path}: not a valid certification (field {where}: {first['msg']}); "
                        f"{fix}") from None
    # Streamed: a run or a scoring holds the dataset already; a second copy could double its
    # memory.
    if cert.dataset_hash != file_content_hash(dataset_path):
        raise UserError(f"{path}: field 'dataset_hash' does not match the dataset (it changed "
                        f"since it was certified); {fix}")
    return cert
