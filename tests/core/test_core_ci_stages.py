"""CI's two stages through real pytest runs: the first records the tests it passed in pytest's
cache, the second, given that record (``--passed-in=FILE``), runs none of them again."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGET = "tests/core/test_core_command_list.py"


def _pytest(cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-n", "0", "-q", "-p", "no:randomly",
                           "-o", f"cache_dir={cache}", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


def test_the_second_stage_skips_what_the_first_passed(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = _pytest(cache, TARGET)
    assert first.returncode == 0, first.stdout[-2000:]
    record = cache / "v" / "lens" / "passed"
    passed = json.loads(record.read_text())
    assert passed and all(p.startswith(TARGET + "::") for p in passed)
    second = _pytest(cache, f"--passed-in={record}", TARGET)
    # Every test was deselected: pytest's "no tests ran", and the record is left as it was.
    assert second.returncode == 5, second.stdout[-2000:]
    assert f"{len(passed)} deselected" in second.stdout
    assert f"the {len(passed)} tests that passed in the first stage" in second.stdout
    assert json.loads(record.read_text()) == passed


def test_an_unreadable_record_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "passed"
    bad.write_text("{not json")
    proc = _pytest(tmp_path / "cache", f"--passed-in={bad}", TARGET)
    assert proc.returncode == 4
    assert "cannot read the first stage's record" in proc.stderr + proc.stdout
