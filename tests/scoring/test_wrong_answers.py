"""Answers known to be wrong (vague, specific, another question's gold, a hedge naming the gold
among others) and known to be right (the gold, a faithful paraphrase), built from questions
with a short gold: each kind is built deterministically from the data, and the matcher accepts
the right ones and refuses the wrong ones; on real LoCoMo and LongMemEval questions, through
the bench's command line."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from lens.scoring.text.facts import AnswerText, match_fact
from lens.scoring.wrong_answers import (
    RIGHT_KINDS,
    WRONG_KINDS,
    BuiltAnswer,
    GoldQuestion,
    build,
    build_all,
)
from tests.support.beside import ROOT, require_beside

QUESTIONS = [
    GoldQuestion("c1/0", "When did Caroline go to the support group?", "7 May 2023", "c1"),
    GoldQuestion("c1/1", "When did Nate win a big Valorant tourney?",
                 "The Saturday before 7 November, 2022", "c1"),
    GoldQuestion("c1/2", "What is the name of Melanie's dog?", "Oliver", "c1"),
    GoldQuestion("c1/3", "Which city did Jon visit?", "Rome", "c1"),
    GoldQuestion("c1/4", "Which city did Gina move to?", "Seattle", "c1"),
    GoldQuestion("c1/5", "How many cats does Melanie have?", "2", "c1"),
    GoldQuestion("c1/6", "When did Jon start going to the gym?", "March, 2023", "c1"),
    GoldQuestion("c1/7", "Did Caroline enjoy the parade?", "Yes", "c1"),
    GoldQuestion("c2/0", "What did Tim start learning?", "an instrument", "c2"),
]


def test_every_kind_is_built_and_the_same_data_builds_the_same_answers() -> None:
    first, second = build_all(QUESTIONS), build_all(list(QUESTIONS))
    assert first == second
    kinds = {a.kind for a in first}
    assert kinds == set(WRONG_KINDS) | set(RIGHT_KINDS)
    for a in first:
        q = next(q for q in QUESTIONS if q.id == a.question_id)
        if a.kind in ("specific", "other_gold"):
            assert q.gold.lower() not in a.answer.lower(), a
        if a.kind == "hedge":
            assert q.gold.rstrip(".").lower() in a.answer.lower() and " or " in a.answer, a


# LongMemEval's golds that name their own accepted alternatives (temporal-reasoning), as written.
SELF_HEDGED = [
    GoldQuestion("t/0", "How many days ago did I attend the baking class?",
                 "17 days ago. 18 days (including the last day) is also acceptable.", "t"),
    GoldQuestion("t/1", "How many days passed between the two trips?",
                 "1 day. 2 days (including the last day) is also acceptable.", "t"),
    GoldQuestion("t/2", "How many days had passed when I sold the bike?",
                 "16 days. 17 days (including the last day) is also acceptable.", "t"),
    GoldQuestion("t/3", "How long was I away?",
                 "One week. Answers ranging from 7 days to 10 days are also acceptable.", "t"),
    GoldQuestion("t/4", "How many days did the course take?",
                 "7 days. 8 days (including the last day) is also acceptable.", "t"),
]


def _numbers(text: str) -> set[int]:
    words = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
             "eight": 8, "nine": 9, "ten": 10, "twelve": 12}
    return ({int(n) for n in re.findall(r"\d+", text)}
            | {n for w, n in words.items() if re.search(rf"\b{w}\b", text, re.I)})


def test_a_wrong_answer_states_no_value_the_gold_accepts() -> None:
    accepted = {"t/0": {17, 18}, "t/1": {1, 2}, "t/2": {16, 17}, "t/3": {1, 7, 8, 9, 10},
                "t/4": {7, 8}}
    built = build_all(SELF_HEDGED)
    assert {a.kind for a in built} >= {"specific", "other_gold", "hedge"}
    for a in built:
        if a.right:
            continue
        assert "acceptable" not in a.answer, a
        named = _numbers(a.answer)
        if a.kind == "hedge":
            # The hedge names the gold's main answer among two values the gold does not accept.
            main = SELF_HEDGED[int(a.question_id[2:])].gold.split(".")[0]
            assert main.lower() in a.answer.lower(), a
            named -= _numbers(main)
        assert not named & accepted[a.question_id], a
        if a.question_id == "t/4":
            assert "one week" not in a.answer.lower(), a  # 7 days
    specific = {a.question_id: a.answer for a in built if a.kind == "specific"}
    # "1 day" moved by its smallest step would be "2 day", an answer the gold accepts.
    assert specific["t/1"] != "It was 2 day." and _numbers(specific["t/1"]) - {1, 2}


def test_the_gold_of_another_question_comes_from_the_same_conversation() -> None:
    (other,) = [a for a in build(QUESTIONS[3], QUESTIONS) if a.kind == "other_gold"]
    golds = {q.gold for q in QUESTIONS if q.group == "c1" and q.id != "c1/3"}
    assert any(g.rstrip(".").lower() in other.answer.lower() for g in golds)


def test_the_matcher_accepts_the_right_answers_and_refuses_the_wrong_ones() -> None:
    accepted: dict[str, list[bool]] = {}
    for a in build_all(QUESTIONS):
        q = next(q for q in QUESTIONS if q.id == a.question_id)
        accepted.setdefault(a.kind, []).append(match_fact(q.gold, AnswerText(a.answer)).matched)
    for kind in WRONG_KINDS:
        assert not any(accepted[kind]), kind
    # "Yes" is a verdict, no key fact the matcher reads; every other gold is accepted.
    assert sum(accepted["gold"]) >= len(QUESTIONS) - 1
    assert sum(accepted["paraphrase"]) >= len(QUESTIONS) - 1


def test_the_bench_measures_the_matcher_on_real_locomo_and_longmemeval(tmp_path: Path) -> None:
    locomo = require_beside("thirdparty", "zep-locomo", "locomo.json", what="LoCoMo's data")
    lme = require_beside("thirdparty", "longmemeval", "longmemeval_oracle.json",
                         what="LongMemEval's oracle set")
    small_locomo = tmp_path / "locomo.json"
    small_locomo.write_text(json.dumps(json.loads(locomo.read_text(encoding="utf-8"))[:1]))
    small_lme = tmp_path / "lme.json"
    small_lme.write_text(json.dumps(json.loads(lme.read_text(encoding="utf-8"))[:40]))
    proc = subprocess.run(
        [sys.executable, "-m", "bench.wrong_answers", "--graders", "matcher", "--work",
         str(tmp_path / "work"), "--locomo", str(small_locomo), "--longmemeval", str(small_lme)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| locomo | matcher")
            or line.startswith("| longmemeval | matcher")]
    assert len(rows) == 2, proc.stdout


def test_the_bench_names_every_missing_file(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "bench.wrong_answers", "--graders", "matcher,nope", "--locomo",
         str(tmp_path / "a.json"), "--longmemeval", str(tmp_path / "b.json")],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    for name in ("nope", "a.json", "b.json"):
        assert name in proc.stdout


def test_the_goal_is_judged_on_the_intervals_not_the_point_estimates() -> None:
    from bench.wrong_answers import _share, goal_met

    assert goal_met([0.0] * 4000, [1.0] * 2000) == "yes"
    # 0 of 12 wrong accepted: the interval reaches 24%, so the 5% goal is not shown.
    assert goal_met([0.0] * 12, [1.0] * 12).startswith("not shown")
    assert "point estimates meet" in goal_met([0.0] * 12, [1.0] * 12)
    assert goal_met([1.0] * 6 + [0.0] * 6, [1.0] * 12).startswith("no (wrong ≥ ")
    assert goal_met([0.0] * 400, [0.0] * 300 + [1.0] * 100) == "no (right ≤ 29%)"
    assert goal_met([], [1.0]) == "-"
    assert _share([1.0, 0.0, 0.0, 0.0], interval=True) == "25% (1/4) [5%, 70%]"
    assert _share([1.0] * 20 + [0.0] * 4212, interval=True) == "0.5% (20/4232) [0.3%, 0.7%]"


def test_judge_verdicts_of_a_stopped_run_are_counted(tmp_path: Path) -> None:
    from bench.wrong_answers import _resume, write_judge_local

    raw = tmp_path / "judge-local.raw.jsonl"
    raw.write_text("".join(json.dumps(r) + "\n" for r in (
        {"id": "a#vague", "grade": 1.0}, {"id": "b#gold", "grade": 0.5},
        {"id": "c#hedge", "grade": 0.0}, {"id": "d#gold", "grade": None})))
    out = tmp_path / "judge-local.jsonl"
    write_judge_local(raw, out)
    assert _resume(out) == {"a#vague": 1.0, "b#gold": 1.0, "c#hedge": 0.0, "d#gold": None}


def test_a_grade_of_an_answer_worded_otherwise_is_not_counted() -> None:
    from bench.wrong_answers import answer_key, table

    now = BuiltAnswer("longmemeval/q#specific", "longmemeval/q", "specific", "It was 6 days ago.")
    before = BuiltAnswer(now.id, now.question_id, now.kind,
                         "It was 6 days ago. 18 days (including the last day) is also acceptable.")
    right = BuiltAnswer("longmemeval/q#gold", "longmemeval/q", "gold", "17 days ago.")
    assert answer_key(now) != answer_key(before) and answer_key(now).startswith(now.id + "~")
    graded = {"judge-local": {answer_key(before): 1.0, answer_key(right): 1.0}}
    row = next(line for line in table([now, right], graded).splitlines()
               if line.startswith("| longmemeval | judge-local"))
    assert "(0/0)" not in row and "- |" in row and "100% (1/1)" in row, row
    graded["judge-local"][answer_key(now)] = 0.0
    row = next(line for line in table([now, right], graded).splitlines()
               if line.startswith("| longmemeval | judge-local"))
    assert "0% (0/1)" in row, row


def test_a_lengthened_answer_pastes_turns_that_do_not_state_the_gold() -> None:
    """``--long`` reads each answer past the offline grader's length with turns of its own
    conversation; a turn stating the gold is never pasted (a wrong answer stays wrong), the
    answer itself comes first, and the same answer is lengthened the same way every time."""
    from bench.wrong_answers import lengthened
    from lens.scoring.grading.offline_grader import LONG_ANSWER_CHARS

    turns = [f"Caroline: we talked about the weather on day {n} and the garden" for n in range(60)]
    for n in range(0, 60, 5):  # wherever the pasting starts, it meets some of these
        turns[n] = "Caroline: I went to the LGBTQ support group on 7 May 2023."
    wrong = next(a for a in build(QUESTIONS[0], QUESTIONS) if a.kind == "specific")
    long = lengthened(wrong, "7 May 2023", turns)
    assert long.answer.startswith(wrong.answer + "\n\nWhat the conversations say:")
    assert len(long.answer) >= LONG_ANSWER_CHARS
    assert "7 May 2023" not in long.answer
    assert not match_fact("7 May 2023", AnswerText(long.answer)).matched
    assert (long.kind, long.question_id) == (wrong.kind, wrong.question_id)
    assert long.id == wrong.id + "+long"
    assert lengthened(wrong, "7 May 2023", turns) == long


def test_the_bench_reads_lengthened_answers_from_real_conversations(tmp_path: Path) -> None:
    locomo = require_beside("thirdparty", "zep-locomo", "locomo.json", what="LoCoMo's data")
    lme = require_beside("thirdparty", "longmemeval", "longmemeval_oracle.json",
                         what="LongMemEval's oracle set")
    from bench.wrong_answers import (
        load_locomo,
        load_longmemeval,
        locomo_turns,
        longmemeval_turns,
    )
    from lens.scoring.grading.offline_grader import LONG_ANSWER_CHARS

    conv = json.loads(locomo.read_text(encoding="utf-8"))[:1]
    small = tmp_path / "locomo.json"
    small.write_text(json.dumps(conv))
    turns = locomo_turns(small)[conv[0]["sample_id"]]
    assert len(turns) > 100 and all(": " in t for t in turns)
    lme_turns = longmemeval_turns(lme)
    items = {f"longmemeval/{i['question_id']}": i
             for i in json.loads(lme.read_text(encoding="utf-8"))}
    # Evidence turns are left out: none of a question's pasted turns is one LongMemEval marks.
    some = next(iter(lme_turns))
    evidence = [t["content"] for s in items[some]["haystack_sessions"] for t in s
                if t.get("has_answer")]
    assert evidence and not any(e[:100] in t for e in evidence for t in lme_turns[some])
    from bench.wrong_answers import lengthened

    for q in load_locomo(small)[:20] + load_longmemeval(lme)[:20]:
        pool = turns if q.source == "locomo" else lme_turns[q.id]
        for a in build(q, load_locomo(small) if q.source == "locomo" else [q]):
            if a.right:
                continue
            long = lengthened(a, q.gold, pool)
            assert len(long.answer) >= LONG_ANSWER_CHARS, (q.id, len(long.answer))
