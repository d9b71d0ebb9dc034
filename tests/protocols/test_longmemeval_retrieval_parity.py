"""LongMemEval's retrieval evaluation: lens's metrics and lens's ``longmemeval_bm25`` memory
against the official code (``src/retrieval``), run from a copy of the official repository on the
real items, per question."""

from __future__ import annotations

import json
import math

import pytest

from bench.longmemeval_retrieval import Official, compare, load_items
from lens.adapters.longmemeval_bm25 import LongMemEvalBm25Adapter, session_turns
from lens.data.dataset import Episode
from lens.scoring.measures.retrieval import lme_metrics, lme_session_from_turns
from tests.support.beside import require_beside
from tests.support.extras import skip_module_unless

skip_module_unless("bm25")

# The one item whose order is not the official one: its file lists its two sessions out of date
# order, lens ingests them in time order, and its evidence turn ties on BM25 score (0.595) with a
# turn of the other session, so the tie falls the other way (an abstention question, outside
# the table).
TIE_ITEM = "gpt4_fe651585_abs"
# The _s items that differ (docs/datasets.md, "LongMemEval's retrieval table"): a user turn
# holding a line "assistant: ..." read back as two turns, and two items whose sessions are listed
# out of date order, where tied documents fall in another order.
S_EXCEPTIONS = {"gpt4_e05b82a6", "gpt4_fe651585", "gpt4_1e4a8aec"}


def test_metrics_by_hand() -> None:
    ranked = ["a", "x", "b", "y"]
    out = lme_metrics(ranked, {"a", "b"}, 2)
    assert out == {"recall_any@2": 1.0, "recall_all@2": 0.0, "ndcg_any@2": 0.5}
    # Ranks 1 and 2 weigh the same; rank 3 weighs 1/log2(3).
    got = lme_metrics(ranked, {"a", "b"}, 3)["ndcg_any@3"]
    assert got == pytest.approx((1 + 1 / math.log2(3)) / 2)
    # No relevant entry: recall_any 0, recall_all 1, ndcg 0 (as the official functions).
    assert lme_metrics(ranked, set(), 2) == {"recall_any@2": 0.0, "recall_all@2": 1.0,
                                             "ndcg_any@2": 0.0}
    # Sessions from turns: the depth grows until it holds k distinct sessions.
    turns = ["s1", "s1", "s1", "s2"]
    assert lme_session_from_turns(turns, {"s2"}, 2)["recall_any@2"] == 1.0


def test_session_turns_read_back_the_importer_text() -> None:
    text = "Chat session of 2023/05/20 (Sat) 02:21.\nuser: hi\nthere\nassistant: ok\nuser: bye"
    assert [(t.role, t.content) for t in session_turns(text)] == [
        ("user", "hi\nthere"), ("assistant", "ok"), ("user", "bye")]
    a = LongMemEvalBm25Adapter(granularity="turn", max_results=5)
    a.reset("s")
    a.ingest(Episode(episode_id="s_001", scope_id="s", timestamp="2023-05-20T02:21:00",
                     text=text))
    hits = a.search("bye", None, 5)
    assert [h.ref_id for h in hits] == ["s_001#t3", "s_001#t1"]


def _official() -> Official:
    # The retrieval code, not only the folder: a copy holding only src/evaluation skips too.
    retrieval = require_beside("thirdparty", "longmemeval-code", "src", "retrieval",
                               what="the official LongMemEval retrieval code "
                                    "(xiaowu0162/LongMemEval, src/retrieval)")
    return Official(retrieval.parents[1])


@pytest.mark.parametrize("granularity", ["session", "turn"])
def test_real_oracle_items_equal_the_official_run(granularity: str) -> None:
    sample = require_beside("shared", "longmemeval-sample", "longmemeval_oracle_sample.json",
                            what="the LongMemEval oracle sample")
    items = json.loads(sample.read_text(encoding="utf-8"))
    res = compare(items, _official(), granularity)
    assert res["questions"] == 100 and res["scored"] == 90
    differ = {r["question_id"] for r in res["rows"]
              for level in r["official"] for k in r["official"][level]
              if abs(r["official"][level][k] - r["lens"][level][k]) > 1e-12}
    assert differ <= {TIE_ITEM}
    assert res["table"] and all(sides["official"] == sides["lens"]
                                for sides in res["table"].values())


@pytest.mark.slow
def test_real_s_items_equal_the_official_run() -> None:
    folder = require_beside("thirdparty", "longmemeval-reader", "lme_jsons_s",
                            what="the LongMemEval _s items (hussainzs/Memoria lme_jsons)")
    official = _official()
    items = list(load_items(folder))
    for granularity in ("session", "turn"):
        res = compare(items[:60], official, granularity)
        differ = {r["question_id"] for r in res["rows"]
                  for level in r["official"] for k in r["official"][level]
                  if abs(r["official"][level][k] - r["lens"][level][k]) > 1e-12}
        assert differ <= S_EXCEPTIONS, differ
