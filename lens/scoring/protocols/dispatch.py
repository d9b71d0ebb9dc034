"""The scorer's one entry into protocols and errata: a published protocol scores the run itself;
lens's own protocol scores the run with the errata applied to its ground truth."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from lens.models.base import ModelClient
from lens.runs.condition import stable_hash
from lens.runs.store import atomic_write_text
from lens.scoring.errata import Errata, apply_errata, load_errata
from lens.scoring.protocols import get_protocol
from lens.scoring.protocols.run import score_protocol
from lens.scoring.run_input import RunInput
from lens.scoring.types import SCORES_FILE, RunScores


async def score_under_protocol(run: RunInput, protocol: str, *, errata_path: Path | None,
                               judge: ModelClient | None, judge_concurrency: int, write: bool,
                               lens_score: Callable[..., Awaitable[RunScores]],
                               condition: Callable[..., dict[str, Any]], subset: str = "all",
                               subset_notes: Sequence[str] = (),
                               judge_prompt_file: Path | None = None) -> RunScores:
    errata = load_errata(errata_path) if errata_path is not None else None
    if protocol != "lens":
        chosen = get_protocol(protocol)
        if judge_prompt_file is not None:
            chosen = chosen.with_prompt_file(judge_prompt_file)
        return await score_protocol(run, chosen, judge=judge, errata=errata,
                                    judge_concurrency=judge_concurrency, condition=condition,
                                    write=write, subset=subset, extra_notes=subset_notes)
    assert errata is not None
    return await _lens_with_errata(run, errata, lens_score, write)


async def _lens_with_errata(run: RunInput, errata: Errata,
                            lens_score: Callable[..., Awaitable[RunScores]], write: bool
                            ) -> RunScores:
    fixed, report = apply_errata(run.dataset.questions, errata, dataset_id=run.dataset.dataset_id)
    # Questions the run left out (invalid, excluded here) are not in the dataset it scores:
    # their entries matched, before the run.
    recorded = run.manifest.get("dataset")
    dropped = {str(d.get("question_id")) for d in (recorded or {}).get("dropped") or ()
               if isinstance(d, dict)} if isinstance(recorded, dict) else set()
    left_out = sorted(dropped & set(errata.entries))
    report.unmatched = [q for q in report.unmatched if q not in dropped]
    report.excluded.extend(left_out)
    report.questions += len(left_out)
    items = []
    for item in run.items:
        q = fixed.get((item.question.scope_id, item.question.question_id), item.question)
        if q is not None:
            items.append(dataclasses.replace(item, question=q))
    run.items = items
    scores = await lens_score(run, write=False)
    settings = {**scores.settings, "errata": errata.condition()}
    cond = {**scores.condition, "settings": settings}
    scores = scores.model_copy(update={
        "settings": settings, "condition": cond, "condition_hash": stable_hash(cond),
        "notes": [*scores.notes, report.note()]})
    if write:
        atomic_write_text(run.run_dir / SCORES_FILE, scores.model_dump_json(indent=1))
        run.store.append_event("scoring_done", SCORES_FILE, errata=errata.path.name,
                               errata_touched=report.touched)
    return scores
