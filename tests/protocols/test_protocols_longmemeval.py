"""The LongMemEval protocol on a hand-built LongMemEval file: the judge prompt of each question
type, abstention recognised by ``_abs``, and accuracy per type, task-averaged, overall and on
abstention questions, checked against values worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lens.scoring.scorer import score_run_sync
from tests.protocols.builders import (
    LME_DONT_KNOW,
    LME_FAITHFUL,
    PolicyJudge,
    imported,
    lme_verdict,
    stored_run,
)


def _score(tmp_path: Path) -> tuple[PolicyJudge, object]:
    ds = imported(tmp_path, "longmemeval")
    run = stored_run(tmp_path, ds, {"faithful": LME_FAITHFUL, "dont_know": LME_DONT_KNOW})
    judge = PolicyJudge("gpt-4o-2024-08-06", lme_verdict)
    return judge, score_run_sync(run, judge=judge, protocol="longmemeval")


def test_each_type_gets_its_prompt_sent_as_the_script_sends_it(tmp_path: Path) -> None:
    judge, _ = _score(tmp_path)
    prompts = {}
    for r in judge.requests:
        assert r.max_tokens == 10 and r.temperature == 0.0 and len(r.messages) == 1
        q = r.messages[0].content.split("Question: ", 1)[1].split("\n", 1)[0]
        prompts[q] = r.messages[0].content
    assert "off-by-one" in prompts["How many days between my trips?"]
    assert "updated answer" in prompts["Where do I work now?"]
    assert "Rubric: The user prefers" in prompts["Suggest a dinner for me."]
    # The _abs question gets the abstention prompt, with the explanation as its gold.
    dentist = prompts["How often did I visit the dentist?"]
    assert "unanswerable" in dentist and "Explanation: You did not mention" in dentist
    assert "off-by-one" not in prompts["How many bikes do I have?"]


def test_accuracy_by_type_task_averaged_overall_and_abstention_by_hand(tmp_path: Path) -> None:
    _, scores = _score(tmp_path)
    # Faithful arm: u1 yes, p1 yes, a1 no (wrong tent), m1 yes, t1 yes (19 for 18: off by
    # one is tolerated), k1 no (old employer), m2_abs yes.
    faithful = scores.aggregates["adapter"]["faithful"]
    assert faithful["longmemeval_accuracy"] == pytest.approx(5 / 7)
    # Types: ssu 1, ssp 1, ssa 0, ms (m1, m2_abs) 1, tr 1, ku 0 -> 4/6
    assert faithful["longmemeval_task_averaged"] == pytest.approx(4 / 6)
    assert faithful["longmemeval_abstention_accuracy"] == 1.0
    table = scores.aggregates["adapter/question_type"]
    assert [k.split("|")[1] for k in table if k.startswith("faithful|")] == [
        "single-session-user", "single-session-preference", "single-session-assistant",
        "multi-session", "temporal-reasoning", "knowledge-update"]
    assert table["faithful|multi-session"]["n_questions"] == 2
    assert table["faithful|knowledge-update"]["longmemeval_accuracy"] == 0.0
    assert scores.condition["settings"]["protocol"]["name"] == "longmemeval"
    # A scripted judge is not the published one, and the notes say so.
    assert any("openai/gpt-4o-2024-08-06; this scoring used scripted/gpt-4o-2024-08-06" in n
               for n in scores.notes)


def test_saying_i_dont_know_everywhere_wins_abstention_and_loses_overall(
        tmp_path: Path) -> None:
    _, scores = _score(tmp_path)
    gamed, faithful = (scores.aggregates["adapter"][a] for a in ("dont_know", "faithful"))
    assert gamed["longmemeval_abstention_accuracy"] == 1.0
    assert gamed["longmemeval_accuracy"] == pytest.approx(1 / 7)
    assert gamed["longmemeval_task_averaged"] == pytest.approx(0.5 / 6)
    assert gamed["longmemeval_accuracy"] < faithful["longmemeval_accuracy"]
    assert gamed["longmemeval_task_averaged"] < faithful["longmemeval_task_averaged"]


def test_a_failed_judge_call_leaves_the_metric_unknown(tmp_path: Path) -> None:
    from lens.models.base import ModelError

    def flaky(prompt: str) -> str:
        if "bikes" in prompt:
            raise ModelError("HTTP 503 after retries", status=503)
        return lme_verdict(prompt)

    ds = imported(tmp_path, "longmemeval")
    run = stored_run(tmp_path, ds, {"faithful": LME_FAITHFUL})
    scores = score_run_sync(run, judge=PolicyJudge("gpt-4o-2024-08-06", flaky),
                            protocol="longmemeval")
    row = next(q for q in scores.questions if q.question_id == "m1")
    assert row.metrics["longmemeval_accuracy"] is None
    assert "failed" in row.detail["longmemeval_accuracy"]["reason"]
    # The other six: u1, p1, m2_abs, t1 right; a1, k1 wrong.
    assert scores.aggregates["adapter"]["faithful"]["longmemeval_accuracy"] == pytest.approx(
        4 / 6)


def test_errored_question_counts_as_wrong_without_a_judge_call(tmp_path: Path) -> None:
    from tests.scoring.scoring_fixtures import build_run, record

    ds = imported(tmp_path, "longmemeval")
    data = json.loads(ds.read_text())
    records = [record(q["question_id"], text, adapter="faithful", scope=q["scope_id"],
                      checkpoint=q["checkpoint_after"],
                      status="error" if q["question_id"] == "u1" else "answered")
               for q, text in zip(data["questions"], LME_FAITHFUL, strict=True)]
    run = build_run(tmp_path / "run", ds, records)
    judge = PolicyJudge("gpt-4o-2024-08-06", lme_verdict)
    scores = score_run_sync(run, judge=judge, protocol="longmemeval")
    row = next(q for q in scores.questions if q.question_id == "u1")
    assert row.metrics["longmemeval_accuracy"] == 0.0
    assert len(judge.requests) == 6
    assert any("errored" in n for n in scores.notes)
    assert json.loads((run / "scores.json").read_text())["settings"]["protocol"]["version"] == 1
