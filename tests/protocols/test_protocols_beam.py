"""The BEAM protocol on the BEAM fixture conversation: one judge call per rubric item graded 0 /
0.5 / 1, the released script's integer arithmetic beside the paper's, event ordering by
normalised Kendall tau-b after the judge's line-to-item matching, and the ability and overall
figures, all checked against values worked out by hand from the published definitions."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lens.data.importers.beam import write_beam
from lens.scoring.protocols.beam import align, kendall_tau_norm, parse_score
from lens.scoring.scorer import score_run_sync
from tests.protocols.builders import PolicyJudge, stored_run

CONV = Path(__file__).resolve().parents[1] / "datasets" / "fixtures" / "beam" / "chats" / "100K"

# Answers in the file's question order: abstention, contradiction resolution, event ordering,
# information extraction, instruction following, knowledge update, multi-session reasoning,
# preference following, summarization, temporal reasoning.
FAITHFUL = [
    "Based on the provided chat, there is no information related to user feedback on the "
    "login page.",
    "There is contradictory information: you said you never wrote Flask routes, but later you "
    "mentioned a homepage.",
    "1. Sprint plan\n2. Caching tweaks\n3. Homepage route",
    "Your first sprint ends on March 29.",
    "I use code blocks with syntax highlighting: ```python login()```",
    "It averages 250ms now (it was 400ms).",
    "Two columns: 'category' and 'notes'.",
    "I suggest lightweight libraries such as Chart.js.",
    "Your first sprint ending March 29 came first; the dashboard API went from 400ms to 250ms.",
    "About three weeks.",
]
ABSTAIN = ["Based on the provided chat, there is no information related to user feedback on the "
           "login page."] * 10


def key_phrase(item: str) -> str:
    return re.sub(r"^LLM response should (state|mention|contain): ", "", item).lower()


def rubric_judge(prompt: str) -> str:
    """Full compliance when the response holds the item's key phrase; partial when it holds only
    the phrase's last word (and the phrase has several); none otherwise."""
    if prompt.startswith("Do these two snippets"):
        ref = prompt.split("First snippet: ", 1)[1].split("\n", 1)[0].lower()
        line = prompt.split("Second snippet: ", 1)[1].lower()
        return "YES" if ref in line else "NO"
    item = prompt.split("Rubric criterion: ", 1)[1].split("\n", 1)[0]
    response = prompt.split("Response to grade: ", 1)[1].split("\n\nFirst decide", 1)[0].lower()
    phrase = key_phrase(item)
    words = phrase.split()
    score = 1.0 if phrase in response else 0.5 if len(words) > 1 and words[-1] in response else 0.0
    return json.dumps({"score": score, "reason": "scripted"})


def _score(tmp_path: Path, answers: dict[str, list[str]]) -> tuple[PolicyJudge, object, Path]:
    ds = tmp_path / "beam.json"
    write_beam(CONV / "1", ds)
    run = stored_run(tmp_path, ds, answers)
    judge = PolicyJudge("gpt-4.1-mini", rubric_judge)
    return judge, score_run_sync(run, judge=judge, protocol="beam"), run


def test_rubric_items_graded_one_call_each_with_partial_credit_by_hand(tmp_path: Path) -> None:
    judge, scores, _ = _score(tmp_path, {"faithful": FAITHFUL})
    rows = {q.question_id.split("beam_100K_1_")[1]: q.metrics for q in scores.questions}
    # Contradiction: items 1 and 2 present (1, 1), item 3 only "route" of "you added a
    # homepage route" (0.5): the paper's mean (1 + 1 + 0.5) / 3; the released script adds
    # int(score), so 0.5 counts 0: (1 + 1 + 0) / 3.
    cr = rows["contradiction_resolution_1"]
    assert cr["beam_rubric"] == pytest.approx((1 + 1 + 0.5) / 3)
    assert cr["beam_score_released"] == pytest.approx((1 + 1 + 0) / 3)
    # Preference following: "suggest", not "suggests", lightweight libraries: 0.5 / 0.
    pf = rows["preference_following_1"]
    assert (pf["beam_score"], pf["beam_score_released"]) == (0.5, 0.0)
    # Summarization: first item whole (1), second only its last word "250ms" (0.5).
    assert rows["summarization_1"]["beam_score"] == pytest.approx((1 + 0.5) / 2)
    assert rows["summarization_1"]["beam_score_released"] == pytest.approx((1 + 0) / 2)
    assert rows["information_extraction_1"]["beam_kendall_tau"] is None
    # 16 rubric items (1 + 3 + 3 + 1 + 1 + 1 + 2 + 1 + 2 + 1) and 3 x 3 (line, item) pairs for
    # event ordering; the rubric call carries the question, the item and the response in one
    # user message at temperature 0.
    rubric = [r for r in judge.requests if "Rubric criterion" in r.messages[0].content]
    same = [r for r in judge.requests if r.messages[0].content.startswith("Do these two")]
    assert (len(rubric), len(same)) == (16, 9)
    assert all(r.temperature == 0.0 and len(r.messages) == 1 for r in judge.requests)
    assert "Question the user asked: When does my first sprint end?" in "".join(
        r.messages[0].content for r in rubric)


def test_event_ordering_is_normalised_kendall_tau_of_the_matched_lines(tmp_path: Path) -> None:
    _, scores, _ = _score(tmp_path, {"faithful": FAITHFUL})
    eo = next(q.metrics for q in scores.questions if "event_ordering" in q.question_id)
    # Lines match Sprint plan, Caching tweaks, Homepage route. Over the union [S, H, C] the
    # reference ranks are [1, 2, 3] and the response's [1, 3, 2]: pairs (S,H) and (S,C)
    # concordant, (H,C) discordant, no ties: tau = (2 - 1) / 3, normalised (1/3 + 1) / 2.
    assert eo["beam_kendall_tau"] == pytest.approx((1 / 3 + 1) / 2)
    assert eo["beam_score"] == eo["beam_score_released"] == eo["beam_kendall_tau"]
    # All three items are named, so the rubric mean is 1: it is not the ordering figure.
    assert eo["beam_rubric"] == 1.0


def test_ability_table_and_overall_by_hand(tmp_path: Path) -> None:
    _, scores, _ = _score(tmp_path, {"faithful": FAITHFUL, "abstain": ABSTAIN})
    faithful = scores.aggregates["adapter"]["faithful"]
    # One question per ability; beam_score per ability: abstention 1, contradiction 2.5/3,
    # event ordering 2/3, extraction 1, instruction 1, update 1, multi-session 1,
    # preference 0.5, summarization 0.75, temporal 1; the mean of the ten abilities:
    assert faithful["beam_score"] == pytest.approx(
        (1 + 2.5 / 3 + 2 / 3 + 1 + 1 + 1 + 1 + 0.5 + 0.75 + 1) / 10)
    # Released arithmetic: contradiction 2/3, preference 0, summarization 0.5.
    assert faithful["beam_score_released"] == pytest.approx(
        (1 + 2 / 3 + 2 / 3 + 1 + 1 + 1 + 1 + 0 + 0.5 + 1) / 10)
    table = scores.aggregates["adapter/ability"]
    assert [k.split("|")[1] for k in table if k.startswith("faithful|")][:3] == [
        "abstention", "contradiction_resolution", "event_ordering"]
    assert table["faithful|preference_following"]["beam_score"] == 0.5
    settings = scores.condition["settings"]["protocol"]
    assert (settings["name"], settings["version"]) == ("beam", 1)
    assert settings["prompts"] == ["beam-rubric@1", "beam-same-event@1"]
    assert any("openai/gpt-4.1-mini; this scoring used scripted/gpt-4.1-mini" in n
               for n in scores.notes)


def test_abstaining_everywhere_wins_abstention_and_loses_overall(tmp_path: Path) -> None:
    _, scores, _ = _score(tmp_path, {"faithful": FAITHFUL, "abstain": ABSTAIN})
    gamed = scores.aggregates["adapter"]["abstain"]
    table = scores.aggregates["adapter/ability"]
    assert table["abstain|abstention"]["beam_score"] == 1.0
    # Contradiction: only "information" of the first item (0.5 of 3 items); event ordering:
    # one unmatched line, ranks [1,2,3,5] against [5,5,5,1]: three discordant pairs, three
    # tied in the response, tau-b = -3 / sqrt(6 * 3); every other ability 0.
    tau = -3 / (6 * 3) ** 0.5
    assert gamed["beam_score"] == pytest.approx((1 + 0.5 / 3 + (tau + 1) / 2) / 10)
    assert gamed["beam_score"] < scores.aggregates["adapter"]["faithful"]["beam_score"]


def test_graded_verdicts_are_kept_and_reused_when_rescored(tmp_path: Path) -> None:
    _, first, run = _score(tmp_path, {"faithful": FAITHFUL})
    judge = PolicyJudge("gpt-4.1-mini", lambda p: pytest.fail("no new judge call expected"))
    again = score_run_sync(run, judge=judge, protocol="beam")
    assert judge.requests == []
    assert again.aggregates == first.aggregates
    pf = next(q for q in again.questions if "preference" in q.question_id)
    assert pf.detail["rubric_0"]["verdict"] == "0.5"


def test_an_unknown_verdict_leaves_the_question_unknown_not_zero(tmp_path: Path) -> None:
    ds = tmp_path / "beam.json"
    write_beam(CONV / "1", ds)
    run = stored_run(tmp_path, ds, {"faithful": FAITHFUL})

    def unreadable_for_summaries(prompt: str) -> str:
        return "I cannot decide." if "Summarise" in prompt else rubric_judge(prompt)

    scores = score_run_sync(run, judge=PolicyJudge("gpt-4.1-mini", unreadable_for_summaries),
                            protocol="beam")
    summ = next(q.metrics for q in scores.questions if "summarization" in q.question_id)
    assert summ["beam_score"] is None
    # With one ability unknown the ten-ability mean is not defined.
    assert scores.aggregates["adapter"]["faithful"]["beam_score"] is None
    assert scores.judge.invalid == 2


def test_matching_and_tau_on_their_own() -> None:
    ref = ["A", "B", "C"]
    same = {(j, k): float(line == ref[k]) for j, line in enumerate(["C", "B", "A"])
            for k in range(3)}
    # Reversed order: every pair discordant, tau -1, normalised 0; in order, 1.
    assert kendall_tau_norm(ref, align(ref, ["C", "B", "A"], same)) == 0.0
    assert kendall_tau_norm(ref, ref) == 1.0
    # A preamble line: union [A, B, C, intro], ranks [1, 2, 3, 5] and [2, 3, 4, 1]; pairs
    # among A, B, C concordant (3), each with intro discordant (3): tau 0, normalised 0.5.
    assert kendall_tau_norm(ref, ["intro", "A", "B", "C"]) == pytest.approx(0.5)
    # A needed verdict missing: unknown, never a guess; blank lines need no verdict.
    assert align(ref, ["A", "", "B"], {(0, 0): 1.0, (2, 1): None}) is None
    assert align(ref, ["A", ""], {(0, 0): 1.0}) == ["A", ""]
    assert [parse_score(t) for t in ('{"score": 0.5}', '```json\n{"score": 1.0}\n```',
                                     '"score": 0', '{"score": 0.7}', "no idea")] == [
        0.5, 1.0, 0.0, None, None]


def test_errored_answer_scores_zero_without_judge_calls(tmp_path: Path) -> None:
    from tests.scoring.scoring_fixtures import build_run, record

    ds = tmp_path / "beam.json"
    write_beam(CONV / "1", ds)
    questions = json.loads(ds.read_text())["questions"]
    records = [record(q["question_id"], text, adapter="faithful", scope=q["scope_id"],
                      checkpoint=q["checkpoint_after"],
                      status="error" if "event_ordering" in q["question_id"] else "answered")
               for q, text in zip(questions, FAITHFUL, strict=True)]
    judge = PolicyJudge("gpt-4.1-mini", rubric_judge)
    scores = score_run_sync(build_run(tmp_path / "run", ds, records), judge=judge,
                            protocol="beam")
    eo = next(q.metrics for q in scores.questions if "event_ordering" in q.question_id)
    assert (eo["beam_score"], eo["beam_kendall_tau"], eo["beam_rubric"]) == (0.0, 0.0, 0.0)
    # The other nine questions' 13 rubric items only.
    assert len(judge.requests) == 13
