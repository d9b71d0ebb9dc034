"""The MemoryAgentBench and LongMemEval readers on real files beside the project (skipped without
them): MemoryAgentBench predictions as tfatykhov/nous-memoryAgentBench publishes them, and a
LongMemEval evaluation log joined with LongMemEval's own (oracle sample) dataset file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.beside import require_beside
from tests.support.cli import Lens, cli_runner


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def test_memoryagentbench_predictions(lens: Lens) -> None:
    root = require_beside("thirdparty", "mab-predictions", "reports", "judge_regrade",
                          what="tfatykhov/nous-memoryAgentBench's reports")
    path = root / "judge4o_results_longmemeval_s__replay_full.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    correct = sum(bool(r["correct"]) for r in rows)
    r = lens("claims", "check", str(path), "--reader", "mab", "--no-leniency", "--out", "out")
    assert r.returncode == 0, r.stderr
    assert f"{100 * correct / len(rows):.2f}% ({correct} of {len(rows)})" in r.stdout
    # Not LoCoMo: F1 is shown as a plain token overlap, not as the benchmark's metric.
    assert "| token F1 (mean F1 x 100) |" in r.stdout and "LoCoMo F1" not in r.stdout


def test_a_longmemeval_log_joined_with_the_dataset(lens: Lens, tmp_path: Path) -> None:
    sample = require_beside("shared", "longmemeval-sample", "longmemeval_oracle_sample.json",
                            what="the LongMemEval oracle sample")
    questions = json.loads(sample.read_text())[:20]
    # evaluate_qa.py's log: the hypothesis file's lines with the judge's autoeval_label added.
    log = [{"question_id": q["question_id"],
            "hypothesis": str(q["answer"]) if n % 3 else "I don't know.",
            "autoeval_label": {"model": "gpt-4o-2024-08-06", "label": bool(n % 3)}}
           for n, q in enumerate(questions)]
    (tmp_path / "hyp.jsonl.eval-results-gpt-4o").write_text(
        "".join(json.dumps(x) + "\n" for x in log))
    r = lens("claims", "check", "hyp.jsonl.eval-results-gpt-4o", str(sample), "--reader",
             "longmemeval", "--no-leniency")
    assert r.returncode == 0, r.stderr
    correct = sum(x["autoeval_label"]["label"] for x in log)
    assert f"{100 * correct / 20:.2f}% ({correct} of 20)" in r.stdout
    types = {q["question_type"] for q in questions}
    assert all(f"| {t} |" in r.stdout for t in types)
    missing = lens("claims", "check", "hyp.jsonl.eval-results-gpt-4o", "--reader",
                   "longmemeval")
    assert missing.returncode == 2 and "needs two files" in missing.stderr
