"""Tier-1 metrics and the rule-based tier-2 metrics on hand-made records with known values."""

from __future__ import annotations

import pytest
from scoring_fixtures import SCOPE, dataset_dict, ep, record

from lens.data.dataset import Dataset
from lens.runs.records import QuestionRecord
from lens.scoring.foundations.run_input import ScoringItem
from lens.scoring.measures import mechanical
from lens.scoring.text.claims import ScopeText

DS = Dataset.model_validate(dataset_dict())
EPISODES = frozenset(e.episode_id for e in DS.scopes[0].episodes)
TEXTS = ScopeText({e.episode_id: e.text for e in DS.scopes[0].episodes})
Q = {q.question_id: q for q in DS.questions}
LONG = f"{SCOPE}_q01_longitudinal"


def item(rec: QuestionRecord, prefixes: tuple[str, ...] = ()) -> ScoringItem:
    return ScoringItem(record=rec, question=Q[rec.question_id], scope_episodes=EPISODES,
                       synthetic_prefixes=prefixes, scope_text=TEXTS)


def test_grounding_all_cited_refs_received() -> None:
    rec = record(LONG, f"Latency rose [{ep(2)}] and kept rising [{ep(4)}].",
                 retrieved=[ep(2), ep(4), ep(5)])
    value, detail = mechanical.evidence_grounding(item(rec))
    assert value == 1.0
    assert detail == {"cited": 2, "grounded": 2}


def test_hallucinated_refs_lower_grounding() -> None:
    # ep 7 exists but the agent never received it; ep 99 does not exist at all.
    rec = record(LONG, f"Rose [{ep(2)}], then [{ep(7)}], see also [{ep(99)}] and [{ep(4)}].",
                 retrieved=[ep(2), ep(4)])
    value, detail = mechanical.evidence_grounding(item(rec))
    assert value == 0.5
    assert detail["misses"] == [{"ref": ep(7), "reason": "not_received"},
                                {"ref": ep(99), "reason": "not_in_scope"}]


def test_chunk_refs_map_to_their_episode() -> None:
    rec = record(LONG, f"Rose [{ep(2)}#c3] and [{ep(4)}] and [{ep(5)}#c1].",
                 retrieved=[ep(2), f"{ep(4)}#c0", f"{ep(5)}#c2"])
    value, detail = mechanical.evidence_grounding(item(rec))
    # Ep 4 cited whole, a chunk of it seen: grounded. c3 of an episode the adapter handed out
    # whole, and chunk c1 of ep 5 (only c2 was handed out), are refs it never returned.
    assert value == pytest.approx(1 / 3)
    assert detail["misses"] == [{"ref": f"{ep(2)}#c3", "reason": "not_received"},
                                {"ref": f"{ep(5)}#c1", "reason": "not_received"}]


def test_declared_synthetic_refs_are_grounded_only_when_received() -> None:
    rec = record(LONG, "Summary says so [summary:week1] and [summary:week2] and [mystery:1].",
                 retrieved=["summary:week1", "mystery:1"])
    value, detail = mechanical.evidence_grounding(item(rec, prefixes=("summary:",)))
    assert value == pytest.approx(1 / 3)
    assert {m["ref"]: m["reason"] for m in detail["misses"]} == {
        "summary:week2": "not_received", "mystery:1": "not_in_scope"}


def test_uncited_and_empty_answers_are_ungrounded() -> None:
    assert mechanical.evidence_grounding(item(record(LONG, "It rose a lot.")))[0] == 0.0
    value, detail = mechanical.evidence_grounding(item(record(LONG, "")))
    assert value == 0.0
    assert detail["reason"] == "empty answer"


def test_fact_recall_with_paraphrased_numbers() -> None:
    rec = record(LONG, f"Geo lookup latency was increasing, from 0.2 s to 1.2k ms [{ep(2)}]. "
                       "The connection pool got exhausted.", retrieved=[ep(2)])
    value, detail = mechanical.fact_recall(item(rec))
    assert value == 1.0
    assert [f["matched"] for f in detail["facts"]] == [True, True]


def test_fact_recall_partial_and_wrong_number() -> None:
    rec = record(LONG, "Geo-lookup latency increased from 200ms to 900ms.")
    value, detail = mechanical.fact_recall(item(rec))
    assert value == 0.0
    assert detail["facts"][0]["numbers_missing"] == ["1,200ms"]
    rec = record(LONG, "Geo-lookup latency increased from 200ms to 1200ms.")
    assert mechanical.fact_recall(item(rec))[0] == 0.5


def test_fact_recall_missing_without_key_facts() -> None:
    rec = record(f"{SCOPE}_q02_null", "A routine day [s1_ep_003].")
    value, detail = mechanical.fact_recall(item(rec))
    assert value is None
    assert "no key facts" in detail["reason"]


def test_fact_recall_of_empty_answer_is_zero() -> None:
    assert mechanical.fact_recall(item(record(LONG, "")))[0] == 0.0


def test_evidence_coverage_counts_received_episodes_only() -> None:
    # Required: ep 2 and ep 4. A chunk of ep 2 was retrieved; ep 4 was neither.
    rec = record(LONG, "x", retrieved=[f"{ep(2)}#c1", ep(6)])
    value, detail = mechanical.evidence_coverage(item(rec))
    assert value == 0.5
    assert detail["missing"] == [ep(4)]
    # Citing a ref the agent never received earns no coverage (grounding marks it instead).
    rec = record(LONG, f"cited only [{ep(4)}]", retrieved=[ep(2)])
    assert mechanical.evidence_coverage(item(rec))[0] == 0.5
    assert mechanical.evidence_coverage(item(record(LONG, "nothing")))[0] == 0.0


def test_budget_compliance() -> None:
    assert mechanical.budget_compliance(item(record(LONG, "a")))[0] == 1.0
    value, detail = mechanical.budget_compliance(
        item(record(LONG, "a", compliant=False, stop_reason="max_tool_calls")))
    assert value == 0.0
    assert detail == {"stop_reason": "max_tool_calls", "over": ["max_tool_calls"]}
    errored = record(LONG, "", status="error")
    assert mechanical.budget_compliance(item(errored))[0] is None


GOOD = "Geo-lookup latency increased from 200ms to 1,200ms with connection pool exhaustion"


def _insight(rec: QuestionRecord) -> float | None:
    it = item(rec)
    fact = mechanical.fact_recall(it)[0]
    return mechanical.insight_depth(it, fact, len(mechanical.relevant_sources(it)[0]))[0]


def test_insight_depth_needs_stated_facts_from_two_relevant_sources() -> None:
    one = record(LONG, f"{GOOD} [{ep(2)}#c1] [{ep(2)}#c2].",
                 retrieved=[f"{ep(2)}#c1", f"{ep(2)}#c2"])
    assert _insight(one) == 0.5
    two = record(LONG, f"{GOOD} [{ep(2)}] [{ep(4)}].", retrieved=[ep(2), ep(4)])
    assert _insight(two) == 1.0
    # The second source is hallucinated, or irrelevant to the question: it does not count.
    fake = record(LONG, f"{GOOD} [{ep(2)}] [{ep(8)}].", retrieved=[ep(2)])
    assert _insight(fake) == 0.5
    off = record(LONG, f"{GOOD} [{ep(2)}] [{ep(9)}].", retrieved=[ep(2), ep(9)])
    assert _insight(off) == 0.5
    # Two relevant citations and nothing stated: no depth (the LENS rule gave this 1).
    vague = record(LONG, f"Things changed over time, see the records [{ep(2)}] [{ep(4)}].",
                   retrieved=[ep(2), ep(4)])
    assert _insight(vague) == 0.0


def test_citation_precision_counts_relevant_grounded_citations() -> None:
    focused = record(LONG, f"{GOOD} [{ep(2)}] [{ep(4)}].", retrieved=[ep(2), ep(4), ep(9)])
    assert mechanical.citation_precision(item(focused))[0] == 1.0
    everything = record(LONG, GOOD + "".join(f" [{ep(i)}]" for i in range(1, 11)),
                        retrieved=[ep(i) for i in range(1, 11)])
    value, detail = mechanical.citation_precision(item(everything))
    assert value == 0.2 and detail["relevant"] == 2
    assert mechanical.citation_precision(item(record(LONG, GOOD)))[0] == 0.0


def test_reasoning_quality_is_the_share_of_stated_figures_that_hold() -> None:
    held = record(LONG, f"Latency went from 200ms to 1,200ms [{ep(2)}].", retrieved=[ep(2)])
    assert mechanical.reasoning_quality(item(held))[0] == 1.0
    # 777 ms is in no record received and not in the ground truth.
    made_up = record(LONG, f"Latency went from 200ms to 777ms [{ep(2)}].", retrieved=[ep(2)])
    assert mechanical.reasoning_quality(item(made_up))[0] == 0.5
    # No figure where the ground truth has some: nothing to credit (the LENS rule gave 1 to
    # any answer over 50 characters).
    vague = record(LONG, "Latency rose steadily over the week while retries grew and the pool "
                         "drained.", retrieved=[ep(2)])
    assert mechanical.reasoning_quality(item(vague))[0] == 0.0
    assert mechanical.reasoning_quality(item(record(LONG, "")))[0] == 0.0


def test_bracketed_log_tags_are_not_citations() -> None:
    rec = record(LONG, f"[INFO] latency rose [{ep(2)}]; [CRITICAL] pool drained [{ep(4)}].",
                 retrieved=[ep(2), ep(4)])
    value, detail = mechanical.evidence_grounding(item(rec))
    assert value == 1.0
    assert detail["ignored_tags"] == ["INFO", "CRITICAL"]
    # A ref-like made-up id is still a hallucinated citation.
    rec = record(LONG, f"latency rose [{ep(2)}] [log_17]", retrieved=[ep(2)])
    assert mechanical.evidence_grounding(item(rec))[0] == 0.5
    # Only tags: nothing was cited.
    rec = record(LONG, "[WARN] latency rose", retrieved=[ep(2)])
    assert mechanical.evidence_grounding(item(rec)) == (
        0.0, {"cited": 0, "grounded": 0, "reason": "no citations", "ignored_tags": ["WARN"]})
