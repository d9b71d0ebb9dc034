"""MemoryAgentBench importer on hostile input, through the real CLI: exit 2, a message naming
the file and the line or item, no traceback, no output file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("content", "message"), [
    (b'{"context": "a b.", "questions": {"x": 1}, "answers": ["a"], '
     b'"metadata": {"source": "ruler_qa"}}\n',
     "src.jsonl: $[0].questions: expected a list of questions (strings), got dict"),
    (b'{"context": "a \xff b."}\n', "src.jsonl: line 1: not UTF-8 text"),
    (b"[" * 100_000 + b"]" * 100_000 + b"\n", "src.jsonl: $[0]: JSON nested more than 64"),
    (b'{"x": ' * 5_000 + b"1" + b"}" * 5_000 + b"\n", "src.jsonl: line 1: JSON nested too"),
    (b'{"context": ' + b"9" * 5_000 + b"}\n",
     "src.jsonl: line 1: a number is too long to read (over 4,300 digits)"),
])
def test_hostile_rows_are_refused(tmp_path: Path, content: bytes, message: str) -> None:
    src = tmp_path / "src.jsonl"
    src.write_bytes(content)
    out = tmp_path / "out.json"
    proc = subprocess.run([sys.executable, "-m", "lens", "datasets", "import", "--format",
                           "memoryagentbench", str(src), "--out", str(out)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not out.exists()


def test_locomo_turn_text_that_is_an_object_is_refused(tmp_path: Path) -> None:
    import json

    src = tmp_path / "locomo.json"
    src.write_text(json.dumps([{"sample_id": "s1", "qa": [], "conversation": {
        "speaker_a": "A", "speaker_b": "B", "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": {"x": 1}}]}}]))
    out = tmp_path / "out.json"
    proc = subprocess.run([sys.executable, "-m", "lens", "datasets", "import", "--format",
                           "locomo", str(src), "--out", str(out)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 2, proc.stderr
    assert "locomo.json: $[0].conversation.session_1[0].text: expected str, got dict" \
        in proc.stderr
    assert not out.exists()
