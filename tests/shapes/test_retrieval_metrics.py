"""Retrieval metrics against hand-computed values, and the answers that would game them."""

from __future__ import annotations

import math

import pytest

from lens.runs.records import QuestionRecord, ToolCallRecord
from lens.scoring.measures.retrieval import (
    ndcg,
    question_retrieval,
    ranked_episodes,
    reciprocal_rank,
    search_metrics,
)

IDEAL2 = 1 + 1 / math.log2(3)  # two relevant episodes at ranks 1 and 2


def _record(*searches: list[str], retrieved: list[str] | None = None,
            cited: list[str] | None = None) -> QuestionRecord:
    calls = [ToolCallRecord(name="memory_search", arguments={"query": "q"}, ok=True,
                            result_refs=refs, result_count=len(refs)) for refs in searches]
    received = retrieved if retrieved is not None else [r for s in searches for r in s]
    return QuestionRecord(unit_key="u", adapter="a", scope_id="s", repeat=0, question_id="q",
                          checkpoint=1, status="answered", tool_calls=calls,
                          retrieved_refs=received, cited_refs=cited or [])


def test_hand_computed_ranking() -> None:
    m = search_metrics(["a", "x", "b", "y"], {"a", "b"})
    assert m["mrr"] == 1.0
    assert m["recall_any@5"] == 1.0 and m["recall_all@5"] == 1.0
    # DCG = 1/log2(2) + 1/log2(4) = 1.5; IDCG = 1 + 1/log2(3) = 1.6309
    assert m["ndcg@5"] == pytest.approx(1.5 / IDEAL2)
    assert m["ndcg@5"] == pytest.approx(0.919720, abs=1e-6)

    m = search_metrics(["x", "y", "a"], {"a", "b"})
    assert m["mrr"] == pytest.approx(1 / 3)
    assert m["recall_any@5"] == 1.0 and m["recall_all@5"] == 0.0
    assert m["ndcg@5"] == pytest.approx(0.5 / IDEAL2)  # 0.306574
    assert m["ndcg@5"] == pytest.approx(0.306574, abs=1e-6)


def test_cutoffs_and_chunks() -> None:
    refs = [f"n{i}" for i in range(6)] + ["a#c2"] + [f"m{i}" for i in range(5)]
    m = search_metrics(refs, {"a"})
    assert m["recall_any@5"] == 0.0 and m["recall_any@10"] == 1.0
    assert m["mrr"] == pytest.approx(1 / 7)
    assert m["ndcg@10"] == pytest.approx(1 / math.log2(8))
    assert ranked_episodes(["a#c1", "a#c2", "x", "b#c0"]) == ["a", "x", "b"]
    assert reciprocal_rank(ranked_episodes(["a#c1", "b"]), {"b"}) == 0.5
    assert ndcg([], {"a"}, 5) == 0.0


def test_first_and_best_search_and_funnel() -> None:
    rec = _record(["x", "y"], ["b", "a"], cited=["a", "z"])
    d = question_retrieval(rec, ["a", "b"])
    assert d["searches"] == 2 and d["required"] == 2
    assert d["first"]["recall_any@5"] == 0.0 and d["first"]["mrr"] == 0.0
    assert d["best"]["recall_all@5"] == 1.0 and d["best"]["mrr"] == 1.0
    assert d["best"]["ndcg@5"] == pytest.approx(1.0)
    assert d["funnel"] == {"retrieved": 1.0, "cited": 0.5}


def test_no_required_evidence_is_unknown_not_zero() -> None:
    d = question_retrieval(_record(["a"]), [])
    assert "first" not in d and "reason" in d


def test_adversaries_score_below_a_faithful_search() -> None:
    faithful = search_metrics(["a", "b", "x"], {"a", "b"})
    # Dumping a long list with the evidence buried deep does not reach the top k.
    dump = search_metrics([f"n{i}" for i in range(40)] + ["a", "b"], {"a", "b"})
    assert dump["recall_any@10"] == 0.0 < faithful["recall_any@10"]
    assert dump["ndcg@10"] < faithful["ndcg@10"] and dump["mrr"] < faithful["mrr"]
    # Repeating one ref many times does not count twice.
    repeat = search_metrics(["a#c1", "a#c2", "a#c3", "a#c4", "a#c5"], {"a", "b"})
    assert repeat["recall_all@5"] == 0.0 and repeat["ndcg@5"] < faithful["ndcg@5"]
    # Never searching does not escape the metric: it scores 0, not unknown.
    silent = question_retrieval(_record(), ["a"])
    assert silent["searches"] == 0 and silent["first"]["recall_any@5"] == 0.0
    assert silent["best"]["mrr"] == 0.0
    # Many scattershot searches raise the best search, not the first.
    shots = question_retrieval(_record(["x"], ["y"], ["z"], ["a"]), ["a"])
    assert shots["best"]["mrr"] == 1.0 and shots["first"]["mrr"] == 0.0
    # Citing everything raises the cited share only for evidence actually named.
    spam = question_retrieval(_record(["x"], cited=[f"n{i}" for i in range(30)]), ["a"])
    assert spam["funnel"]["cited"] == 0.0
