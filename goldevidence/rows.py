"""The shapes of a GoldEvidenceBench row and of a prediction line, as typed dicts.

Rows are JSON lines (ours, or the original tool's, whose rows may leave fields out), so every
field a reader can do without is optional; ``goldevidence.io.read_rows`` checks the required ones.
"""

from __future__ import annotations

from typing import Required, TypedDict

# The grid values a cell of rows stands for (state mode, profile, seed), by name.
CellLabels = dict[str, str | int]


class Gold(TypedDict, total=False):
    value: Required[str | None]
    support_id: str | None
    support_ids: list[str]


class TwinInfo(TypedDict, total=False):
    """The twin fields of a row's meta: which pair it belongs to and which side it is."""

    twin_group: str
    twin_flip_uid: str
    twin_flip_key: str
    twin_variant: str  # base | twin


class KeyStats(TypedDict):
    """Recency statistics of the asked key within the lines visible at the as-of step."""

    last_update_step: int | None
    tokens_since_update: int | None
    distractors_since_update: int | None
    writes_to_key: int
    instruction_nearby: bool | None


class RowMeta(TwinInfo, total=False):
    """What a row asks and how it was made; ``key`` is the only field every row has."""

    key: Required[str]
    seed: int
    episode_seed: int
    steps: int
    requires_citation: bool
    max_support_k: int
    q_index: int
    state_mode: str
    distractor_profile: str
    query_type: str  # direct | derived
    derived_op: str | None  # color | parity | count | reports
    derived_manager: str | None
    as_of_step: int
    query_position: str  # end | mid
    has_instruction: bool
    instruction_value: str | None
    instruction_variant: str | None
    last_update_step: int | None
    tokens_since_update: int | None
    distractors_since_update: int | None
    writes_to_key: int
    instruction_nearby: bool | None


class Row(TypedDict, total=False):
    id: Required[str]
    question: Required[str]
    gold: Required[Gold]
    meta: Required[RowMeta]
    episode_id: str
    schema_version: str
    state_mode: str
    document: str
    book: str


class Usage(TypedDict):
    prompt_tokens: int
    completion_tokens: int


class PredictionLine(TypedDict, total=False):
    """A prediction as lens's answerers write it (``goldevidence.predictions`` reads every
    format, this one included)."""

    id: Required[str]
    value: str | None
    support_ids: list[str]
    presented_ids: list[str]
    usage: Usage
    passes: int
    wall_s: float
    answer_format: str  # "text" when the value was read from a reply that is not JSON
    error: str | None
    retrieval: dict[str, int | bool | None]
