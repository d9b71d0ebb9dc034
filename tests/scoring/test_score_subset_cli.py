"""``lens score RUN_DIR --subset``: re-score a stored run on the certified questions only, or on
all of them, through the real CLI; the choice is recorded as scoring.subset is."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from lens.data.config import JudgeConfig, ScoringConfig
from lens.data.dataset_load import load_dataset
from lens.runs.certification import Certification, QuestionCertificate, certification_path
from lens.scoring.plan import plan_from_settings
from tests.core.helpers import make_dataset, write_json

ROOT = Path(__file__).resolve().parents[2]


def _lens(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lens", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("subset")
    ds = write_json(tmp / "small.json",
                    make_dataset(n_episodes=4, checkpoints=(4,), questions_per_checkpoint=3))
    cfg = tmp / "cfg.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "sub", "dataset": {"path": str(ds)}, "adapters": [{"name": "sqlite_fts"}],
        "agent": {"model": "scripted/policy"}, "out_dir": str(tmp / "runs")}), encoding="utf-8")
    proc = _lens("run", str(cfg), "--quiet")
    assert proc.returncode == 0, proc.stderr[-3000:]
    # Only s1_q02 measures memory, by this certification.
    status = {"s1_q01": "parametric_leak", "s1_q02": "certified", "s1_q03": "unanswerable"}
    cert = Certification(
        dataset_id="small", dataset_hash=load_dataset(ds).content_hash(), model="scripted/policy",
        threshold=0.5, context_bytes=1000, created_at="", run_dir="", questions=[
            QuestionCertificate(scope_id="s1", question_id=q, status=s, null_fact_recall=0.0,
                                full_context_fact_recall=1.0) for q, s in status.items()])
    certification_path(ds).write_text(cert.model_dump_json(), encoding="utf-8")
    return sorted((tmp / "runs").glob("sub-*"))[-1]


def _scores(run: Path) -> dict:
    return json.loads((run / "scores.json").read_text(encoding="utf-8"))


def test_subset_flag_changes_the_scored_set_and_the_recorded_condition(run_dir: Path) -> None:
    scored_all = _scores(run_dir)  # scored at the end of the run: every question
    assert [q["question_id"] for q in scored_all["questions"]] == ["s1_q01", "s1_q02", "s1_q03"]
    assert scored_all["settings"]["subset"] == "all"

    proc = _lens("score", str(run_dir), "--tier", "1", "--subset", "certified")
    assert proc.returncode == 0, proc.stderr[-3000:]
    certified = _scores(run_dir)
    assert [q["question_id"] for q in certified["questions"]] == ["s1_q02"]
    assert certified["settings"]["subset"] == "certified"
    assert certified["condition"]["settings"]["subset"] == "certified"
    assert certified["condition_hash"] != scored_all["condition_hash"]
    assert any("1 certified question(s) scored; 2 excluded" in n for n in certified["notes"])
    assert certified["aggregates"]["adapter"]["sqlite_fts"]["n_questions"] == 1

    proc = _lens("score", str(run_dir), "--tier", "1", "--subset", "all")
    assert proc.returncode == 0, proc.stderr[-3000:]
    again = _scores(run_dir)
    assert len(again["questions"]) == 3 and again["settings"]["subset"] == "all"
    assert not any("certified question(s) scored" in n for n in again["notes"])


def test_a_bad_subset_exits_2_with_one_message(run_dir: Path) -> None:
    before = (run_dir / "scores.json").read_bytes()
    proc = _lens("score", str(run_dir), "--subset", "memory")
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if "error" in line]
    assert len(errors) == 1
    assert "--subset" in errors[0] and "'all', 'certified'" in errors[0], proc.stderr
    assert (run_dir / "scores.json").read_bytes() == before


def test_one_plan_holds_the_scoring_settings() -> None:
    """``lens run`` and ``lens score`` both build their plan with plan_from_settings: the
    config's settings, each overridden by a flag given, in one place."""
    scoring = ScoringConfig(subset="certified", protocol="locomo", gate_threshold=0.4,
                            weights={"fact_recall": 0.5}, fact_grader="both")
    judge = JudgeConfig(model="scripted/policy", max_concurrency=3)
    client = object()
    plan = plan_from_settings(scoring, judge, None, judge=client)
    assert plan.judge is client and plan.tiers == {1, 2, 3}
    assert plan.weights["fact_recall"] == 0.5 and plan.gate_threshold == 0.4
    assert (plan.fact_grader, plan.judge_concurrency(), plan.protocol, plan.subset,
            plan.errata, plan.target) == ("both", 3, "locomo", "certified", None, "scores")
    plan = plan_from_settings(scoring, judge, None, judge=client,
                              subset="all", protocol="lens", concurrency=7, fact_grader="judge")
    assert (plan.subset, plan.protocol, plan.judge_concurrency(), plan.fact_grader) == (
        "all", "lens", 7, "judge")
    # Tier 1 calls no model: no judge is kept and the matcher decides.
    plan = plan_from_settings(scoring, judge, None, tiers={1})
    assert plan.judge is None and plan.judge_config is None and plan.fact_grader == "matcher"
    with pytest.raises(ValidationError):
        plan.subset = "certified"  # frozen: built once, then only read
