"""Needs-memory certification through the real CLI with the scripted model, and scoring only
the certified subset."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from lens.runs.certification import Certification, certification_path, classify
from tests.core.helpers import make_dataset, write_json

ROOT = Path(__file__).resolve().parents[2]


def _dataset() -> dict[str, object]:
    data = make_dataset(n_episodes=4, checkpoints=(4,), questions_per_checkpoint=1)
    # Episodes shorter than the run of copied words that marks pasted text (docs/scoring.md):
    # the scripted policy's quote of one is a statement of its own, as a model's answer would be.
    for i, ep in enumerate(data["scopes"][0]["episodes"], 1):  # type: ignore[index]
        ep["text"] = f"Day report {i}: widget count {i * 10}."
    base = data["questions"][0]  # type: ignore[index]
    qs = []
    for qid, prompt, facts in (
        # Answerable from the episodes only.
        ("q_memory", "What was the widget count in day report 1?", ["widget count 10"]),
        # The model's own reply states it with no memory at all: a parametric leak.
        ("q_leak", "What was the widget count in day report 2?",
         ["could not find anything in memory"]),
        # Nothing in any episode states it.
        ("q_never", "What was the widget count in day report 2?", ["purple elephant 999"]),
        # No key facts: fact_recall cannot be computed.
        ("q_nofacts", "What was the widget count in day report 1?", []),
    ):
        q = json.loads(json.dumps(base))
        q["question_id"], q["prompt"] = qid, prompt
        q["ground_truth"]["key_facts"] = facts
        q["ground_truth"]["canonical_answer"] = (facts or ["n/a"])[0]
        qs.append(q)
    data["questions"] = qs
    return data


def _lens(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lens", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def test_classify() -> None:
    assert classify(0.0, 1.0, 0.5) == "certified"
    assert classify(0.5, 1.0, 0.5) == "parametric_leak"
    assert classify(0.6, 0.0, 0.5) == "parametric_leak"
    assert classify(0.0, 0.4, 0.5) == "unanswerable"
    assert classify(None, 1.0, 0.5) == "unknown" and classify(0.0, None, 0.5) == "unknown"


def test_certify_then_score_the_certified_subset(tmp_path: Path) -> None:
    ds = write_json(tmp_path / "small.json", _dataset())
    proc = _lens("datasets", "certify", str(ds), "--model", "scripted/policy",
                 "--runs-dir", str(tmp_path / "cert-runs"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    path = certification_path(ds)
    assert path == tmp_path / "small.certification.json" and path.is_file()
    cert = Certification.model_validate_json(path.read_text(encoding="utf-8"))
    status = {q.question_id: q.status for q in cert.questions}
    assert status == {"q_memory": "certified", "q_leak": "parametric_leak",
                      "q_never": "unanswerable", "q_nofacts": "unknown"}, cert.questions
    assert "1 of 4 question(s) certified" in proc.stdout

    cfg = tmp_path / "cfg.yaml"
    base = {"name": "sub", "dataset": {"path": str(ds)}, "adapters": [{"name": "sqlite_fts"}],
            "agent": {"model": "scripted/policy"}, "out_dir": str(tmp_path / "runs"),
            "scoring": {"subset": "certified"}}
    cfg.write_text(yaml.safe_dump(base), encoding="utf-8")
    proc = _lens("run", str(cfg), "--quiet")
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = sorted((tmp_path / "runs").glob("sub-*"))[-1]
    scores = json.loads((run / "scores.json").read_text(encoding="utf-8"))
    assert [q["question_id"] for q in scores["questions"]] == ["q_memory"]
    assert scores["settings"]["subset"] == "certified"
    report = (run / "report.md").read_text(encoding="utf-8")
    assert "1 certified question(s) scored; 3 excluded" in report
    assert "1 parametric_leak" in report and "1 unanswerable" in report


def test_missing_or_stale_certification_is_a_config_error(tmp_path: Path) -> None:
    ds = write_json(tmp_path / "small.json", _dataset())
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "sub", "dataset": {"path": str(ds)}, "adapters": [{"name": "null"}],
        "agent": {"model": "scripted/policy"}, "out_dir": str(tmp_path / "runs"),
        "scoring": {"subset": "certified"}}), encoding="utf-8")
    proc = _lens("run", str(cfg), "--quiet")
    assert proc.returncode == 2
    assert "scoring.subset" in proc.stderr and "lens datasets certify" in proc.stderr
    assert not (tmp_path / "runs").exists()
    # A certification of other content is refused too.
    cert = Certification(dataset_id="x", dataset_hash="0" * 64, model="m", threshold=0.5,
                         context_bytes=1000, created_at="", run_dir="", questions=[])
    certification_path(ds).write_text(cert.model_dump_json(), encoding="utf-8")
    proc = _lens("run", str(cfg), "--quiet")
    assert proc.returncode == 2 and "dataset_hash" in proc.stderr


@pytest.mark.parametrize("args,msg", [(["--threshold", "0"], "--threshold"),
                                      (["--context-bytes", "10"], "--context-bytes")])
def test_bad_arguments(tmp_path: Path, args: list[str], msg: str) -> None:
    ds = write_json(tmp_path / "small.json", _dataset())
    proc = _lens("datasets", "certify", str(ds), "--model", "scripted/policy", *args,
                 "--runs-dir", str(tmp_path / "r"))
    assert proc.returncode == 2 and msg in proc.stderr
