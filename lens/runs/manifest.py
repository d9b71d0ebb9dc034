"""A run directory's ``manifest.json`` as a model: what ``lens run`` writes once the run exists
and patches at its end, and what scoring, the pipeline and the commands read back.

Every key the model does not name is kept as it was (``extra="allow"``) and written back
unchanged, so a field a newer or older lens added survives a resume or a re-scoring. Only the
keys a run set are written (``exclude_unset``): reading and writing a manifest changes nothing
else. :func:`migrate` brings a manifest written by an earlier lens to the current shape before
it is read; a manifest that still does not fit is one error naming the file, every field and
the fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from lens.core.errors import UserError
from lens.data.config import CacheConfig, JudgeConfig, ScoringConfig
from lens.data.dataset_load import DroppedQuestion

# 1: every manifest written before the version was recorded; 2: ``manifest_version`` recorded.
MANIFEST_VERSION = 2


class _Open(BaseModel):
    # Keys another lens (or a plugin) wrote are kept and written back as they were.
    model_config = ConfigDict(extra="allow")


class DatasetBlock(_Open):
    """The dataset the run asked: its id, file, content hash and the questions left out."""

    id: str | None = None
    path: str | None = None
    content_hash: str | None = None
    # Questions of the file left out of the run (--drop-invalid-questions, errata exclusions);
    # scoring leaves out the same ones and the checklist reports them.
    dropped: list[DroppedQuestion] = Field(default_factory=list)
    questions_asked: int | None = None
    # Ids of questions asked with evidence dated after their asked_at.
    evidence_after_asked_at: list[str] = Field(default_factory=list)


class RecordedAgent(_Open):
    model: str = ""


class RecordedDataset(_Open):
    path: Path | None = None
    scopes: list[str] | None = None
    limit: int | None = None


class RecordedConfig(_Open):
    """The sections of a run's recorded config that scoring reads, validated by the config's
    own models; the rest of the config is kept as recorded."""

    dataset: RecordedDataset = Field(default_factory=RecordedDataset)
    agent: RecordedAgent = Field(default_factory=RecordedAgent)
    scoring: ScoringConfig = Field(default_factory=ScoringConfig)
    judge: JudgeConfig | None = None
    # The panel, the primary first; a config without ``judges`` records null.
    judges: list[JudgeConfig] = Field(default_factory=list)
    cache: CacheConfig = Field(default_factory=CacheConfig)

    @field_validator("judges", mode="before")
    @classmethod
    def _no_panel(cls, value: object) -> object:
        return [] if value is None else value


class RunManifest(_Open):
    manifest_version: int = MANIFEST_VERSION
    run_id: str | None = None
    created_at: str | None = None
    status: str | None = None
    finished_at: str | None = None
    resumed_at: list[str] = Field(default_factory=list)
    # The run's RunConfig as it was resolved (secrets redacted); ``settings()`` reads the
    # sections scoring needs through the config's models.
    config: dict[str, Any] = Field(default_factory=dict)
    # What the command line changed in the config file (``config`` has it applied).
    overrides: list[str] | None = None
    versions: dict[str, Any] = Field(default_factory=dict)
    event_loop: str | None = None
    dataset: DatasetBlock = Field(default_factory=DatasetBlock)
    condition: dict[str, Any] = Field(default_factory=dict)
    condition_hash: str | None = None
    # What ``lens plan CONFIG`` estimated before the run.
    cost_estimate: dict[str, Any] | None = None
    # Model usage by role and endpoint, written when the run ends.
    usage: dict[str, Any] | None = None
    # Whether the last session stopped early under the config's ``stopping`` section.
    stopped_early: bool | None = None

    @classmethod
    def load(cls, data: object, source: Path) -> RunManifest:
        """The manifest in ``data`` (parsed JSON), migrated; one UserError naming ``source``
        and every field that does not fit."""
        if not isinstance(data, dict):
            raise UserError(f"{source}: must be a JSON object")
        try:
            return cls.model_validate(migrate(data))
        except ValidationError as exc:
            raise UserError(_problems(source, "", exc,
                                      "re-create the run with `lens run`")) from None

    def as_dict(self) -> dict[str, Any]:
        """The manifest as JSON data: the keys the run set, extras included."""
        return self.model_dump(mode="json", exclude_unset=True)

    def dataset_config(self, source: Path) -> RecordedDataset:
        """The recorded config's ``dataset`` section (the run's file, scopes and limit)."""
        try:
            return RecordedDataset.model_validate(self.config.get("dataset") or {})
        except ValidationError as exc:
            raise UserError(_problems(source, "config.dataset.", exc,
                                      "pass the dataset with --dataset PATH")) from None

    def settings(self, source: Path) -> RecordedConfig:
        """The recorded config's scoring sections, each checked by its model; one UserError
        naming every problem."""
        try:
            return RecordedConfig.model_validate(self.config)
        except ValidationError as exc:
            raise UserError(_problems(source, "config.", exc,
                                      "re-run the config with `lens run`")) from None


def _problems(source: Path, prefix: str, exc: ValidationError, fix: str) -> str:
    lines = [f"field '{prefix}{'.'.join(str(p) for p in e['loc'])}': {e['msg']}"
             for e in exc.errors()]
    return f"{source}: {'; '.join(lines)}; {fix}"


def migrate(data: Mapping[str, Any]) -> dict[str, Any]:
    """A manifest of any earlier lens in the current shape (a copy; ``data`` is unchanged).

    Version 1 (no ``manifest_version``): manifests before the dataset block held the dataset's
    id and content hash read them from the condition; dropped questions recorded as anything but
    an object with an id are not questions (readers have always skipped them)."""
    out = dict(data)
    version = out.get("manifest_version", 1)
    if version == 1:
        block = dict(out.get("dataset") or {}) if isinstance(out.get("dataset"), dict) else {}
        cond = out.get("condition") if isinstance(out.get("condition"), dict) else {}
        assert isinstance(cond, dict)
        if block.get("id") is None and cond.get("dataset_id") is not None:
            block["id"] = cond["dataset_id"]
        if block.get("content_hash") is None and cond.get("dataset_hash") is not None:
            block["content_hash"] = cond["dataset_hash"]
        if "dropped" in block:
            block["dropped"] = [_dropped(d) for d in block["dropped"] or ()
                                if isinstance(d, dict) and d.get("question_id") is not None]
        out["dataset"] = block
        out["manifest_version"] = MANIFEST_VERSION
    return out


def _dropped(entry: Mapping[str, Any]) -> dict[str, str]:
    return {**entry, "question_id": str(entry["question_id"]),
            "reason": str(entry.get("reason") or "")}


def dataset_block(manifest: Mapping[str, Any]) -> DatasetBlock:
    """The dataset block of a manifest read as plain JSON (the report's and the protocols' view
    of a run directory, which shows whatever it holds): the one reading of ``dataset``. A field
    that does not fit is read as absent, an entry of ``dropped`` that is not a question skipped."""
    block = migrate(manifest).get("dataset")
    if not isinstance(block, dict):
        return DatasetBlock()
    kept: dict[str, Any] = {}
    for name, value in block.items():
        if name == "dropped":
            kept[name] = [d for d in value or () if _fits(DroppedQuestion, d)] \
                if isinstance(value, list) else []
        elif name not in DatasetBlock.model_fields or _fits(DatasetBlock, {name: value}):
            kept[name] = value
    return DatasetBlock.model_validate(kept)


def _fits(model: type[BaseModel], data: object) -> bool:
    try:
        model.model_validate(data)
    except ValidationError:
        return False
    return True


def dropped_questions(manifest: Mapping[str, Any]) -> list[DroppedQuestion]:
    """The questions a run left out (``dataset.dropped``) of a manifest read as plain JSON."""
    return dataset_block(manifest).dropped
