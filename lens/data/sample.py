"""``--limit N`` (``dataset.limit``): a seeded sample of a dataset's questions.

The seed is the dataset's content hash, so the same data and N always give the same
questions, and a larger N keeps every question of a smaller one (each question is ranked once,
by a hash of the seed and its id). Scopes left without a question are left out, so their
episodes are never ingested.
"""

from __future__ import annotations

import hashlib

from lens.data.dataset import Dataset


def limit_questions(dataset: Dataset, limit: int | None) -> Dataset:
    """``dataset`` with ``limit`` of its questions (in their own order), or unchanged."""
    if limit is None or limit >= len(dataset.questions):
        return dataset
    seed = dataset.content_hash()

    def rank(scope_id: str, question_id: str) -> str:
        return hashlib.sha256(f"{seed}\0{scope_id}\0{question_id}".encode()).hexdigest()

    ranked = sorted(dataset.questions, key=lambda q: rank(q.scope_id, q.question_id))
    keep = {(q.scope_id, q.question_id) for q in ranked[:limit]}
    questions = [q for q in dataset.questions if (q.scope_id, q.question_id) in keep]
    scopes = {q.scope_id for q in questions}
    return dataset.model_copy(update={
        "scopes": [s for s in dataset.scopes if s.scope_id in scopes], "questions": questions})
