"""The LENS dataset format: the models of a dataset and the caps on their fields.

A dataset is ``{version, scopes: [{scope_id, episodes: [...]}], questions: [...]}``. Episodes of a
scope are streamed in timestamp order; a question's ``checkpoint_after`` counts episodes of its
scope in that order. Ground truth stays in :class:`Question` and is never handed to an adapter or
to the agent: they receive :meth:`Episode.for_adapter` and :meth:`Question.for_agent`.

Reading a file is :mod:`lens.data.dataset_load`; the checks beyond field types are
:mod:`lens.data.dataset_check`.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    field_validator,
)

from lens.core.fields import unset
from lens.data.dataset_hash import fields_hash

if TYPE_CHECKING:
    from lens.data.scope_spill import ScopeSpill

# Caps that keep one hostile record from exhausting memory or a model's context downstream.
MAX_ID_CHARS = 200
MAX_EPISODE_CHARS = 2_000_000
MAX_PROMPT_CHARS = 20_000
MAX_ANSWER_CHARS = 20_000
MAX_FACT_CHARS = 2_000
MAX_FACTS = 200
MAX_REFS = 1_000
MAX_META_BYTES = 1024 * 1024
# Characters an id may not hold: ids name files and refs, "#" separates a chunk from its
# episode, and control characters would garble every report and terminal they reach.
_BAD_ID_CHARS = frozenset("/\\") | {chr(c) for c in range(32)} | {"\x7f"}


def _check_id(value: str) -> str:
    bad = sorted({c for c in value if c in _BAD_ID_CHARS})
    if bad:
        shown = ", ".join(repr(c) for c in bad)
        raise ValueError(f"ids may not contain {shown}: ids name files and refs; use '_' or '-'")
    if value != value.strip():
        raise ValueError("ids may not begin or end with spaces")
    return value


def _check_episode_id(value: str) -> str:
    if "#" in value:
        raise ValueError("episode ids may not contain '#': it separates an episode from a "
                         "chunk in refs ('ep_001#c0'), so this id would read as a chunk")
    return _check_id(value)


def _check_meta(value: dict[str, Any]) -> dict[str, Any]:
    size = len(json.dumps(value, ensure_ascii=False, default=str).encode("utf-8"))
    if size > MAX_META_BYTES:
        raise ValueError(f"meta is {size} bytes; the limit is {MAX_META_BYTES}")
    return value


Id = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS), AfterValidator(_check_id)]
EpisodeId = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS),
                      AfterValidator(_check_episode_id)]
Ref = Annotated[str, Field(min_length=1, max_length=2 * MAX_ID_CHARS)]
Meta = Annotated[dict[str, Any], AfterValidator(_check_meta)]


class QuestionType(StrEnum):
    LONGITUDINAL = "longitudinal"
    NULL_HYPOTHESIS = "null_hypothesis"
    ACTION_RECOMMENDATION = "action_recommendation"
    NEGATIVE = "negative"
    PARAPHRASE = "paraphrase"
    TEMPORAL = "temporal"
    COUNTERFACTUAL = "counterfactual"
    DISTRACTOR_RESISTANCE = "distractor_resistance"
    SEVERITY_ASSESSMENT = "severity_assessment"
    EVIDENCE_SUFFICIENCY = "evidence_sufficiency"


SYNTHESIS_TYPES: frozenset[QuestionType] = frozenset(QuestionType) - {
    QuestionType.NULL_HYPOTHESIS
}


def parse_timestamp(value: str | datetime) -> datetime:
    """Parse an ISO-8601 timestamp; naive times are taken as UTC so all compare."""
    ts = value if isinstance(value, datetime) else datetime.fromisoformat(value)
    return ts if ts.tzinfo else ts.replace(tzinfo=UTC)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _timestamp(v: Any) -> datetime:
    """A dataset's timestamp field: an ISO-8601 string or a datetime."""
    if not isinstance(v, str | datetime):
        raise ValueError("must be an ISO-8601 timestamp string such as 2024-01-15T10:00:00")
    try:
        return parse_timestamp(v)
    except ValueError as exc:
        raise ValueError(
            f"{v!r} is not an ISO-8601 timestamp (use e.g. 2024-01-15T10:00:00)"
        ) from exc


class Episode(_Model):
    episode_id: EpisodeId
    scope_id: Id
    timestamp: datetime
    text: str = Field(max_length=MAX_EPISODE_CHARS)
    meta: Meta = Field(default_factory=dict)

    @field_validator("timestamp", mode="before")
    @classmethod
    def _parse_ts(cls, v: Any) -> datetime:
        return _timestamp(v)

    def for_adapter(self) -> Episode:
        """The episode as a memory system may see it: scenario metadata removed."""
        return self.model_copy(update={"meta": {}})


# A conclusion's verdict: "yes" or "no", alone or before the claim it stands for


def _check_conclusion(value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise ValueError("the conclusion is blank; give the decisive claim (e.g. 'no: DEP-4230 "
                         "did not cause the rise') or leave the field out")
    return value


class GroundTruth(_Model):
    canonical_answer: str = Field(max_length=MAX_ANSWER_CHARS)
    required_evidence_refs: list[Ref] = Field(default_factory=list, max_length=MAX_REFS)
    key_facts: list[Annotated[str, Field(max_length=MAX_FACT_CHARS)]] = Field(
        default_factory=list, max_length=MAX_FACTS)
    # The decisive claim of the answer (yes/no, the direction of a change, the cause named or
    # ruled out, the action); optional. See docs/datasets.md.
    conclusion: Annotated[str | None, Field(max_length=MAX_FACT_CHARS, exclude_if=unset),
                          AfterValidator(_check_conclusion)] = None


class AgentQuestion(_Model):
    """What the agent is told about a question: its id, its prompt and when it is asked."""

    question_id: str
    prompt: str
    # "Now" for the agent: the question's ``asked_at``, else the time of the last episode
    # ingested before it; None when neither is known.
    now: datetime | None = None


class Question(_Model):
    question_id: Id
    scope_id: Id
    checkpoint_after: int = Field(ge=0)
    question_type: QuestionType
    prompt: str = Field(min_length=1, max_length=MAX_PROMPT_CHARS)
    ground_truth: GroundTruth
    meta: Meta = Field(default_factory=dict)
    # When the question is asked (optional; naive times are UTC). The agent is told it as
    # "now"; without it, "now" is the time of the checkpoint's last episode.
    asked_at: datetime | None = Field(default=None, exclude_if=unset)
    # Episodes dated after ``asked_at`` may be ingested before the question: a benchmark whose
    # official protocol gives the whole haystack whatever its dates (LongMemEval). Without it,
    # such an episode is a problem of the question (a future leak). See docs/datasets.md.
    allow_later_episodes: bool = Field(default=False, exclude_if=unset)

    @field_validator("prompt")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("the prompt is blank; a question needs words to ask")
        return v

    @field_validator("asked_at", mode="before")
    @classmethod
    def _parse_asked_at(cls, v: Any) -> datetime | None:
        return None if v is None else _timestamp(v)

    def for_agent(self, checkpoint_time: datetime | None = None) -> AgentQuestion:
        """The question as the agent sees it; ``checkpoint_time`` (the timestamp of the last
        episode ingested before it) is "now" when the question has no ``asked_at``."""
        return AgentQuestion(question_id=self.question_id, prompt=self.prompt,
                             now=self.asked_at or checkpoint_time)


class Scope(_Model):
    scope_id: Id
    episodes: list[Episode]
    meta: Meta = Field(default_factory=dict)

    def ordered_episodes(self) -> list[Episode]:
        """Episodes in stream order: by timestamp, ties kept in file order."""
        return sorted(self.episodes, key=lambda e: e.timestamp)


class Dataset(_Model):
    """A dataset. Loaded as an outline (``load_dataset_dropping(..., outline=True)``), its
    scopes hold their episodes without text or meta and the whole scopes are on disk: read one with
    :meth:`full_scope`, one at a time, so that a run never holds every scope's text."""

    version: str = Field(default="0.1.0", max_length=50)
    dataset_id: str | None = Field(default=None, min_length=1, max_length=MAX_ID_CHARS)
    scopes: list[Scope]
    questions: list[Question]
    meta: Meta = Field(default_factory=dict)
    # The whole scopes of an outline (None: ``scopes`` are whole). Copies share it.
    _spill: ScopeSpill | None = PrivateAttr(default=None)

    def with_spill(self, spill: ScopeSpill) -> Dataset:
        """This dataset as the outline of the scopes ``spill`` holds."""
        ds = self.model_copy()
        ds._spill = spill
        return ds

    @property
    def is_outline(self) -> bool:
        return self._spill is not None

    def scope(self, scope_id: str) -> Scope:
        for s in self.scopes:
            if s.scope_id == scope_id:
                return s
        raise KeyError(scope_id)

    def full_scope(self, scope_id: str) -> Scope:
        """The scope with its episodes' text (read from disk for an outline)."""
        if self._spill is None:
            return self.scope(scope_id)
        return self._spill.load(scope_id)

    def text_sizes(self, scope_id: str) -> list[int]:
        """Each episode's length in characters, in stream order."""
        if self._spill is None:
            return [len(e.text) for e in self.scope(scope_id).ordered_episodes()]
        return self._spill.sizes(scope_id)

    def questions_for(self, scope_id: str) -> list[Question]:
        return [q for q in self.questions if q.scope_id == scope_id]

    def content_hash(self) -> str:
        """sha256 of the dataset's canonical JSON (without its id: renaming a file must not
        change its hash), fed one scope and question at a time: the same bytes as dumping the
        whole dataset, without holding a second copy of a large one (nor, for an outline,
        more than one scope's text)."""
        fields: dict[str, object] = {k: getattr(self, k) for k in type(self).model_fields
                                  if k != "dataset_id"}
        spill = self._spill
        if spill is not None:
            ids = [s.scope_id for s in self.scopes]
            fields["scopes"] = lambda add: [add(spill.canonical(sid)) for sid in ids]
        return fields_hash(fields)

    def select_scopes(self, scope_ids: list[str]) -> Dataset:
        keep = set(scope_ids)
        return self.model_copy(
            update={
                "scopes": [s for s in self.scopes if s.scope_id in keep],
                "questions": [q for q in self.questions if q.scope_id in keep],
            }
        )

    def limit_questions(self, limit: int | None) -> Dataset:
        """``--limit N`` (``dataset.limit``): a seeded sample of ``limit`` questions (in their
        own order), or the dataset unchanged.

        The seed is the content hash, so the same data and N always give the same questions,
        and a larger N keeps every question of a smaller one (each question is ranked once, by
        a hash of the seed and its id). Scopes left without a question are left out, so their
        episodes are never ingested."""
        if limit is None or limit >= len(self.questions):
            return self
        seed = self.content_hash()

        def rank(scope_id: str, question_id: str) -> str:
            return hashlib.sha256(f"{seed}\0{scope_id}\0{question_id}".encode()).hexdigest()

        ranked = sorted(self.questions, key=lambda q: rank(q.scope_id, q.question_id))
        keep = {(q.scope_id, q.question_id) for q in ranked[:limit]}
        questions = [q for q in self.questions if (q.scope_id, q.question_id) in keep]
        scopes = {q.scope_id for q in questions}
        return self.model_copy(update={
            "scopes": [s for s in self.scopes if s.scope_id in scopes], "questions": questions})
