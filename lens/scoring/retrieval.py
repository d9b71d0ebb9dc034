"""Retrieval quality apart from answer quality: how well the agent's searches ranked the
question's required evidence, and where evidence was lost on its way to the answer.

Per question, from the ``memory_search`` calls of its record (results in rank order, chunk refs
counted for their episode at their first rank) against the required evidence episodes:

- ``recall_any@k``: 1 when at least one required episode is in the top k, else 0;
- ``recall_all@k``: 1 when every required episode is in the top k, else 0;
- ``mrr``: 1 / rank of the first required episode (0 when none is returned);
- ``ndcg@k``: binary-relevance NDCG over the top k (ideal: all required episodes first);

each for the question's ``first`` search and for its ``best`` search (the best value of that
metric over all its searches: a question that searched well once gets credit for it; the
first-search figure shows whether it found the evidence without trying several queries).

A question with required evidence but no search scores 0: its searches returned no evidence,
and skipping search must not hide a question from the metric. A question without required
evidence has no retrieval metrics (unknown, never 0 or 1).

The funnel ``retrieved → cited`` gives the share of required episodes the agent received from
any tool (search or retrieve) and the share it cited; with ``fact_recall`` (facts stated) it
tells an adapter's author whether to fix retrieval, selection or synthesis.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from lens.runs.records import QuestionRecord
from lens.scoring.refs import episode_of

KS = (5, 10)
SEARCH_TOOL = "memory_search"


def ranked_episodes(refs: Sequence[str]) -> list[str]:
    """Episode ids in rank order, each at the rank of its first ref (chunks → episode)."""
    return list(dict.fromkeys(episode_of(r) for r in refs))


def recall_any(ranked: Sequence[str], required: set[str], k: int) -> float:
    return 1.0 if required & set(ranked[:k]) else 0.0


def recall_all(ranked: Sequence[str], required: set[str], k: int) -> float:
    return 1.0 if required <= set(ranked[:k]) else 0.0


def reciprocal_rank(ranked: Sequence[str], required: set[str]) -> float:
    for i, ref in enumerate(ranked):
        if ref in required:
            return 1.0 / (i + 1)
    return 0.0


def ndcg(ranked: Sequence[str], required: set[str], k: int) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, ref in enumerate(ranked[:k]) if ref in required)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(required), k)))
    return dcg / ideal if ideal else 0.0


def search_metrics(refs: Sequence[str], required: set[str]) -> dict[str, float]:
    """Every ranking metric of one search's results."""
    ranked = ranked_episodes(refs)
    out = {"mrr": reciprocal_rank(ranked, required)}
    for k in KS:
        out[f"recall_any@{k}"] = recall_any(ranked, required, k)
        out[f"recall_all@{k}"] = recall_all(ranked, required, k)
        out[f"ndcg@{k}"] = ndcg(ranked, required, k)
    return out


def metric_names() -> list[str]:
    return list(search_metrics([], {"x"}))


def question_retrieval(record: QuestionRecord, required_refs: Sequence[str]) -> dict[str, Any]:
    """The retrieval detail of one question (stored in its scores' ``detail.retrieval``)."""
    required = {episode_of(r) for r in required_refs}
    if not required:
        return {"reason": "question has no required evidence"}
    searches = [c.result_refs for c in record.tool_calls if c.name == SEARCH_TOOL]
    per_search = [search_metrics(refs, required) for refs in searches] or [
        search_metrics([], required)]
    first = per_search[0]
    best = {name: max(s[name] for s in per_search) for name in first}
    received = {episode_of(r) for r in record.retrieved_refs}
    cited = {episode_of(r) for r in record.cited_refs}
    return {
        "required": len(required),
        "searches": len(searches),
        "first": first,
        "best": best,
        "funnel": {
            "retrieved": len(required & received) / len(required),
            "cited": len(required & cited) / len(required),
        },
    }
