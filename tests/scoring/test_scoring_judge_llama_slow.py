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
