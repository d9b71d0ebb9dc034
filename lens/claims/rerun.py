"""A rerun column: the answers of a ``lens run`` run directory that asked the same benchmark's
questions (e.g. LoCoMo imported with ``lens datasets import`` and answered under the fixed
reader), matched to the publisher's items by question text and conversation, so lens's scorers
read them beside the publisher's answers. It is a run of lens's adapter and reader, not the
publisher's system."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lens.claims.items import ClaimItem
from lens.claims.rescore import Scored
from lens.core.errors import UserError
from lens.data.dataset_load import load_dataset
from lens.runs.records import QuestionRecord, is_scored
from lens.runs.store import MANIFEST, RunStore

_SPACE = re.compile(r"\s+")


def question_key(text: str) -> str:
    """Question text as matched: case and runs of whitespace do not count."""
    return _SPACE.sub(" ", text).strip().casefold()


@dataclass(frozen=True)
class RunAnswer:
    scope: str
    question_id: str
    question: str
    answer: str
    status: str


@dataclass(frozen=True)
class RunAnswers:
    """One adapter's first-repeat answers in a run directory."""

    path: str
    name: str
    adapter: str
    condition_hash: str
    answers: tuple[RunAnswer, ...]
    notes: tuple[str, ...] = ()


@dataclass
class Rerun:
    """A run's answers matched to the publisher's items, and lens's scorers on them."""

    run: RunAnswers
    # publisher's item id -> the run's answer to the same question
    matched: dict[str, RunAnswer]
    unmatched_publisher: int
    unmatched_run: int
    # Matched questions whose record holds no finished session (error, no_memory): left out of
    # every scorer, as lens's own scoring leaves them out.
    not_scored: int = 0
    scorers: list[Scored] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def read_run(path: Path) -> list[RunAnswers]:
    """Every adapter's answers in the run (its first repeat), with the questions' text from the
    run's dataset; a UserError (exit 2) for a folder that is not a readable run."""
    if not (path / MANIFEST).is_file():
        raise UserError(f"--rerun {path}: not a lens run directory (no {MANIFEST}); give a "
                        "folder `lens run` wrote")
    store = RunStore.open(path)
    try:
        manifest = store.manifest_data()
        records = store.load_records()
    finally:
        store.close()
    text = _question_texts(path, manifest)
    adapters = sorted({r.adapter for r in records})
    if not records:
        raise UserError(f"--rerun {path}: the run holds no answered question")
    condition = str(manifest.get("condition_hash") or "unknown")
    return [_adapter_answers(path, condition, [r for r in records if r.adapter == adapter],
                             text, several=len(adapters) > 1)
            for adapter in adapters]


def _question_texts(path: Path, manifest: dict[str, Any]) -> dict[tuple[str, str], str]:
    """Each (scope, question)'s text, from the dataset the run recorded."""
    recorded = (manifest.get("dataset") or {}).get("path")
    if not recorded or not Path(recorded).is_file():
        raise UserError(f"--rerun {path}: the run's dataset {str(recorded or 'unknown')!r} is "
                        "not there; the questions' text is read from it (run again with the "
                        "dataset in place)")
    ds = load_dataset(Path(recorded))
    return {(q.scope_id, q.question_id): q.prompt for q in ds.questions}


def _adapter_answers(path: Path, condition: str, own: list[QuestionRecord],
                     text: dict[tuple[str, str], str], several: bool) -> RunAnswers:
    """One adapter's answers of its first repeat; a note when later repeats are left unread."""
    adapter = own[0].adapter
    first = min(r.repeat for r in own)
    kept = [r for r in own if r.repeat == first]
    notes = ((f"repeats after the first ({len(own) - len(kept)} answers) are not read",)
             if len(kept) < len(own) else ())
    return RunAnswers(str(path), path.name + (f" ({adapter})" if several else ""), adapter,
                      condition, tuple(_answer(r, text) for r in kept), notes)


def _answer(r: QuestionRecord, text: dict[tuple[str, str], str]) -> RunAnswer:
    return RunAnswer(r.scope_id, r.question_id, text.get((r.scope_id, r.question_id), ""),
                     r.answer, r.status)


def match(items: Sequence[ClaimItem], run: RunAnswers) -> Rerun:
    """Pair the publisher's items with the run's answers by question text; a text asked more
    than once is paired within the conversation, the publisher's group read as the run's scope
    that the group's unambiguous questions land in. What cannot be paired is counted."""
    matched, scope_of = _match_unique_texts(items, run)
    _match_within_scopes(items, run, matched, scope_of)
    used = {(a.scope, a.question_id) for a in matched.values()}
    return Rerun(run, matched, len(items) - len(matched),
                 sum((a.scope, a.question_id) not in used for a in run.answers))


def _match_unique_texts(items: Sequence[ClaimItem], run: RunAnswers
                        ) -> tuple[dict[str, RunAnswer], dict[str, str]]:
    """The pairs whose question text is asked once on each side, and the run's scope each
    publisher group's pairs land in most often."""
    pub_count = Counter(question_key(i.question) for i in items)
    run_count = Counter(question_key(a.question) for a in run.answers if a.question)
    by_text = {question_key(a.question): a for a in run.answers if a.question}
    matched: dict[str, RunAnswer] = {}
    votes: dict[str, Counter[str]] = {}
    for i in items:
        k = question_key(i.question)
        if pub_count[k] == 1 and run_count[k] == 1:
            matched[i.id] = by_text[k]
            votes.setdefault(i.group, Counter())[by_text[k].scope] += 1
    return matched, {g: c.most_common(1)[0][0] for g, c in votes.items()}


def _match_within_scopes(items: Sequence[ClaimItem], run: RunAnswers,
                         matched: dict[str, RunAnswer], scope_of: dict[str, str]) -> None:
    """Add the pairs whose text is asked once within the group and its scope."""
    pub_pairs = Counter((i.group, question_key(i.question)) for i in items)
    run_pairs = Counter((a.scope, question_key(a.question)) for a in run.answers)
    by_pair = {(a.scope, question_key(a.question)): a for a in run.answers}
    for i in items:
        k = question_key(i.question)
        scope = scope_of.get(i.group)
        if i.id in matched or scope is None:
            continue
        if pub_pairs[(i.group, k)] == 1 and run_pairs[(scope, k)] == 1:
            matched[i.id] = by_pair[(scope, k)]


def rerun_items(items: Sequence[ClaimItem], rerun: Rerun) -> tuple[ClaimItem, ...]:
    """The publisher's items with the run's answer in place of theirs, and no verdict (theirs
    judged another answer); matched questions the run did not finish are left out, counted."""
    out = []
    rerun.not_scored = 0
    for i in items:
        a = rerun.matched.get(i.id)
        if a is None:
            continue
        if not is_scored(a.status):
            rerun.not_scored += 1
            continue
        out.append(replace(i, answer=a.answer, verdicts=(), scores={}))
    return tuple(out)
