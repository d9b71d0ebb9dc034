"""fact_recall is one rule (``lens.scoring.measures.fact_recall.fact_recall_of``) over a question's
per-item grades, whoever gave them: unknown when a grade is missing (never 0), 0 when the
conclusion is contradicted or two-way, else the mean over the items (the conclusion's points
only when backed) times the stuffing factor. The matcher, the judge and the offline grader
each build the inputs and call it; ``lens score`` writes what it gives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from scoring_fixtures import SCOPE, build_run, dataset_dict, ep, record, write_dataset

import lens.scoring.metrics as registry
from lens.commands.cli import main
from lens.scoring import SCORES_FILE
from lens.scoring.foundations.types import QuestionScores, RunScores
from lens.scoring.grading.fact_credit import apply_judge_grades, apply_offline
from lens.scoring.grading.offline_grader import FactGrade
from lens.scoring.judging.judge import Verdict, fact_grade_task
from lens.scoring.measures.fact_recall import ConclusionItem, FactCredit, fact_recall_of
from lens.scoring.text.conclusion import Status, conclusion_as_fact

STATED = ConclusionItem("stated", 1.0, claim_stated=False, cites_evidence=True)


# -- the rule ------------------------------------------------------------------------------

def test_the_spec_names_the_rule() -> None:
    spec = registry.get_metric("fact_recall")
    assert spec is not None and spec.from_grades is fact_recall_of and spec.fact_graded


def test_the_mean_of_the_items() -> None:
    assert fact_recall_of(FactCredit((1.0, 0.5, 0.0, 0.0))) == 0.375


@pytest.mark.parametrize("credit", [
    FactCredit(()),
    FactCredit((1.0, None)),
    FactCredit((None,)),
    FactCredit((1.0,), ConclusionItem("stated", None)),
    # Missing grades stay unknown even when the conclusion would void the facts.
    FactCredit((None, 1.0), ConclusionItem("contradicted", 0.0)),
])
def test_ungraded_is_unknown_never_zero(credit: FactCredit) -> None:
    assert fact_recall_of(credit) is None


def test_stuffing_discounts_the_mean() -> None:
    assert fact_recall_of(FactCredit((1.0, 0.0), stuffing=0.5)) == 0.25
    # With the conclusion's item in the mean, then discounted.
    assert fact_recall_of(FactCredit((1.0, 0.0), STATED, stuffing=0.5)) == pytest.approx(1 / 3)


@pytest.mark.parametrize("status", ["contradicted", "both"])
def test_a_contradicted_or_two_way_conclusion_voids_every_item(status: Status) -> None:
    credit = FactCredit((1.0, 1.0), ConclusionItem(status, 1.0, True, True))
    assert fact_recall_of(credit) == 0.0
    assert credit.voided and credit.void_reason == f"conclusion {status}: no fact credit"


def test_the_conclusion_earns_its_points_only_when_backed() -> None:
    # Backed by a credited key fact: 2 of 2 items.
    assert fact_recall_of(FactCredit((1.0,), STATED)) == 1.0
    # No key fact credited and no claim stated: the bare verdict earns nothing.
    unbacked = FactCredit((0.0,), STATED)
    assert not unbacked.backed and fact_recall_of(unbacked) == 0.0
    # Its own claim backs it.
    claim = FactCredit((0.0,), ConclusionItem("stated", 1.0, claim_stated=True))
    assert claim.backed and fact_recall_of(claim) == 0.5
    # Citing no record it received: never backed, whatever it states.
    uncited = FactCredit((1.0,), ConclusionItem("stated", 1.0, True, cites_evidence=False))
    assert not uncited.backed and fact_recall_of(uncited) == 0.5
    # No key facts: the conclusion alone, backed when it cites a record.
    assert fact_recall_of(FactCredit((), STATED)) == 1.0
    # An absent conclusion is an item lost, not a void.
    assert fact_recall_of(FactCredit((1.0,), ConclusionItem("absent", 0.0))) == 0.5
    # A judge's partial grade of the conclusion counts half.
    assert fact_recall_of(FactCredit((1.0,), ConclusionItem("stated", 0.5))) == 0.75


def test_the_matchers_check_as_an_item() -> None:
    check = {"conclusion": "no", "status": "absent", "verdicts": [], "claim_stated": False,
             "backed": False, "cites_evidence": False}
    assert ConclusionItem.from_check(check) == ConclusionItem("absent", 0.0, False, False)
    assert ConclusionItem.from_check({**check, "status": "stated"}).points == 1.0


# -- the graders build the inputs and call it ------------------------------------------------

FACTS = ["auth p99 latency: 531 ms", "the cache TTL cut caused the rise"]
CONCLUSION = "yes: the cache TTL cut caused the rise"


def _row(stuffing: float, status: str = "stated") -> QuestionScores:
    detail: dict[str, Any] = {
        "facts": [{"fact": FACTS[0], "matched": True, "reason": "stated"},
                  {"fact": FACTS[1], "matched": False, "reason": "absent"}],
        "stated": 1, "stuffing_factor": stuffing,
        "conclusion": {"conclusion": CONCLUSION, "status": status, "verdicts": ["yes"],
                       "claim_stated": False, "backed": True, "cites_evidence": True}}
    return QuestionScores(key="a|s|0|q", unit_key="a|s|0", adapter="a", scope_id="s", repeat=0,
                          question_id="q", question_type="negative", checkpoint=1,
                          status="answered", metrics={"fact_recall": 0.5},
                          detail={"fact_recall": detail})


def _judge(row: QuestionScores, grades: dict[str, str | None]) -> None:
    items = [*FACTS, conclusion_as_fact(CONCLUSION)]
    tasks = {f: fact_grade_task("q?", f, "answer") for f in items}
    verdicts = {t.key("m"): Verdict(value=grades.get(f, "present") or "invalid", raw="r")
                for f, t in tasks.items()}
    apply_judge_grades(row, tasks, verdicts, "m", "judge")


def test_the_judges_grades_under_the_rule() -> None:
    row = _row(0.5)
    _judge(row, {FACTS[1]: "partial"})
    # (1 + 0.5 + 1) / 3 items, halved by the matcher's stuffing factor.
    assert row.metrics["fact_recall"] == pytest.approx(2.5 / 3 * 0.5)
    detail = row.detail["fact_recall"]
    assert detail["stuffing_factor"] == 0.5 and detail["conclusion"]["status"] == "stated"
    reversed_ = _row(1.0, "contradicted")
    _judge(reversed_, {})
    assert reversed_.metrics["fact_recall"] == 0.0
    assert reversed_.detail["fact_recall"]["reason"] == "conclusion contradicted: no fact credit"
    assert "stuffing_factor" not in reversed_.detail["fact_recall"]
    # An unreadable grade leaves it unknown, even under a reversed conclusion.
    unread = _row(1.0, "contradicted")
    _judge(unread, {FACTS[0]: "maybe"})
    assert unread.metrics["fact_recall"] is None
    assert "could not be read" in unread.detail["fact_recall"]["reason"]


def test_the_judges_unbacked_conclusion_shows_no_points() -> None:
    row = _row(1.0)
    _judge(row, {FACTS[0]: "absent", FACTS[1]: "absent"})
    assert row.metrics["fact_recall"] == 0.0
    conclusion_row = row.detail["fact_recall"]["facts"][-1]
    assert conclusion_row["points"] == 0.0 and conclusion_row["unbacked"]


def test_the_offline_grades_under_the_rule() -> None:
    row = _row(0.5)
    apply_offline(row, {FACTS[0]: FactGrade(1.0, "matcher"), FACTS[1]: FactGrade(0.0, "model")},
                  {"model": "m"})
    # The fact, not the sentence, and the matcher's backed conclusion: 2 of 3, halved.
    assert row.metrics["fact_recall"] == pytest.approx(2 / 3 * 0.5)
    assert row.detail["fact_recall"]["matcher_recall"] == 0.5
    failed = _row(1.0)
    apply_offline(failed, {FACTS[0]: FactGrade(None, "error", reason="down"),
                           FACTS[1]: FactGrade(1.0, "model")}, {})
    assert failed.metrics["fact_recall"] is None


# -- through lens score --------------------------------------------------------------------

Q1, Q4 = f"{SCOPE}_q01_longitudinal", f"{SCOPE}_q04_negative"


def _credit_of(detail: dict[str, Any]) -> FactCredit:
    """The FactCredit a scores.json detail records (the matcher's or the judge's)."""
    check = detail.get("conclusion")
    rows = detail["facts"]
    if "grader" not in detail:
        facts = tuple(1.0 if f["matched"] else 0.0 for f in rows)
        item = ConclusionItem.from_check(check) if check else None
        return FactCredit(facts, item, float(detail.get("stuffing_factor", 1.0)))
    last = rows[-1] if check else None
    facts = tuple(r["points"] for r in (rows[:-1] if check else rows))
    item = None
    if check:
        assert last is not None
        item = ConclusionItem(check["status"], last["points"], check["claim_stated"],
                              check["cites_evidence"])
    return FactCredit(facts, item, float(detail.get("stuffing_factor", 1.0)))


def test_lens_score_writes_the_rules_value(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    data = dataset_dict()
    data["questions"][3]["ground_truth"]["conclusion"] = "no: DNS is not failing"
    ds = write_dataset(tmp_path / "ds.json", data)
    run = build_run(tmp_path / "runs", ds, [
        record(Q1, f"Geo-lookup latency increased from 200ms to 1,200ms [{ep(2)}], and the "
                   f"connection pool was exhausted [{ep(4)}].", retrieved=[ep(2), ep(4)]),
        # The opposite verdict, with the key fact stated: no fact credit.
        record(Q4, f"Yes. DNS infrastructure is not the root cause, but DNS is failing "
                   f"[{ep(9)}].", checkpoint=10, retrieved=[ep(9)]),
    ])
    judge = tmp_path / "judge.yaml"
    judge.write_text(yaml.safe_dump([{"text": '{"verdict": "A", "grade": "present", '
                                              '"reason": "r"}'}]), encoding="utf-8")
    for argv in (["--tier", "1"], ["--judge", f"scripted/{judge}", "--fact-grader", "judge"]):
        assert main(["score", str(run), *argv]) == 0, capsys.readouterr()
        scores = RunScores.model_validate_json((run / SCORES_FILE).read_text())
        by_id = {q.question_id: q for q in scores.questions}
        assert by_id[Q1].metrics["fact_recall"] == 1.0
        q4 = by_id[Q4]
        assert q4.metrics["fact_recall"] == 0.0
        assert q4.detail["fact_recall"]["reason"] == "conclusion contradicted: no fact credit"
        for q in scores.questions:
            assert q.metrics["fact_recall"] == fact_recall_of(_credit_of(q.detail["fact_recall"]))
    assert scores.settings["fact_grader"] == "judge"
    assert by_id[Q4].detail["fact_recall"]["facts"][0]["grade"] == "present"
