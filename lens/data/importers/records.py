"""The JSON the importers and the generator (``lens.data.datagen``) build for the LENS dataset
file, item by item.

These are the file's shapes before ``lens.data.dataset``'s models check them (the streaming
writer validates each episode and question as it writes it; a whole dataset is validated when
loaded). ``meta`` is each source's own record of where an item came from, free-form in the
format as in the models.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Required, TypedDict


class EpisodeJson(TypedDict):
    episode_id: str
    scope_id: str
    timestamp: str  # ISO 8601
    text: str
    meta: Mapping[str, object]


class GroundTruthJson(TypedDict, total=False):
    canonical_answer: Required[str]
    required_evidence_refs: Required[list[str]]
    key_facts: list[str]
    conclusion: str


class QuestionJson(TypedDict, total=False):
    question_id: Required[str]
    scope_id: Required[str]
    checkpoint_after: Required[int]
    question_type: Required[str]
    prompt: Required[str]
    ground_truth: Required[GroundTruthJson]
    meta: Mapping[str, object]
    asked_at: str  # ISO 8601
    allow_later_episodes: bool


class ScopeJson(TypedDict):
    scope_id: str
    episodes: list[EpisodeJson]
    meta: Mapping[str, object]


class DatasetJson(TypedDict):
    version: str
    dataset_id: str
    scopes: list[ScopeJson]
    questions: list[QuestionJson]
    meta: dict[str, Any]

