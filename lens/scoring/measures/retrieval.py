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
from lens.scoring.text.refs import episode_of

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


# LongMemEval's retrieval evaluation (its ``src/retrieval/eval_utils.py``, reported by
# ``src/evaluation/print_retrieval_metrics.py``), kept apart from lens's own metrics above: its
# discount gives ranks 1 and 2 the same weight (rank r > 1 weighs 1 / log2(r)), its ideal ranking
# counts every relevant entry of the corpus, and a session judged from turns is the evidence turns
# of the session, its other turns counting as a different session (the official id rewrite).
LME_KS = (1, 3, 5, 10, 30, 50)


def _lme_dcg(relevances: Sequence[bool], k: int) -> float:
    return sum(1.0 / (math.log2(i) if i > 1 else 1.0)
               for i, rel in enumerate(relevances[:k], start=1) if rel)


def lme_metrics(ranked: Sequence[str], relevant: set[str], k: int) -> dict[str, float]:
    """``recall_any@k``, ``recall_all@k`` and ``ndcg_any@k`` of one ranking of the whole
    corpus (``ranked``: the id of every corpus entry in rank order, an id repeated for each of
    its entries) against the relevant ids. With no relevant id, recall_any is 0 and recall_all 1,
    as the official functions give."""
    top = set(ranked[:k])
    flags = [r in relevant for r in ranked]
    ideal = _lme_dcg(sorted(flags, reverse=True), k)
    return {f"recall_any@{k}": 1.0 if relevant & top else 0.0,
            f"recall_all@{k}": 1.0 if relevant <= top else 0.0,
            f"ndcg_any@{k}": _lme_dcg(flags, k) / ideal if ideal else 0.0}


def lme_session_from_turns(ranked_sessions: Sequence[str], relevant: set[str], k: int
                           ) -> dict[str, float]:
    """Session-level metrics of a turn ranking (``ranked_sessions``: each ranked turn's session
    id, evidence turns and other turns of one session told apart by the caller): the cut-off is
    widened until it holds ``k`` distinct sessions, then :func:`lme_metrics` at that depth."""
    depth = k
    while depth <= len(ranked_sessions) and len(set(ranked_sessions[:depth])) < k:
        depth += 1
    out = lme_metrics(ranked_sessions, relevant, depth)
    return {name.replace(f"@{depth}", f"@{k}"): v for name, v in out.items()}
