"""MemoryAgentBench's metrics on real predictions, lens against the official evaluation code run
from a copy of the official repository: exact match, substring exact match, token F1 and EventQA
recall per prediction, the LongMemEval judge's prompt (with the official prompt file) per
question, the summary judge's inputs, and the summary judge's reply reading (``parse_json``)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bench.mab_parity import Official, compare, lme_items, load_predictions
from lens.data.importers.memoryagentbench import write_memoryagentbench
from lens.scoring.protocols.memoryagentbench import judge_json
from tests.protocols.builders import stored_run
from tests.protocols.test_protocols_memoryagentbench import FAITHFUL, MAB
from tests.support.beside import require_beside

ROOT = Path(__file__).resolve().parents[2]


def _official() -> Official:
    return Official(require_beside("thirdparty", "memoryagentbench-code",
                                   what="the official MemoryAgentBench code "
                                        "(HUST-AI-HYZ/MemoryAgentBench)"))


def test_real_predictions_score_as_the_official_code() -> None:
    official = _official()
    folder = require_beside("thirdparty", "mab-predictions",
                            what="real MemoryAgentBench predictions "
                                 "(tfatykhov/nous-memoryAgentBench reports/)")
    oracle = require_beside("thirdparty", "longmemeval", "longmemeval_oracle.json",
                            what="LongMemEval's oracle file (question types of longmemeval_s*)")
    res = compare(load_predictions(folder), official, lme_items(oracle))
    counts = res["counts"]
    assert res["differ"] == []
    # Every distinct prediction of the reports (the recommendation family has none).
    assert counts["predictions"] == counts["metrics_equal"] == 2459
    assert (counts["family:eventqa"], counts["family:factconsolidation"],
            counts["family:icl"], counts["family:ruler_qa"], counts["family:detective_qa"],
            counts["family:longmemeval"], counts["family:infbench_sum"]) == (
        312, 1303, 505, 202, 68, 68, 1)
    # ICL answers written "label: N" score as the official code scores "N", the model's
    # answer after the official prompt's "label:" primer.
    assert counts["icl_with_primer"] == 266
    assert counts["judge_prompt_equal"] == counts["longmemeval"] == 68
    assert counts["summary_inputs_equal"] == 1


REPLIES = [
    '{"fluency": 1}',
    'Reasoning. {"supported_key_points": [1, 3], "recall": 2}',
    '{"recall": 3} and then {not json}',
    '```json\n{"precision": 4, "sentence_count": 9}\n```\ntrailing {x}',
    '{"precision": 1, "sentence_count": 2} {"precision": 5, "sentence_count": 6}',
    "no object at all",
    "```json\n[1, 2]\n```",
    '{"a": {"b": 1}}',
    "",
]


@pytest.mark.parametrize("reply", REPLIES)
def test_summary_replies_read_as_the_official_parse_json(reply: str) -> None:
    assert judge_json(reply) == _official().parse_json(reply)


def _lens(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LENS_CACHE_DIR": str(cwd / "cache")}
    return subprocess.run([sys.executable, "-m", "lens", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env=env)


def test_lens_score_with_the_official_longmem_prompt_file(tmp_path: Path) -> None:
    """Through the CLI: the official ``longmem_qa_evaluate.py`` as the MemoryAgentBench judge's
    prompt file, its hash in the condition; a summary whose judge reply does not parse is
    unknown and counted in the scores and the notes."""
    official = _official().longmem
    ds = tmp_path / "mab.json"
    write_memoryagentbench(MAB, ds, chunk_tokens=64)
    run = stored_run(tmp_path, ds, {"faithful": FAITHFUL})
    # Yes only to the official wording shown the whole answer list; anything else "no" (which
    # no summary call can parse).
    (tmp_path / "judge.yaml").write_text(yaml.safe_dump(
        {"rules": [{"contains": "Please answer yes", "text": "yes"}], "default": "no"}),
        encoding="utf-8")
    r = _lens(tmp_path, "score", str(run), "--tier", "2", "--protocol", "memoryagentbench",
              "--judge", "scripted/judge.yaml", "--judge-prompt-file", str(official))
    assert r.returncode == 0, r.stderr
    scores = json.loads((run / "scores.json").read_text(encoding="utf-8"))
    table = scores["aggregates"]["adapter/sub-dataset"]
    assert table["faithful|longmemeval_s*"]["mab_accuracy"] == 1.0
    assert table["faithful|infbench_sum_eng_shots2"]["mab_accuracy"] is None
    assert scores["aggregates"]["adapter"]["faithful"]["mab_infbench_sum_unscored"] == 1.0
    assert any("infbench_sum summaries have no judged F1" in n for n in scores["notes"])
    assert scores["settings"]["protocol"]["prompt_file"] == {
        "name": "longmem_qa_evaluate.py",
        "sha256": hashlib.sha256(official.read_bytes()).hexdigest()}
    section = json.loads((run / "sections" / "protocol.json").read_text(encoding="utf-8"))
    assert "mab_infbench_sum_unscored" in section["tables"][0]["columns"]
