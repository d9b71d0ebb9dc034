"""The crude sanity check of generated data: the no-LLM baseline (search with the question,
quote the best sentences of the top hits) over SQLite FTS5 finds and cites the evidence of the
single-episode control questions, and only part of each synthesis question's. Quoting states no
fact of its own (docs/scoring.md), so its fact recall is 0 everywhere: the check reads evidence
coverage."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from lens.data.datagen.generate import ScopeSpec, dumps, generate_dataset
from lens.data.dataset import SYNTHESIS_TYPES, QuestionType

ROOT = Path(__file__).resolve().parents[2]

CONFIG = """\
name: datagen-baseline
dataset:
  path: {path}
adapters:
  - name: sqlite_fts
agent:
  model: scripted/policy
  budget:
    max_turns: 6
    max_tool_calls: 8
    max_payload_bytes: 64000
    max_agent_tokens: 100000
    max_seconds: 60
concurrency:
  units: 2
  questions: 4
"""


def test_keyword_lookup_answers_controls_but_only_part_of_synthesis_questions(
        tmp_path: Path) -> None:
    data = generate_dataset([ScopeSpec("ops", 31, 0), ScopeSpec("finance", 31, 1)], "baseline")
    (tmp_path / "data.json").write_text(dumps(data))
    (tmp_path / "run.yaml").write_text(CONFIG.format(path=tmp_path / "data.json"))
    r = subprocess.run([sys.executable, "-m", "lens", "run", str(tmp_path / "run.yaml"),
                        "--out", str(tmp_path / "runs"), "--quiet"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    scores = sorted((tmp_path / "runs").glob("*/scores.json"))
    assert len(scores) == 1, r.stdout
    rows = json.loads(scores[0].read_text())["questions"]
    assert len(rows) == 50
    coverage: dict[QuestionType, list[float]] = {QuestionType(q["question_type"]): []
                                                 for q in rows}
    for q in rows:
        value = q["metrics"]["evidence_coverage"]
        assert value is not None  # every generated question names its evidence
        coverage[QuestionType(q["question_type"])].append(value)
        # Pasted record text is no claim: keyword lookup earns no fact recall by quoting.
        assert q["metrics"]["fact_recall"] == 0.0
    control = coverage[QuestionType.NULL_HYPOTHESIS]
    synthesis = [v for t, vs in coverage.items() if t in SYNTHESIS_TYPES for v in vs]
    control_mean = sum(control) / len(control)
    synthesis_mean = sum(synthesis) / len(synthesis)
    # A control's single episode is one keyword search away; a synthesis question's evidence
    # is spread over the stream, and the top hits of one search hold only part of it.
    assert synthesis_mean < 0.6 < 0.9 <= control_mean
    assert sum(v >= 0.999 for v in synthesis) <= 0.5 * len(synthesis)
