"""The checklist's judge rows: unreadable verdicts fail above 2%; the stored calibration of the
run's judge model (under the prompts it was scored with) is shown, and a failed one fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from lens.report.checks.checklist import compare_checklist, run_checklist
from lens.report.foundations.data import RunData
from lens.report.foundations.shapes import Check
from lens.scoring.judging.calibration import Calibration, assess, save_calibration
from lens.scoring.judging.judge_prompts import judge_prompts_hash
from tests.report.runfactory import RunSpec, memory_run


def _checks(run: RunData) -> dict[str, Check]:
    return {c.id: c for c in run_checklist(run)}


def _judged(tmp_path: Path, *, verdicts: int = 1000, invalid: int = 0) -> RunData:
    run = memory_run(RunSpec())
    assert run.scores is not None
    run.scores.judge.verdicts = verdicts
    run.scores.judge.invalid = invalid
    run.scores.settings["judge_prompts"] = judge_prompts_hash()
    run.manifest["config"] = {"cache": {"path": str(tmp_path / "cache" / "models.sqlite")}}
    return run


@pytest.mark.parametrize(("invalid", "status"), [(0, "pass"), (20, "pass"), (21, "fail"),
                                                 (1000, "fail")])
def test_unreadable_verdicts_fail_above_two_percent(tmp_path: Path, invalid: int,
                                                    status: str) -> None:
    check = _checks(_judged(tmp_path, invalid=invalid))["judge_unreadable"]
    assert check.status == status
    assert f"{invalid} of 1000" in check.value


def test_no_judge_rows_without_a_judge() -> None:
    run = memory_run(RunSpec())
    assert run.scores is not None
    run.scores.judge.model = None
    ids = {c.id for c in run_checklist(run)}
    assert "judge_unreadable" not in ids and "judge_calibration" not in ids


def _calibration(**kw: object) -> Calibration:
    base: dict[str, object] = dict(
        model="scripted/judge", judge_prompts=judge_prompts_hash(), created="2026-11-23T10:00:00",
        dataset={"label": "standard.json"}, questions=40, pairs=120, verdicts=240, unreadable=0,
        failed_calls=0, unreadable_rate=0.0, accuracy=0.95,
        accuracy_by_kind={"wrong": 0.9, "stuffed": 1.0, "vague": 0.95},
        position_disagreement=0.04, position_a_rate=0.5, longer_flawed_win_rate=0.02,
        shorter_flawed_win_rate=0.03, length_bias=-0.01, status="pass", problems=[],
        usage={}, results=[])
    base.update(kw)
    cal = Calibration.model_validate(base)
    status, problems = assess(cal)
    return cal.model_copy(update={"status": status, "problems": problems})


def test_the_runs_judge_calibration_is_shown(tmp_path: Path) -> None:
    run = _judged(tmp_path)
    missing = _checks(run)["judge_calibration"]
    assert missing.status == "warn"
    assert "not calibrated" in missing.value
    assert "lens judge calibrate --judge scripted/judge" in missing.value

    folder = tmp_path / "cache" / "judge-calibrations"
    save_calibration(_calibration(), folder)
    ok = _checks(run)["judge_calibration"]
    assert ok.status == "pass"
    assert "accuracy 95%" in ok.value and "length bias -0.01" in ok.value

    biased = _calibration(accuracy=0.6, longer_flawed_win_rate=1.0,
                          shorter_flawed_win_rate=0.0, length_bias=1.0)
    assert biased.status == "fail"
    save_calibration(biased, folder)
    assert _checks(run)["judge_calibration"].status == "fail"
    assert "judge_calibration" in {c.id for c in compare_checklist([run], {})}


def test_a_calibration_of_other_judge_prompts_does_not_count(tmp_path: Path) -> None:
    run = _judged(tmp_path)
    save_calibration(_calibration(judge_prompts="0" * 16),
                     tmp_path / "cache" / "judge-calibrations")
    assert _checks(run)["judge_calibration"].status == "warn"
    # A run scored before judge prompts were recorded cannot be matched either.
    assert run.scores is not None
    del run.scores.settings["judge_prompts"]
    assert "not calibrated" in _checks(run)["judge_calibration"].value


def test_matcher_only_fact_recall_is_labelled_a_lower_bound(tmp_path: Path) -> None:
    run = _judged(tmp_path)
    assert run.scores is not None
    run.scores.settings["fact_grader"] = "matcher"
    check = _checks(run)["fact_grader"]
    assert check.status == "warn" and "lower bound" in check.value
    run.scores.settings["fact_grader"] = "judge"
    assert _checks(run)["fact_grader"].status == "pass"
