"""Everything a scorer needs about one stored question, loaded from a run directory.

Ground truth comes from the dataset file named in the run's manifest (or one given explicitly);
its content hash must match the one the run recorded, so a run is never scored against answers
it was not asked.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lens.core.errors import UserError
from lens.data.dataset import Dataset, Question
from lens.data.dataset_load import load_dataset_dropping
from lens.runs.manifest import RecordedDataset, RunManifest
from lens.runs.records import QuestionRecord, is_scored
from lens.runs.store import MANIFEST, RunStore
from lens.scoring.text.claims import LiveScope, ScopeText
from lens.scoring.text.refs import episode_of


@dataclass(frozen=True)
class ScoringItem:
    # The stored record without its transcript (:func:`without_transcript`).
    record: QuestionRecord
    question: Question
    scope_episodes: frozenset[str]
    synthetic_prefixes: tuple[str, ...] = ()
    # The scope's record texts: to tell pasted text from claims and check stated figures.
    scope_text: ScopeText | None = None
    # Episodes of the scope streamed after the question's checkpoint (not yet ingested).
    future_episodes: frozenset[str] = frozenset()

    @property
    def key(self) -> str:
        return self.record.key

    @property
    def answered(self) -> bool:
        return is_scored(self.record.status)

    @property
    def retrieved(self) -> set[str]:
        return set(self.record.retrieved_refs)

    @property
    def retrieved_episodes(self) -> set[str]:
        return {episode_of(r) for r in self.record.retrieved_refs}


@dataclass
class RunInput:
    run_dir: Path
    store: RunStore
    manifest: RunManifest
    dataset: Dataset
    items: list[ScoringItem]
    # The dataset's file: the one given, else the one the run's config names.
    dataset_path: Path | None = None


def unit_capabilities(store: RunStore) -> dict[str, dict[str, Any]]:
    """The capability manifest each unit's adapter declared (the latest, after a resume)."""
    caps: dict[str, dict[str, Any]] = {}
    for e in store.events():
        if e.get("kind") == "unit_started" and isinstance(e.get("capabilities"), dict):
            caps[e["key"]] = e["capabilities"]
    return caps


def _dataset_for(manifest: RunManifest, source: Path, ds_cfg: RecordedDataset,
                 path: Path | None) -> Dataset:
    if path is None:
        raise UserError(f"{source}: field 'config.dataset.path' is missing; "
                        "pass the dataset with --dataset PATH")
    if not path.exists():
        raise UserError(f"{source}: the run's dataset {path} does not exist "
                        "here; pass its current location with --dataset PATH")
    recorded = manifest.dataset
    # The questions the run left out (the dataset gets them wrong) are left out again.
    # An outline: each scope's text is read from disk when its questions are scored.
    dataset, _ = load_dataset_dropping(path, drop=[d.question_id for d in recorded.dropped],
                                       outline=True)
    if ds_cfg.scopes:
        known = {s.scope_id for s in dataset.scopes}
        missing = [s for s in ds_cfg.scopes if s not in known]
        if missing:
            raise UserError(f"{path}: has no scope(s) {missing} that the run used")
        dataset = dataset.select_scopes(list(ds_cfg.scopes))
    if ds_cfg.limit is not None:
        dataset = dataset.limit_questions(ds_cfg.limit)
    condition = manifest.condition
    expected = condition.get("dataset_hash") or recorded.content_hash
    run_id = condition.get("dataset_id") or recorded.id
    # Hashed once: a pass over the whole dataset, and the id is not part of the hash.
    actual = dataset.content_hash() if expected else ""
    if expected and actual != expected and run_id and run_id != dataset.dataset_id:
        # A dataset without an explicit id is named after its file: a moved or renamed copy is
        # the same data under another name.
        dataset = dataset.model_copy(update={"dataset_id": run_id})
    if expected and actual != expected:
        raise UserError(
            f"{path}: this dataset differs from the one the run used (content hash "
            f"{actual[:12]} != {expected[:12]}); scoring against other ground "
            "truth would be wrong: pass the run's dataset with --dataset PATH"
        )
    return dataset


def _texts(dataset: Dataset, scope_id: str) -> dict[str, str]:
    return {e.episode_id: e.text for e in dataset.full_scope(scope_id).episodes}


def without_transcript(record: QuestionRecord) -> QuestionRecord:
    """``record`` as the scorer holds it: every field but the session's transcript, which no
    metric reads (what the memory returned is in the tool calls' refs and the retrieved and
    cited refs) and which is most of a record: the tool results the agent read."""
    return record.model_copy(update={"transcript": []})


def load_run(run_dir: Path, *, dataset: Dataset | None = None,
             dataset_path: Path | None = None) -> RunInput:
    store = RunStore.open(run_dir)
    manifest = store.manifest()
    source = run_dir / MANIFEST
    ds_cfg = manifest.dataset_config(source)
    path = dataset_path or ds_cfg.path
    ds = dataset if dataset is not None else _dataset_for(manifest, source, ds_cfg, path)
    questions = {(q.scope_id, q.question_id): q for q in ds.questions}
    scope_episodes = {s.scope_id: frozenset(e.episode_id for e in s.episodes) for s in ds.scopes}
    # Each scope's index (and, for an outline, its text) is built when its questions are
    # scored, and dropped for the next scope's: the run holds one scope's, not every scope's.
    live = LiveScope()
    scope_texts = {s.scope_id: ScopeText(functools.partial(_texts, ds, s.scope_id), live)
                   for s in ds.scopes}
    streams = {s.scope_id: [e.episode_id for e in s.ordered_episodes()] for s in ds.scopes}
    caps = unit_capabilities(store)
    # One set per scope and checkpoint, shared by the questions asked there.
    future: dict[tuple[str, int], frozenset[str]] = {}
    items: list[ScoringItem] = []
    unknown: list[str] = []
    for record in store.iter_records():
        q = questions.get((record.scope_id, record.question_id))
        if q is None:
            unknown.append(record.key)
            continue
        prefixes = tuple((caps.get(record.unit_key) or {}).get("synthetic_ref_prefixes") or ())
        at = (record.scope_id, q.checkpoint_after)
        if at not in future:
            future[at] = frozenset(streams.get(record.scope_id, [])[q.checkpoint_after:])
        items.append(ScoringItem(record=without_transcript(record), question=q,
                                 scope_episodes=scope_episodes.get(record.scope_id, frozenset()),
                                 synthetic_prefixes=prefixes,
                                 scope_text=scope_texts.get(record.scope_id),
                                 future_episodes=future[at]))
    if unknown:
        raise UserError(
            f"{run_dir}: {len(unknown)} stored question(s) are not in the dataset "
            f"(first: {unknown[0]}); pass the run's dataset with --dataset PATH"
        )
    # A stable order makes scores.json byte-comparable across re-scorings.
    items.sort(key=lambda it: (it.record.unit_key, it.record.checkpoint, it.record.question_id))
    return RunInput(run_dir=run_dir, store=store, manifest=manifest, dataset=ds, items=items,
                    dataset_path=path)


def by_scope(items: Sequence[ScoringItem]) -> list[ScoringItem]:
    """``items`` with each scope's together (scopes in order of first appearance, items in
    their order within a scope): a pass in this order builds each scope's text index once,
    though the run's order visits a scope once per adapter and repeat."""
    first: dict[str, int] = {}
    for it in items:
        first.setdefault(it.record.scope_id, len(first))
    return sorted(items, key=lambda it: first[it.record.scope_id])
