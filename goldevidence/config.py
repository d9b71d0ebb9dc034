"""Generator knobs (typed, validated) and the presets smoke, quick and standard."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

StateMode = Literal["kv", "kv_commentary", "counter", "set", "relational"]
Profile = Literal["standard", "instruction", "instruction_suite", "adversarial"]


class GenConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    episodes: int = Field(default=3, ge=1, le=100_000)
    steps: int = Field(default=120, ge=2, le=100_000)
    keys: int = Field(default=8, ge=1, le=100)
    queries: int = Field(default=12, ge=1, le=10_000)
    derived_query_rate: float = Field(default=0.35, ge=0, le=1)
    distractor_rate: float = Field(default=0.45, ge=0, le=1)
    clear_rate: float = Field(default=0.08, ge=0, le=1)
    note_rate: float = Field(default=0.12, ge=0, le=1)
    tail_distractor_steps: int = Field(default=0, ge=0)
    # Share of queries asked mid-log, about the state as of an earlier step.
    mid_query_rate: float = Field(default=0.3, ge=0, le=1)
    chapters: int = Field(default=6, ge=1)
    twins: bool = True
    require_citations: bool = True
    max_support_k: int = Field(default=3, ge=1)
    state_mode: StateMode = "kv"
    distractor_profile: Profile = "instruction"


PRESETS: dict[str, dict[str, object]] = {
    "smoke": {"episodes": 1, "steps": 40, "keys": 4, "queries": 6, "chapters": 3},
    "quick": {"episodes": 3, "steps": 120, "keys": 8, "queries": 12},
    "standard": {"episodes": 10, "steps": 300, "keys": 12, "queries": 16, "chapters": 8},
}


def preset(name: str, **overrides: object) -> GenConfig:
    if name not in PRESETS:
        raise KeyError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}")
    return GenConfig.model_validate({**PRESETS[name], **overrides})
