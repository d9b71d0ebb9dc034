"""A real run (scripted agent over SQLite FTS) scored as ``lens run`` would, then re-scored by
``lens score``: same numbers, no new judge call."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import yaml
from scoring_fixtures import write_dataset

from lens.commands.cli import main
from lens.data.config import load_config
from lens.flow.pipeline import execute
from lens.scoring import SCORES_FILE, score_for_config
from lens.scoring.foundations.types import RunScores


def test_run_then_score_then_rescore(tmp_path: Path, capsys) -> None:
    ds = write_dataset(tmp_path / "ds.json")
    judge = tmp_path / "judge_a.yaml"
    judge.write_text(yaml.safe_dump([{"text": '{"verdict": "A"}'}]), encoding="utf-8")
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "e2e", "dataset": {"path": str(ds)}, "adapters": [{"name": "sqlite_fts"}],
        "agent": {"model": "scripted/policy"}, "judge": {"model": f"scripted/{judge}"},
        "out_dir": str(tmp_path / "runs"), "cache": {"enabled": False},
        # Writing reports imports scenario modules that register prompt templates, which would
        # change the prompts hash between the run and its resume within this one process.
        "report": False,
    }), encoding="utf-8")
    outcome = execute(cfg)
    run_dir = outcome.run_dir
    # `lens run` scored at its end, labelled as a finished run.
    by_run = (run_dir / SCORES_FILE).read_bytes()
    assert not any("status is" in n for n in RunScores.model_validate_json(by_run).notes)
    config = load_config(cfg)
    scores = anyio.run(score_for_config, run_dir, config)
    assert scores is not None
    assert (run_dir / SCORES_FILE).read_bytes() == by_run
    assert len(scores.questions) == 4
    assert all(q.status == "answered" for q in scores.questions)
    # The scripted policy cites only what it retrieved; when it finds nothing it cites nothing.
    for q in scores.questions:
        cited = q.detail["evidence_grounding"]["cited"]
        assert q.metrics["evidence_grounding"] == (1.0 if cited else 0.0)
    assert {q.detail["evidence_grounding"]["cited"] > 0 for q in scores.questions} == {
        True, False}
    assert scores.judge.disagreement_rate == 1.0
    assert scores.aggregates["adapter"]["sqlite_fts"]["longitudinal_advantage"] == 0.0
    first = (run_dir / SCORES_FILE).read_bytes()

    # Judge verdicts in the events do not disturb a resume of the finished run.
    events = [json.loads(x) for x in (run_dir / "events.jsonl").read_text().splitlines()]
    assert any(e["kind"] == "judge_verdict" for e in events)
    again = execute(cfg, resume=run_dir)
    assert again.summary.answered == 0 and again.summary.skipped == 4
    assert (run_dir / SCORES_FILE).read_bytes() == first

    assert main(["score", str(run_dir)]) == 0
    assert "(0 new call(s)" in capsys.readouterr().out
    assert (run_dir / SCORES_FILE).read_bytes() == first
    stored = RunScores.model_validate_json(first)
    assert stored.judge.model == f"scripted/{judge}"


def test_scoring_disabled_in_config(tmp_path: Path) -> None:
    ds = write_dataset(tmp_path / "ds.json")
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "off", "dataset": {"path": str(ds)}, "adapters": [{"name": "null"}],
        "agent": {"model": "scripted/policy"}, "out_dir": str(tmp_path / "runs"),
        "scoring": {"enabled": False},
    }), encoding="utf-8")
    outcome = execute(cfg)
    assert anyio.run(score_for_config, outcome.run_dir, load_config(cfg)) is None
    assert not (outcome.run_dir / SCORES_FILE).exists()


def test_published_scope_scored_end_to_end(tmp_path: Path, shared_datasets: Path) -> None:
    """Scope 01 of the published LENS data, answered by the scripted policy over SQLite FTS and
    judged by a position-A judge: every invariant of the scores holds on real data."""
    judge = tmp_path / "judge_a.yaml"
    judge.write_text(yaml.safe_dump([{"text": '{"verdict": "A"}'}]), encoding="utf-8")
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "scope01", "dataset": {"path": str(shared_datasets /
                                                   "scope_01_with_distractors.json")},
        "adapters": [{"name": "sqlite_fts"}], "agent": {"model": "scripted/policy"},
        "judge": {"model": f"scripted/{judge}"}, "out_dir": str(tmp_path / "runs"),
        "cache": {"enabled": False}, "report": False,
    }), encoding="utf-8")
    run_dir = execute(cfg).run_dir
    scores = RunScores.model_validate_json((run_dir / SCORES_FILE).read_text())
    assert len(scores.questions) == 24
    for q in scores.questions:
        assert q.status == "answered"
        for name, value in q.metrics.items():
            if value is not None and name != "longitudinal_advantage":
                assert 0.0 <= value <= 1.0, (q.question_id, name, value)
        assert q.metrics["answer_quality"] == 0.5  # position-A judge: ties only
        assert q.metrics["composite"] is not None
        if q.question_type == "null_hypothesis":
            assert q.metrics["fact_recall"] is None
        assert (q.metrics["action_quality"] is None) == (q.question_type !=
                                                         "action_recommendation")
    agg = scores.aggregates["adapter"]["sqlite_fts"]
    assert agg["n_questions"] == 24.0
    assert agg["longitudinal_advantage"] == 0.0
    assert scores.judge.disagreement_rate == 1.0
    assert any("uses answer_quality on both sides" in n for n in scores.notes)
