"""``lens judge calibrate`` against the real local model (llama-cpp-python). Slow: six judge
calls of a 1.5B model on CPU."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lens.scoring.judging.calibration import Calibration

pytest.importorskip("llama_cpp")
pytestmark = [pytest.mark.slow, pytest.mark.local_model]

ROOT = Path(__file__).resolve().parents[2]


def test_calibrate_the_local_model(tmp_path: Path) -> None:
    out = tmp_path / "cal.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LENS_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, "-m", "lens", "judge", "calibrate", "--judge",
         "llama_cpp/qwen2.5-coder-1.5b", str(ROOT / "datasets" / "quickstart.json"),
         "--limit", "1", "--no-fact-grades", "--concurrency", "1", "--out", str(out)],
        capture_output=True, text=True, env=env, timeout=3600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    cal = Calibration.model_validate_json(out.read_text())
    print(proc.stdout)
    assert cal.model == "llama_cpp/qwen2.5-coder-1.5b"
    # One question, every flawed shape (calibration_answers): 7 pairs, asked in both orders.
    assert cal.pairs == 7 and cal.verdicts == 14
    # The response schema becomes a grammar: every verdict is readable JSON.
    assert cal.unreadable == 0 and cal.failed_calls == 0
    assert all(r.final in ("correct", "flawed", "tie") for r in cal.results)
    assert cal.accuracy is not None and cal.position_disagreement is not None
    assert cal.status in ("pass", "warn", "fail")
    assert "calibration:" in proc.stdout
    assert (tmp_path / "cache" / "judge-calibrations").is_dir()


# LoCoMo questions with answers known to be wrong or right (lens.scoring.wrong_answers), whose
# P(yes) the local judge gave in bench/RESULTS.md's measurement: 0.13, 0.35, 0.22, 0.86, 0.90.
KNOWN = [
    ("When did Dave take a trip to mountainous regions?", "July 2023", "It was Tokyo.",
     "absent"),
    ("When did Jolene buy her pet Seraphim?", "in 2022", "It was a few years back.", "absent"),
    ("What food item did Maria drop off at the homeless shelter?", "Cakes",
     "Something related to what Maria was doing around that time.", "absent"),
    ("When did Joanna start writing her third screenplay?", "May 2022", "May 2022", "present"),
    ("When will John start his new job?", "In July, 2022", "In July, 2022", "present"),
]


def test_the_local_judge_refuses_wrong_answers_and_credits_right_ones() -> None:
    from lens.core import eventloop
    from lens.data.config import ModelConfig
    from lens.models.llama_backend import LlamaCppClient
    from lens.scoring.judging.judge import Judge, fact_grade_task

    client = LlamaCppClient(ModelConfig(model="llama_cpp/qwen2.5-coder-1.5b",
                                        options={"n_ctx": 4096, "n_threads": 1}))
    judge = Judge(client, concurrency=1)
    tasks = [fact_grade_task(q, fact, answer) for q, fact, answer, _ in KNOWN]
    verdicts = eventloop.run(lambda: judge.run(tasks))
    got = [verdicts[t.key(judge.model)] for t in tasks]
    assert [v.value for v in got] == [grade for *_, grade in KNOWN], [v.raw for v in got]
    # Read from the probabilities, not written: no tokens generated, every verdict readable.
    assert all(v.attempts == 1 and '"p_yes"' in v.raw for v in got)
