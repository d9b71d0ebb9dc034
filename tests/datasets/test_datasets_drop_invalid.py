"""A dataset whose questions are partly wrong runs without them, by ``--drop-invalid-questions``
or by an errata file's exclusions, and says so in the checklist with the count and the reason;
without either it is refused whole, with a message that names both ways. Scoring leaves out
the same questions. The published LENS scope 03 (two questions cite an episode streamed after
their checkpoint) runs that way."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.core.helpers import make_dataset, write_json
from tests.support.cli import Lens, cli_runner


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def _config(tmp_path: Path, dataset: Path, **scoring: Any) -> Path:
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "drop", "dataset": {"path": str(dataset)}, "adapters": [{"name": "sqlite_fts"}],
        "agent": {"model": "scripted/policy"}, "out_dir": "runs", "cache": {"enabled": False},
        **({"scoring": scoring} if scoring else {})}), encoding="utf-8")
    return cfg


def _bad_dataset(tmp_path: Path) -> tuple[Path, str]:
    data = make_dataset(n_episodes=4, checkpoints=(2, 4), questions_per_checkpoint=2)
    first = data["questions"][0]  # asked at checkpoint 2
    # Episodes stream by timestamp, and the helper dates the file's first episode last.
    later = data["scopes"][0]["episodes"][0]["episode_id"]
    first["ground_truth"]["required_evidence_refs"].append(later)
    return write_json(tmp_path / "ds.json", data), first["question_id"]


def _only_run(tmp_path: Path) -> Path:
    (run_dir,) = (tmp_path / "runs").iterdir()
    return run_dir


def _dropped_row(run_dir: Path) -> dict[str, Any]:
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    return next(c for c in summary["checklist"] if c["id"] == "dropped_questions")


def test_refused_whole_by_default_with_both_ways_out(tmp_path: Path, lens: Lens) -> None:
    ds, _ = _bad_dataset(tmp_path)
    res = lens("run", str(_config(tmp_path, ds)))
    assert res.returncode == 2
    assert "--drop-invalid-questions" in res.stderr and "errata" in res.stderr
    assert "after the question's checkpoint" in res.stderr
    assert not (tmp_path / "runs").exists()


def test_flag_drops_the_invalid_question_and_the_checklist_says_so(tmp_path: Path,
                                                                   lens: Lens) -> None:
    ds, qid = _bad_dataset(tmp_path)
    res = lens("run", str(_config(tmp_path, ds)), "--drop-invalid-questions")
    assert res.returncode == 0, res.stderr
    assert "questions: 3 (3 answered now" in res.stdout
    assert f"WARN  every question of the dataset asked: 1 of 4 question(s) dropped as " \
           f"invalid: {qid}: ground_truth.required_evidence_refs" in res.stdout
    run_dir = _only_run(tmp_path)
    row = _dropped_row(run_dir)
    assert row["status"] == "warn" and "after the question's checkpoint" in row["value"]
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    assert any("**WARN**" in line and "dropped as invalid" in line for line in md.splitlines())
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert [d["question_id"] for d in manifest["dataset"]["dropped"]] == [qid]
    # Re-scoring leaves out the same question (the run's dataset hash still matches).
    assert lens("score", str(run_dir), "--tier", "1").returncode == 0
    scores = json.loads((run_dir / "scores.json").read_text(encoding="utf-8"))
    assert qid not in {q["question_id"] for q in scores["questions"]}
    # Resuming needs the same question set: without the flag the dataset is refused again.
    assert lens("run", str(_config(tmp_path, ds)), "--resume", str(run_dir)).returncode == 2
    again = lens("run", str(_config(tmp_path, ds)), "--resume", str(run_dir),
                 "--drop-invalid-questions")
    assert again.returncode == 0 and "3 done before" in again.stdout


def test_errata_exclusion_drops_it_without_the_flag(tmp_path: Path, lens: Lens) -> None:
    ds, qid = _bad_dataset(tmp_path)
    errata = tmp_path / "errata.yaml"
    errata.write_text(yaml.safe_dump({"source": "our audit", "errata": [
        {"question_id": qid, "action": "exclude"}]}), encoding="utf-8")
    res = lens("run", str(_config(tmp_path, ds, errata=str(errata))), "--quiet")
    assert res.returncode == 0, res.stderr
    assert "3 answered now" in res.stdout
    run_dir = _only_run(tmp_path)
    row = _dropped_row(run_dir)
    assert row["status"] == "warn" and f"1 of 4 question(s) dropped as invalid: {qid}" \
        in row["value"]
    # The errata's note counts the question as excluded, not as an entry matching nothing.
    scores = json.loads((run_dir / "scores.json").read_text(encoding="utf-8"))
    note = next(n for n in scores["notes"] if n.startswith("gold errata"))
    assert "touched 1 of 4 question(s) (1 excluded, 0 corrected)" in note
    assert "name no question" not in note


def test_lens_scope_03_runs_with_its_two_invalid_questions_dropped(
        tmp_path: Path, lens: Lens, shared_datasets: Path) -> None:
    ds = shared_datasets / "scope_03_with_distractors.json"
    refused = lens("run", str(_config(tmp_path, ds)), "--quiet")
    assert refused.returncode == 2 and "--drop-invalid-questions" in refused.stderr
    res = lens("run", str(_config(tmp_path, ds)), "--quiet", "--drop-invalid-questions")
    assert res.returncode == 0, res.stderr
    assert "questions: 22 (22 answered now" in res.stdout
    row = _dropped_row(_only_run(tmp_path))
    assert "2 of 24 question(s) dropped as invalid" in row["value"]
    assert "cs03_q01_longitudinal" in row["value"] and "cs03_q13_paraphrase" in row["value"]
