"""Everything a report reads from a run directory, loaded once and validated."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

import lens.scoring.metrics as registry
from lens.core.errors import UserError, bounded
from lens.report.foundations.context import QuestionContext, context_of, synthetic_prefixes_of
from lens.report.foundations.shapes import UnknownUsage
from lens.runs.records import QuestionRecord, is_scored
from lens.runs.store import MANIFEST, RunStore
from lens.scoring.foundations.detail import QuestionDetail, read_detail
from lens.scoring.foundations.types import QuestionScores, RunScores

SCORES = "scores.json"


# The ranking metrics of a question's first search (lens/scoring/measures/retrieval.py, kept in the
# scores' detail), read as per-question metrics under these names so that arms are compared on
# them with paired tests like any other metric.
FIRST_SEARCH = "first_search_"
RETRIEVAL_COMPARED = (f"{FIRST_SEARCH}mrr", f"{FIRST_SEARCH}ndcg@10")


def is_judge_metric(name: str) -> bool:
    """Whether a metric's value rests on an LLM judge (the registry's ``judged``, and the
    composite): a difference smaller than the judge's own position-swap disagreement cannot be
    told from judge noise."""
    return name in registry.judged_metrics() or "judge" in name


MAX_RUN_ID_SHOWN = 200


@dataclass(frozen=True)
class QuestionRow:
    """One answered (or failed) question: its record joined with its scores, if scored.
    ``context`` is what the memory handed the agent, measured when the record was loaded whole:
    a loaded run keeps of a record's transcript only the first prompt (RunData.page_rows reads
    the records whole again for the pages)."""

    record: QuestionRecord
    scores: QuestionScores | None
    context: QuestionContext | None = None

    @property
    def match_key(self) -> tuple[str, str, int]:
        """What pairs a question across arms: the same question of the same scope and repeat."""
        r = self.record
        return (r.scope_id, r.question_id, r.repeat)

    @property
    def question_type(self) -> str:
        return self.scores.question_type if self.scores else "unknown"

    def metric(self, name: str) -> float | None:
        if self.scores is None:
            return None
        if name.startswith(FIRST_SEARCH):
            return self._first_search(name.removeprefix(FIRST_SEARCH))
        value = self.scores.metrics.get(name)
        # NaN is a scorer's "could not compute" that slipped through: treat it as unknown.
        return None if value is None or math.isnan(value) else float(value)

    def _first_search(self, name: str) -> float | None:
        """A ranking metric of the first search; None where the question has no required
        evidence or did not finish."""
        if self.scores is None or not is_scored(self.record.status):
            return None
        retrieval = self.detail_block("retrieval").retrieval
        value = retrieval.first.get(name) if retrieval and retrieval.first else None
        return None if value is None or math.isnan(value) else value

    def detail_block(self, key: str) -> QuestionDetail:
        """The typed detail of the question's ``key`` block alone, read each time: the whole
        typed detail (``scores.details``) stays cached on the scores, which for a whole run is
        more than the summary needs (the pages read it)."""
        stored = self.scores.detail if self.scores is not None else {}
        return read_detail({key: stored[key]} if key in stored else {})

    @property
    def search_results(self) -> int:
        return sum(c.result_count for c in self.record.tool_calls if c.name == "memory_search")

    @property
    def tool_calls(self) -> int:
        return len(self.record.tool_calls)

    @property
    def tool_errors(self) -> int:
        return sum(1 for c in self.record.tool_calls if not c.ok)

    @property
    def first_tool_error(self) -> str | None:
        return next((f"{c.name}: {c.error or 'failed'}" for c in self.record.tool_calls
                     if not c.ok), None)

    @property
    def agent_tokens(self) -> int:
        return self.record.tokens("agent")

    @property
    def cost_usd(self) -> float | None:
        """Agent cost of the question; unknown when any of its model calls has no price."""
        calls = [c for c in self.record.model_calls if c.role == "agent"]
        if not calls:
            # An errored question may have spent on calls its record could not keep.
            return 0.0 if is_scored(self.record.status) else None
        if any(c.cost_usd is None for c in calls):
            return None
        return float(sum(c.cost_usd or 0.0 for c in calls))


@dataclass
class RunData:
    root: Path
    manifest: dict[str, Any]
    rows: list[QuestionRow]
    scores: RunScores | None
    events: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # The records read whole again, in the rows' order, when the rows hold them cut short.
    reread: Callable[[], Iterator[QuestionRecord]] | None = None

    def page_rows(self) -> Iterator[QuestionRow]:
        """The rows with their records whole (transcripts included), one at a time: what the
        per-question pages show."""
        if self.reread is None:
            yield from self.rows
            return
        records = self.reread()
        for row in self.rows:
            record = next(records, None)
            if record is None or record.key != row.record.key:
                raise UserError(f"{self.root}: its question records changed while its report "
                                "was written; write the report again")
            yield replace(row, record=record)

    @property
    def run_id(self) -> str:
        # Shown in every report, checklist line and comparison table: a manifest's id of
        # megabytes is cut in the middle (ids lens writes are a few dozen characters).
        return bounded(str(self.manifest.get("run_id") or self.root.name), MAX_RUN_ID_SHOWN)

    @property
    def condition(self) -> dict[str, Any]:
        cond = self.manifest.get("condition")
        return cond if isinstance(cond, dict) else {}

    @property
    def adapters(self) -> list[str]:
        """Adapter labels in config order, then any others found in the records."""
        labels = [a.get("label") or a.get("name") for a in self.condition.get("adapters", [])
                  if isinstance(a, dict)]
        out = [str(x) for x in labels if x]
        for row in self.rows:
            if row.record.adapter not in out:
                out.append(row.record.adapter)
        return out

    def rows_for(self, adapter: str) -> list[QuestionRow]:
        return [r for r in self.rows if r.record.adapter == adapter]

    @property
    def metric_names(self) -> list[str]:
        names: set[str] = set()
        for row in self.rows:
            if row.scores:
                names.update(k for k, v in row.scores.metrics.items() if v is not None)
        # The registry's report order first; anything else follows alphabetically.
        known = [m for m in registry.report_order() if m in names]
        return known + sorted(names - set(known))

    @property
    def primary_metric(self) -> str | None:
        names = self.metric_names
        return names[0] if names else None

    @property
    def judge_disagreement(self) -> float | None:
        return self.scores.judge.disagreement_rate if self.scores else None

    @property
    def unknown_usage(self) -> UnknownUsage | None:
        return unknown_usage_of(self.manifest)

    @property
    def unit_errors(self) -> list[dict[str, Any]]:
        """Unit failures the run still carries: a unit that failed and then finished on a
        resume (``--resume``) is whole again, and only its last failure would count."""
        open_: dict[Any, dict[str, Any]] = {}
        for e in self.events:
            if e.get("kind") == "unit_error":
                open_[e.get("key")] = e
            elif e.get("kind") == "unit_done":
                open_.pop(e.get("key"), None)
        return list(open_.values())


def _unknown_calls(totals: Any) -> dict[str, int]:
    """``unknown_usage_calls`` of each entry of a usage breakdown (by role or by model) that
    has any."""
    if not isinstance(totals, dict):
        return {}
    out = {}
    for name, t in sorted(totals.items()):
        n = t.get("unknown_usage_calls") if isinstance(t, dict) else None
        if isinstance(n, int) and not isinstance(n, bool) and n > 0:
            out[str(name)] = n
    return out


def unknown_usage_of(manifest: dict[str, Any]) -> UnknownUsage | None:
    """The run's model calls whose usage was unreadable (the manifest's ``usage``), or None
    when every call's usage was read."""
    usage = manifest.get("usage")
    if not isinstance(usage, dict):
        return None
    found = UnknownUsage(by_model=_unknown_calls(usage.get("by_model")),
                         by_role=_unknown_calls(usage.get("by_role")))
    return found if found.calls else None


def _load_scores(root: Path) -> RunScores | None:
    path = root / SCORES
    if not path.is_file():
        return None
    try:
        return RunScores.model_validate_json(path.read_text(encoding="utf-8"))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise UserError(f"{path}: not a valid scores file (field {where}: {first['msg']}); "
                        "re-create it with `lens score RUN_DIR`") from None


def load_run(run_dir: str | Path, *, records: bool = True) -> RunData:
    """Read a run directory; raise UserError naming the file when it is not one. Without
    ``records``, only its manifest and scores (no rows, no events)."""
    root = Path(run_dir)
    if not root.is_dir():
        raise UserError(f"{root}: no such run directory")
    if not (root / MANIFEST).is_file():
        raise UserError(f"{root}: not a lens run directory (no {MANIFEST})")
    store = RunStore(root)
    try:
        manifest = store.manifest_data()
    except ValueError as exc:
        raise UserError(f"{root / MANIFEST}: not valid JSON ({exc})") from None
    if not isinstance(manifest, dict):
        raise UserError(f"{root / MANIFEST}: must be a JSON object")
    if not records:
        return RunData(root=root, manifest=manifest, rows=[], scores=_load_scores(root))
    return _assemble(store, manifest, _load_scores(root))


def run_data(root: Path, manifest: dict[str, Any], records: Sequence[QuestionRecord],
             scores: RunScores | None, events: Sequence[dict[str, Any]], *,
             contexts: Sequence[QuestionContext] | None = None) -> RunData:
    """A run from what is already in hand (nothing is read): its manifest, its question records
    in the order the run committed them, its scores (None: not scored) and its events;
    ``contexts``, each record's measured context when the records are cut short."""
    by_key = {q.key: q for q in scores.questions} if scores else {}
    measured = list(contexts) if contexts is not None else [None] * len(records)
    rows = [QuestionRow(record=r, scores=by_key.get(r.key), context=c)
            for r, c in zip(records, measured, strict=True)]
    notes: list[str] = []
    if scores is None:
        notes.append(f"no {SCORES}: the run is not scored yet (run `lens score {root}`); "
                     "only usage and pre-flight checks are shown")
    else:
        unscored = sum(1 for r in rows if r.scores is None)
        if unscored:
            notes.append(f"{unscored} question record(s) have no scores in {SCORES}")
        notes.extend(scores.notes)
    return RunData(root=root, manifest=manifest, rows=rows, scores=scores,
                   events=list(events), notes=notes)


def _shared_parts(events: Iterator[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events, with equal nested values held once: every unit of an arm records the same
    capabilities, usage shapes and settings, which held apart grow with the number of units."""
    seen: dict[bytes, Any] = {}  # by digest: a value's text as the key would hold it twice
    out = []
    for e in events:
        for k, v in e.items():
            if isinstance(v, dict | list) and v:
                text = json.dumps(v, sort_keys=True, default=str).encode("utf-8")
                e[k] = seen.setdefault(hashlib.sha256(text).digest(), v)
        out.append(e)
    return out


def scored_run(root: Path, manifest: dict[str, Any], scores: RunScores, events: int
               ) -> RunData:
    """A run just scored, from the manifest and the scores in hand: the records are read one at
    a time (each measured, then kept cut short, as :func:`load_run` does) and the run's first
    ``events`` events (those it had before the scoring added its own)."""
    return _assemble(RunStore(Path(root)), manifest, scores, events=events)


def _assemble(store: RunStore, manifest: dict[str, Any], scores: RunScores | None, *,
              events: int | None = None) -> RunData:
    events_read = _shared_parts(itertools.islice(store.events(), events))
    prefixes = synthetic_prefixes_of(events_read)
    records: list[QuestionRecord] = []
    contexts: list[QuestionContext] = []
    try:
        # Each record is measured whole, then kept without its transcript's bulk (the tool
        # results a session read: most of a record); the pages read the records again.
        for record in store.iter_records():
            contexts.append(context_of(record, prefixes.get(record.unit_key, ())))
            records.append(_cut_short(record))
    except ValidationError as exc:
        raise UserError(f"{store.root}: a question record is invalid: "
                        f"{exc.errors()[0]['msg']}") from None
    run = run_data(store.root, manifest, records, scores, events_read, contexts=contexts)
    run.reread = store.iter_records
    return run


def _cut_short(record: QuestionRecord) -> QuestionRecord:
    """The record with only the first user message of its transcript (the question as the
    agent got it, which the sequential replay's order reads)."""
    first = next((m for m in record.transcript if m.role == "user"), None)
    return record.model_copy(update={"transcript": [first] if first is not None else []})
