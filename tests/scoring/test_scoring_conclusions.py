"""Right, not only mentioning the right figures: conclusions, claims about a subject, explicit
citations (docs/scoring.md, "What counts as a claim")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scoring_fixtures import dataset_dict, ep, record

from lens.data.dataset import GroundTruth
from lens.data.dataset_check import validate_raw
from lens.data.ground_truth_text import fact_subject, parse_conclusion
from lens.runner.agent import extract_citations
from lens.scoring.text.claims import split_claims
from lens.scoring.text.conclusion import check_conclusion, verdicts
from lens.scoring.text.facts import AnswerText, match_fact
from lens.scoring.text.refs import received


def _matched(fact: str, answer: str) -> bool:
    return match_fact(fact, AnswerText(split_claims(answer, None).text)).matched


@pytest.mark.parametrize("answer, status", [
    ("No. DEP-4230 came after the rise began.", "stated"),
    ("Not yet: only two reports cover it.", "stated"),
    ('{"answer": "No. DEP-4230 came after the rise."}', "stated"),
    ("**Verdict:** no, it did not.", "stated"),
    ("Yes, already as of 2024-04-04.", "contradicted"),
    ("Either: No. It came later. Or, equally possible: Yes. It caused the rise.", "both"),
    ("DEP-4230 came after the rise began.", "absent"),
    # "No <noun>" states something; it is no verdict.
    ("No user-facing impact yet.", "absent"),
])
def test_the_verdict_an_answer_opens_with(answer: str, status: str) -> None:
    check = check_conclusion("no", answer)
    assert check.status == status, check
    assert check.voids_facts is (status in ("contradicted", "both"))


def test_a_claim_without_a_verdict_is_found_by_the_matcher() -> None:
    conclusion = "yes: auth p99 latency has climbed since CHG-5382"
    assert check_conclusion(conclusion, "Auth p99 latency rose steadily after CHG-5382.").status \
        == "stated"
    assert check_conclusion(conclusion, "It would be wrong to say auth p99 latency rose after "
                                        "CHG-5382.").status == "absent"
    assert check_conclusion("yes: restore the 300 s cache TTL",
                            "No action is needed; the cache is fine.").status == "contradicted"
    assert verdicts("Too early to call a trend. Yes, it moved.") == {"no", "yes"}


def test_conclusions_and_subject_forms_parse() -> None:
    assert parse_conclusion("No: DEP-4230 did not cause it") == ("no", "DEP-4230 did not cause it")
    assert parse_conclusion("moderate and rising") == (None, "moderate and rising")
    assert fact_subject("auth p99 latency: 224 ms") == ("auth p99 latency", "224 ms")
    assert fact_subject("DEP-4230: 2024-03-23") == ("DEP-4230", "2024-03-23")
    # A finding written as a sentence is never split at a colon.
    assert fact_subject("the cause: geo-lookup latency rose") == (
        None, "the cause: geo-lookup latency rose")


def test_a_blank_conclusion_is_refused_and_an_absent_one_changes_no_hash() -> None:
    data = dataset_dict()
    data["questions"][0]["ground_truth"]["conclusion"] = "  "
    ds, problems = validate_raw(data, "ds.json")
    assert ds is None and problems[0].location.endswith("ground_truth.conclusion")
    assert "blank" in problems[0].message
    truth = GroundTruth(canonical_answer="x")
    assert "conclusion" not in truth.model_dump()
    assert GroundTruth(canonical_answer="x", conclusion="no").model_dump()["conclusion"] == "no"


@pytest.mark.parametrize("answer", [
    "CHG-5382, 224 ms, 307 ms, 2024-03-22",
    "Auth p99 latency was 224 ms (or possibly 252 ms).",
    "Auth p99 latency was 224 or 252 ms.",
    "Auth p99 latency never reached 224 ms.",
    "It would be wrong to say that auth p99 latency was 224 ms.",
    "I doubt that auth p99 latency was 224 ms.",
    "Only if the reports were wrong would auth p99 latency have been 224 ms.",
    "If the cache had been restored, auth p99 latency would be 224 ms.",
    "Inventory-sync p99 was 224 ms.",
    "The records cover it.\nSources: auth p99 latency 224 ms",
])
def test_a_value_counts_only_as_a_claim_about_its_subject(answer: str) -> None:
    assert not _matched("auth p99 latency: 224 ms", answer)


@pytest.mark.parametrize("fact, answer", [
    ("auth p99 latency: 224 ms", "Auth p99 latency was 224 ms on 2024-03-17."),
    ("auth p99 latency: 224 ms", "Auth p99 latency was about 225 ms."),
    ("auth p99 latency: 224 ms", "Auth p99 latency was about 220 ms."),
    ("auth p99 latency: 736 ms", "Auth p99 latency was about 740 ms."),
    ("auth p99 latency: 224 ms", "There is no doubt that auth p99 latency was 224 ms."),
    ("auth p99 latency: CHG-5382", "Auth p99 latency began to climb right after CHG-5382."),
])
def test_honest_claims_count(fact: str, answer: str) -> None:
    assert _matched(fact, answer)


@pytest.mark.parametrize("fact, answer", [
    ("auth p99 latency: 224 ms", "Auth p99 latency was about 200 ms."),
    ("auth p99 latency: 224 ms", "Auth p99 latency was 225 ms."),
    ("Brightline invoice count: 19 invoices", "Brightline's invoice count was about 20 invoices."),
])
def test_rounding_counts_only_when_declared_and_to_two_figures_of_a_measurement(
        fact: str, answer: str) -> None:
    assert not _matched(fact, answer)


def test_only_the_documented_syntax_cites() -> None:
    answer = json.dumps({"answer": "Auth p99 latency rose [s1_ep_002].",
                         "facts": ["CHG-5382", "224 ms"], "ids": ["s1_ep_003"]})
    assert extract_citations(answer) == ["s1_ep_002"]
    assert extract_citations("See `[s1_ep_004]` and\n```\n[s1_ep_005]\n```\n[see s1_ep_006]") == []
    assert extract_citations("[s1_ep_001, s1_ep_002] [s1_ep_003#c2]") == [
        "s1_ep_001", "s1_ep_002", "s1_ep_003#c2"]


def test_an_invented_chunk_is_never_grounded() -> None:
    assert received("e1#c2", {"e1#c2"}, {"e1"})
    assert not received("e1#c7", {"e1"}, {"e1"})
    assert not received("e1#c7", {"e1#c2"}, {"e1"})
    assert received("e1", {"e1#c2"}, {"e1"})


def test_records_keep_the_refs_of_the_answer() -> None:
    rec = record("s1_q01_longitudinal", f"Rose [{ep(2)}].", retrieved=[ep(2)])
    assert rec.cited_refs == [ep(2)]


def test_a_bare_verdict_earns_nothing_without_backing() -> None:
    """An agent with no memory answers "No, there are no records of it" and lands on a "no"
    conclusion half the time: a verdict counts only when a key fact or the conclusion's own
    claim backs it (the quickstart's null arm out-scored sqlite_fts on fact recall before)."""
    from lens.data.dataset import Dataset, Question
    from lens.scoring.foundations.run_input import ScoringItem
    from lens.scoring.measures.mechanical import fact_recall

    ds = Dataset.model_validate(dataset_dict())
    base = ds.questions[0]
    gt = GroundTruth(canonical_answer="No. DEP-4230 came after the rise began.",
                     key_facts=["DEP-4230: 2024-04-05"], conclusion="no",
                     required_evidence_refs=[])
    question = Question.model_validate({**base.model_dump(), "ground_truth": gt.model_dump()})
    episodes = frozenset(e.episode_id for e in ds.scopes[0].episodes)

    def recall(answer: str, retrieved: list[str]) -> tuple[float | None, dict]:
        rec = record(base.question_id, answer, retrieved=retrieved)
        return fact_recall(ScoringItem(record=rec, question=question, scope_episodes=episodes))

    guess, detail = recall("No, there are no records indicating that.", [])
    assert guess == 0.0 and detail["conclusion"]["backed"] is False
    # The right verdict and its fact, but from no record: the fact counts, the verdict does not.
    unsourced, detail = recall("No. DEP-4230 was deployed on 2024-04-05, after the rise.", [])
    assert detail["conclusion"]["backed"] is False and unsourced == 0.5, detail
    backed, detail = recall(f"No. DEP-4230 was deployed on 2024-04-05, after the rise "
                            f"[{ep(3)}].", [ep(3)])
    assert detail["conclusion"]["backed"] is True and backed == 1.0, detail


@pytest.mark.parametrize("facts, answer", [
    # Another key fact's subject named nearer the figure takes it.
    (["inventory-sync p99: 235 ms", "auth p99 latency: 531 ms"],
     "No. Auth p99 latency spiked to 235 ms on 2024-03-22, a one-off; inventory-sync p99 kept "
     "climbing steadily, to 531 ms by 2024-04-04."),
    # The subject's words scattered over the sentence, another subject beside the figure.
    (["the Android app's daily login-loop tickets: 43 tickets"],
     "Roll back the Android app v5.5.0 and add a login-loop macro before feature-request "
     "reaches the 45 tickets escalation threshold: it has risen from 14 tickets to 43 tickets."),
    # Another vendor that shares a word of the name.
    (["Marlow IT Services month-to-date billing: $78,347"],
     "$78,347: the AP daily batch report gives Orwell Print Services month-to-date billing "
     "$78,347."),
    (["Orwell Print Services month-to-date billing: $57,146"],
     "$57,146: the AP daily batch report gives Marlow IT Services month-to-date billing "
     "$57,146."),
])
def test_a_value_given_to_another_subject_earns_nothing(facts: list[str], answer: str) -> None:
    from lens.scoring.text.facts import match_facts

    found = match_facts(facts, answer)
    assert not any(m.matched for m in found), [m.as_detail() for m in found]
    assert {m.reason for m in found} <= {"about another subject", "words missing",
                                         "subject or direction missing"}


@pytest.mark.parametrize("facts, answer", [
    (["inventory-sync p99: 235 ms", "auth p99 latency: 531 ms"],
     "No. Inventory-sync p99 spiked to 235 ms on 2024-03-22, a one-off; auth p99 latency kept "
     "climbing steadily, to 531 ms by 2024-04-04."),
    (["the Android app's daily login-loop tickets: 43 tickets"],
     "Roll back v5.5.0 before the Android app's daily login-loop tickets reach the 45 tickets "
     "escalation threshold: they have risen from 14 tickets to 43 tickets."),
    (["Marlow IT Services month-to-date billing: $78,347"],
     "$78,347: the AP daily batch report gives Marlow IT Services month-to-date billing "
     "$78,347."),
    (["F. Rossi's ALT: 71 U/L"], "Dr Rossi's ALT is 71 U/L."),
    (["Brightline Facilities's invoice count: 19 invoices"],
     "The 30-day invoice count of Brightline Facilities is 19 invoices."),
    # The subject after its value, or as the heading of a list.
    (["auth p99 latency: 224 ms"], "224 ms on 2024-03-17, the last auth p99 latency before "
                                   "the change."),
    (["auth p99 latency: 224 ms", "order-router retries: 47 per hour"],
     "- auth p99 latency: 224 ms\n- order-router retries: 47 per hour"),
    # An identifier names an event, whoever's figures stand beside it.
    (["auth p99 latency: CHG-5382", "order-router retries: 724 per hour"],
     "High: auth p99 latency is 729 ms; order-router retries is at 724 per hour against 47 per "
     "hour before CHG-5382."),
])
def test_a_value_said_of_its_own_subject_counts(facts: list[str], answer: str) -> None:
    from lens.scoring.text.facts import match_facts

    found = match_facts(facts, answer)
    assert all(m.matched for m in found), [m.as_detail() for m in found]


def test_the_judge_credits_a_conclusion_under_the_matchers_rule(tmp_path: Path) -> None:
    """A judge that grades every fact present (``judge_fakes.position_a``) still earns a
    verdict no point unless a credited key fact or its own claim backs it and the answer cites
    a record it received: the rule of mechanical.fact_recall (conclusion_backed)."""
    from scoring_fixtures import ScriptedJudge, build_run, write_dataset

    from lens.scoring import score_run_sync
    from tests.scoring.judge_fakes import position_a

    def credulous(request: object) -> str:
        return position_a(request.messages[-1].content)  # type: ignore[attr-defined]

    data = dataset_dict()
    qid = "s1_q04_negative"
    for q in data["questions"]:
        if q["question_id"] == qid:
            q["ground_truth"].update(key_facts=["DNS lookup time: 12 ms"], conclusion="no")
    path = write_dataset(tmp_path / "ds.json", data)
    answers = {"guess": ("No, there are no records indicating that.", []),
               "verdict_cited": (f"No. [{ep(9)}]", [ep(9)]),
               "backed": (f"No. DNS lookup time stayed at 12 ms [{ep(9)}].", [ep(9)])}
    got = {}
    for name, (answer, retrieved) in answers.items():
        root = build_run(tmp_path / name, path, [record(qid, answer, retrieved=retrieved,
                                                        checkpoint=10)])
        for grader in ("judge", "both"):
            scores = score_run_sync(root, judge=ScriptedJudge("credulous", credulous),
                                    fact_grader=grader, write=False)
            (row,) = [q for q in scores.questions if q.question_id == qid]
            got[name, grader] = row
    for grader in ("judge", "both"):
        for name in ("guess", "verdict_cited"):
            row = got[name, grader]
            # The figure is vetoed (the answer never states it) and the verdict is unbacked.
            assert row.metrics["fact_recall"] == 0.0, (name, grader, row.detail["fact_recall"])
            (verdict,) = [f for f in row.detail["fact_recall"]["facts"]
                          if f["fact"].startswith("The answer to the question")]
            assert verdict["grade"] == "present" and verdict["points"] == 0.0
            assert verdict["unbacked"]
        assert got["backed", grader].metrics["fact_recall"] == 1.0
