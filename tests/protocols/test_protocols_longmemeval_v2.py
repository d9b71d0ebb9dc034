"""The LongMemEval-V2 protocol on the LongMemEval-V2 fixture (nine questions, every category but
procedure-abs, every grading function): each question graded by the function its data names,
the categories and leaderboard columns, and the LAFS gain over the released reference frontier,
checked against values worked out by hand; answering UNKNOWN, listing every letter or dumping
every phrase scores below a faithful answerer."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lens.data.importers.longmemeval_v2 import write_longmemeval_v2
from lens.runs.records import ToolCallRecord
from lens.scoring.protocols.longmemeval_v2 import (
    PREMISE_PROMPT,
    boxed_answer,
    choice_letters,
    grade,
    is_unknown,
    normalize_phrase,
    parse_label,
)
from lens.scoring.scorer import score_run_sync
from tests.protocols.builders import PolicyJudge
from tests.scoring.scoring_fixtures import build_run, record

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "datasets" / "fixtures" / "longmemeval_v2"

FAITHFUL = {
    "q-static-1": "The product page shows \\boxed{Add to Cart and Compare}",
    "q-static-2": "\\boxed{B}",
    "q-proc-1": "Open \\boxed{Content, then Pages}",
    "q-gotcha-1": "Posting again so soon is refused. \\boxed{Wait 5 minutes between posts.}",
    "q-static-abs-1": "\\boxed{There is no Wishlist button on that page.}",
    "q-static-3": "\\boxed{Incident Portal; Incident Mobile}",
    "q-dyn-abs-1": "\\boxed{PRB001 was never closed; it only moved to Assess.}",
    "q-dyn-1": "\\boxed{A and B}",
    "q-dyn-2": "\\boxed{No, it is in Assess now}",
}
# Hand-graded: static-2 (Option B. -> B), static-3 (hyphen -> space) and dyn-2 (no box: the
# whole answer) correct; gotcha-1 and dyn-abs-1 UNKNOWN; the rest wrong.
MIXED = {
    "q-static-1": "\\boxed{Add to Cart}",
    "q-static-2": "\\boxed{Option B.}",
    "q-proc-1": "\\boxed{Pages, Content}",
    "q-gotcha-1": "\\boxed{UNKNOWN}",
    "q-static-abs-1": "\\boxed{Red}",
    "q-static-3": "\\boxed{incident-mobile; incident portal}",
    "q-dyn-abs-1": "I cannot tell. \\boxed{unknown}",
    "q-dyn-1": "\\boxed{A}",
    "q-dyn-2": "No.",
}
UNKNOWNS = dict.fromkeys(FAITHFUL, "\\boxed{UNKNOWN}")
LETTERS = dict.fromkeys(FAITHFUL, "\\boxed{A B C D}")
DUMP = dict.fromkeys(FAITHFUL, "\\boxed{Add to Cart, Compare, Content, Pages, Incident Mobile, "
                     "Incident Portal, no}")


def judge_policy(prompt: str) -> str:
    """Grades from the final answer: a premise answer is right when it names the flaw of the
    reference, a gotchas answer when it says to wait."""
    final = prompt.split("The model's final answer:\n", 1)[1].split("\n\nRules:", 1)[0].lower()
    if "wrong premise" in prompt:
        ok = "no wishlist" in final or "never closed" in final
    else:
        ok = "wait" in final
    return f'```json\n{{"label": {int(ok)}, "reason": "scripted"}}\n```'


def _run(tmp_path: Path, answers: dict[str, dict[str, str]], seconds: dict[str, float]) -> Path:
    ds = tmp_path / "lme2.json"
    write_longmemeval_v2(FIX, ds)
    data = json.loads(ds.read_text())
    records = []
    for adapter, by_id in answers.items():
        for q in data["questions"]:
            r = record(q["question_id"], by_id[q["question_id"]], adapter=adapter,
                       scope=q["scope_id"], checkpoint=q["checkpoint_after"])
            # Two memory calls per question, each half of the adapter's query time.
            calls = [ToolCallRecord(name="memory_search", arguments={"query": "q"}, ok=True,
                                    latency_s=seconds[adapter] / 2) for _ in range(2)]
            records.append(r.model_copy(update={"tool_calls": calls}))
    return build_run(tmp_path / "run", ds, records)


def _score(tmp_path: Path, answers: dict[str, dict[str, str]], seconds: dict[str, float],
           judge: PolicyJudge | None = None) -> object:
    run = _run(tmp_path, answers, seconds)
    return score_run_sync(run, judge=judge or PolicyJudge("openai/gpt-5.2", judge_policy),
                          protocol="longmemeval-v2")


def test_grading_per_question_and_tables_by_hand(tmp_path: Path) -> None:
    judge = PolicyJudge("openai/gpt-5.2", judge_policy)
    scores = _score(tmp_path, {"faithful": FAITHFUL, "mixed": MIXED},
                    {"faithful": 10.0, "mixed": 0.5}, judge)
    by = {(q.adapter, q.question_id): q.metrics for q in scores.questions}
    assert all(by["faithful", qid]["lme_v2_accuracy"] == 1.0 for qid in FAITHFUL)
    mixed = {qid: by["mixed", qid]["lme_v2_accuracy"] for qid in MIXED}
    assert mixed == {"q-static-1": 0.0, "q-static-2": 1.0, "q-proc-1": 0.0, "q-gotcha-1": 0.0,
                     "q-static-abs-1": 0.0, "q-static-3": 1.0, "q-dyn-abs-1": 0.0,
                     "q-dyn-1": 0.0, "q-dyn-2": 1.0}
    assert by["mixed", "q-gotcha-1"]["lme_v2_unknown"] == 1.0
    assert by["mixed", "q-gotcha-1"]["lme_v2_answered_wrong"] == 0.0
    assert by["mixed", "q-static-abs-1"]["lme_v2_answered_wrong"] == 1.0
    # Judge calls: the three judged questions of faithful, only static-abs-1 of mixed (an
    # UNKNOWN final answer scores 0 without a call).
    assert len(judge.requests) == 4
    sent = judge.requests[0]
    assert sent.max_tokens == 2048 and sent.temperature == 0.0
    assert "Reference answer" in sent.messages[0].content

    overall = scores.aggregates["adapter"]
    f, m = overall["faithful"], overall["mixed"]
    assert f["lme_v2_accuracy"] == 1.0 and f["lme_v2_query_seconds"] == 10.0
    assert m["lme_v2_accuracy"] == pytest.approx(3 / 9)
    assert m["lme_v2_accuracy_non_premise"] == pytest.approx(3 / 7)
    assert m["lme_v2_accuracy_premise"] == 0.0
    assert m["lme_v2_accuracy_text_only"] == pytest.approx(2 / 8)  # static-2 has an image
    assert m["lme_v2_unknown_rate"] == pytest.approx(2 / 9)
    # The leaderboard's columns: static 2 of (3 static + 1 static-abs), dynamic 1 of 3.
    assert m["lme_v2_static"] == pytest.approx(2 / 4)
    assert m["lme_v2_dynamic"] == pytest.approx(1 / 3)
    assert m["lme_v2_procedure"] == 0.0 and m["lme_v2_gotchas"] == 0.0
    table = scores.aggregates["adapter/category"]
    assert table["mixed|static"]["lme_v2_accuracy"] == pytest.approx(2 / 3)
    assert table["mixed|dynamic-abs"]["lme_v2_unknown"] == 1.0
    assert "mixed|procedure-abs" not in table

    # LAFS: faithful (100 points at 10 s) raises the frontier from 10 s on:
    # [51 ln 10 + 100 ln 20] / ln 200 against the reference's
    # [51 ln 26.9 + 58.6 ln(108.3/26.9) + 74.9 ln(200/108.3)] / ln 200.
    ref = (51 * math.log(26.9) + 58.6 * math.log(108.3 / 26.9)
           + 74.9 * math.log(200 / 108.3)) / math.log(200)
    mine = (51 * math.log(10) + 100 * math.log(20)) / math.log(200)
    assert f["lme_v2_lafs"] == pytest.approx(mine)
    assert f["lme_v2_lafs_gain"] == pytest.approx(mine - ref)
    assert f["lme_v2_lafs_gain"] == pytest.approx(22.94, abs=0.01)
    # Mixed (33.3 points at 0.5 s) is fast but below the reference's fastest point: no gain.
    assert m["lme_v2_lafs_gain"] == 0.0


def test_gaming_answers_score_below_a_faithful_one(tmp_path: Path) -> None:
    scores = _score(tmp_path, {"faithful": FAITHFUL, "unknown": UNKNOWNS, "letters": LETTERS,
                               "dump": DUMP},
                    dict.fromkeys(("faithful", "unknown", "letters", "dump"), 10.0))
    acc = {a: e["lme_v2_accuracy"] for a, e in scores.aggregates["adapter"].items()}
    gain = {a: e["lme_v2_lafs_gain"] for a, e in scores.aggregates["adapter"].items()}
    assert acc["faithful"] == 1.0
    assert acc["unknown"] == 0.0
    assert acc["letters"] == 0.0
    # Naming every phrase wins the phrase matches (static-1, proc-1, static-3, dyn-2) and loses
    # both multiple choices and every judged question.
    assert acc["dump"] == pytest.approx(4 / 9)
    assert max(gain["unknown"], gain["letters"], gain["dump"]) < gain["faithful"]


def test_without_a_judge_the_judged_and_overall_figures_are_unknown(tmp_path: Path) -> None:
    run = _run(tmp_path, {"faithful": FAITHFUL}, {"faithful": 10.0})
    scores = score_run_sync(run, judge=None, protocol="longmemeval-v2")
    by = {q.question_id: q.metrics for q in scores.questions}
    assert by["q-gotcha-1"]["lme_v2_accuracy"] is None
    assert by["q-static-1"]["lme_v2_accuracy"] == 1.0
    f = scores.aggregates["adapter"]["faithful"]
    assert f["lme_v2_accuracy"] is None and f["lme_v2_lafs_gain"] is None
    assert f["lme_v2_accuracy_text_only"] is None
    assert f["lme_v2_dynamic"] is None and f["lme_v2_static"] is None
    assert any("no judge" in n for n in scores.notes)


def test_errored_answers_count_as_wrong_without_judge_calls(tmp_path: Path) -> None:
    ds = tmp_path / "lme2.json"
    write_longmemeval_v2(FIX, ds)
    data = json.loads(ds.read_text())
    records = [record(q["question_id"], "", scope=q["scope_id"], status="error",
                      checkpoint=q["checkpoint_after"]) for q in data["questions"]]
    judge = PolicyJudge("openai/gpt-5.2", judge_policy)
    scores = score_run_sync(build_run(tmp_path / "run", ds, records), judge=judge,
                            protocol="longmemeval-v2")
    assert not judge.requests
    assert all(q.metrics["lme_v2_accuracy"] == 0.0 for q in scores.questions)
    assert scores.aggregates["adapter"]["fts"]["lme_v2_accuracy"] == 0.0


@pytest.mark.parametrize("spec, final, gold, want", [
    # Phrases: every one as whole words, after normalisation; order only when asked.
    ("norm_phrase_set_match|separators=,;", "Compare and Add-to-Cart", "Add to Cart, Compare",
     True),
    ("norm_phrase_set_match|separators=,;", "Add to Cartoon", "Add to Cart", False),
    ("norm_phrase_set_match|normalize_hyphen=false", "add-to-cart", "add to cart", False),
    ("norm_phrase_set_match|lower=false", "add to cart", "Add to Cart", False),
    ("norm_phrase_set_match|separators=", "A, B", "a; b", True),
    ("norm_phrase_set_match_ordered|separators=;", "Pages then Content", "Content; Pages",
     False),
    ("norm_phrase_set_match_ordered|separators=;", "Content > Pages", "Content; Pages", True),
    ("norm_phrase_set_match", "", "No", False),
    ("norm_phrase_set_match|require_non_empty=false", "", "", True),
    # Multiple choice: filler words and dots dropped; a set compared as a set.
    ("mc_choice_match", "Choice c.", "C", True),
    ("mc_choice_match", "C because", "C", False),
    ("mc_choice_set_match", "Options B and A", "A, B", True),
    ("mc_choice_set_match", "AB", "A, B", True),
    ("mc_choice_set_match", "A, B, C", "A, B", False),
    ("mc_choice_set_match", "B because", "B", False),
])
def test_grading_functions(spec: str, final: str, gold: str, want: bool) -> None:
    assert grade(spec, final, gold) is want


def test_final_answer_unknown_and_judge_replies() -> None:
    assert boxed_answer("x \\boxed{a} y \\boxed{f(\\{b\\}) {c}} z") == "f(\\{b\\}) {c}"
    assert boxed_answer("no box here ") == "no box here"
    assert boxed_answer("empty \\boxed{ }") == "empty \\boxed{ }"
    assert is_unknown(boxed_answer("\\boxed{ Unknown }"))
    assert not is_unknown("unknown answer")
    assert normalize_phrase("Add-to_Cart, now!") == "add to cart now"
    assert choice_letters("Final answer: A and C") == ["A", "C"]
    assert [parse_label(t) for t in ('{"label": 1, "reason": "ok"}', '```json\n{"label": "0"}'
                                     '\n```', "label: 1", '{"label": true}', "no idea")] == [
        1.0, 0.0, 1.0, 1.0, None]
    assert "{question}" in PREMISE_PROMPT and "{final}" in PREMISE_PROMPT


def test_cli_import_score_with_a_scripted_judge_and_report(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def lens(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "lens", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)

    ds = tmp_path / "lme2.json"
    r = lens("datasets", "import", "--format", "longmemeval-v2",
             str(FIX / "haystacks" / "lme_v2_small.json"), "--out", str(ds))
    assert r.returncode == 0, r.stderr
    data = json.loads(ds.read_text())
    records = [record(q["question_id"], FAITHFUL[q["question_id"]], adapter="faithful",
                      scope=q["scope_id"], checkpoint=q["checkpoint_after"])
               for q in data["questions"]]
    run = build_run(tmp_path / "run", ds, records)
    # A judge that passes every premise and gotchas answer.
    (tmp_path / "judge.json").write_text(json.dumps(
        {"rules": [{"contains": "Reference answer", "text": '{"label": 1, "reason": "ok"}'}]}))
    r = lens("score", str(run), "--tier", "2", "--protocol", "longmemeval-v2", "--judge",
             "scripted/judge.json")
    assert r.returncode == 0, r.stderr
    scores = json.loads((run / "scores.json").read_text())
    f = scores["aggregates"]["adapter"]["faithful"]
    assert f["lme_v2_accuracy"] == 1.0
    # The fixture's records time no tool call: 0 s, within the window's first budget.
    assert f["lme_v2_query_seconds"] == 0.0
    assert f["lme_v2_lafs_gain"] == pytest.approx(100 - 55.7648, abs=1e-3)
    assert scores["settings"]["protocol"]["name"] == "longmemeval-v2"
    assert any("gpt-5.2" in n for n in scores["notes"])
    r = lens("report", str(run))
    assert r.returncode == 0, r.stderr
    assert "LongMemEval-V2 protocol (version 1)" in (run / "report.md").read_text()
