"""``lens facts grade``: rows in, grades out, resumable, agreement with a user's labels, and
every bad input named with its file, line and field (exit 2, nothing written)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lens.commands.cli import main
from lens.stats.agreement import cohen_kappa
from lens.stats.fact_agreement import answer_of, pearson
from lens.stats.fact_agreement import fact_agreement as agreement

ROOT = Path(__file__).resolve().parents[2]

ROWS = [
    {"id": "a1#0", "question": "How did auth latency change?", "fact": "224 ms",
     "answer": "Auth p99 latency was 224 ms on 2024-03-17 and 531 ms on 2024-04-04."},
    {"id": "a1#1", "question": "How did auth latency change?", "fact": "531 ms",
     "answer": "Auth p99 latency was 224 ms on 2024-03-17 and 531 ms on 2024-04-04."},
    {"id": "a2#0", "question": "How did auth latency change?", "fact": "224 ms",
     "answer": "I do not have enough information to answer."},
    {"id": "a3#0", "question": "How did auth latency change?", "fact": "531 ms",
     "answer": "Auth latency rose to 531 ms.", "answer_id": "third"},
]


def write_jsonl(path: Path, rows: list[dict[str, object]] | list[str]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def read_jsonl(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_grades_rows_resumes_and_prints_agreement(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    rows = write_jsonl(tmp_path / "rows.jsonl", ROWS[:2])
    out = tmp_path / "grades.jsonl"
    assert main(["facts", "grade", str(rows), "--out", str(out), "--grader", "matcher"]) == 0
    assert read_jsonl(out) == [{"id": "a1#0", "grade": 1.0}, {"id": "a1#1", "grade": 1.0}]
    # Two more rows: only they are graded; the first two stay as they were.
    write_jsonl(rows, ROWS)
    labels = write_jsonl(tmp_path / "labels.jsonl", [
        {"id": "a1#0", "grade": 1}, {"id": "a1#1", "grade": 0.5}, {"id": "a2#0", "grade": 0},
        {"id": "a3#0", "grade": 0}])
    capsys.readouterr()
    assert main(["facts", "grade", str(rows), "--out", str(out), "--grader", "matcher",
                 "--labels", str(labels)]) == 0
    got = read_jsonl(out)
    assert [r["id"] for r in got] == ["a1#0", "a1#1", "a2#0", "a3#0"]
    assert got[2]["grade"] == 0.0 and got[3]["grade"] == 1.0
    captured = capsys.readouterr()
    assert "2 already graded" in captured.err and "graded 2/2 fact(s)" in captured.err
    # 4 facts: matcher present on 3, labels on 2 of them; answers a1, a2 and "third".
    assert "agreement on 4 fact(s)" in captured.out
    assert "precision 0.667, recall 1.000" in captured.out
    assert "over 3 answer(s)" in captured.out


@pytest.mark.parametrize(("lines", "expected"), [
    (["{not json"], "line 1: not valid JSON"),
    ([json.dumps({"id": "x", "question": "q", "fact": "f"})], "line 1: field 'answer'"),
    ([json.dumps({**ROWS[0], "id": ""})], "line 1: field 'id'"),
    ([json.dumps(ROWS[0]), json.dumps(ROWS[0])], "line 2: field 'id' 'a1#0' repeats line 1"),
    (["[1, 2]"], "line 1: not a JSON object"),
])
def test_bad_rows_are_named_and_nothing_is_written(tmp_path: Path, lines: list[str],
                                                   expected: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    rows = write_jsonl(tmp_path / "rows.jsonl", [json.dumps(ROWS[1]), *lines])
    out = tmp_path / "grades.jsonl"
    assert main(["facts", "grade", str(rows), "--out", str(out), "--grader", "matcher"]) == 2
    err = capsys.readouterr().err
    expected = expected.replace("line 1", "line 2").replace("line 2: field 'id' 'a1#0' "
                                                            "repeats line 2", "line 3: field "
                                                            "'id' 'a1#0' repeats line 2")
    assert str(rows) in err and expected in err and "fix:" in err
    assert not out.exists()


def test_every_problem_is_listed_and_bad_labels_are_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = write_jsonl(tmp_path / "rows.jsonl", ["{", json.dumps({"id": "a"}), "{}"])
    assert main(["facts", "grade", str(rows), "--out", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "line 1: not valid JSON" in err and "line 2: field 'question'" in err
    assert "line 3: field 'id'" in err
    good = write_jsonl(tmp_path / "good.jsonl", ROWS)
    labels = write_jsonl(tmp_path / "labels.jsonl", [{"id": "a1#0", "grade": "yes"}])
    assert main(["facts", "grade", str(good), "--out", str(tmp_path / "o.jsonl"),
                 "--grader", "matcher", "--labels", str(labels)]) == 2
    err = capsys.readouterr().err
    assert f"{labels}: 1 problem(s)" in err and "line 1: field 'grade'" in err
    assert main(["facts", "grade", str(tmp_path / "missing.jsonl"), "--out",
                 str(tmp_path / "o.jsonl")]) == 2
    assert "missing.jsonl: rows file not found" in capsys.readouterr().err
    assert not (tmp_path / "o.jsonl").exists()


def test_grader_choice_is_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    out = str(tmp_path / "o.jsonl")
    assert main(["facts", "grade", str(rows), "--out", out, "--grader", "judge"]) == 2
    assert "--grader judge needs --judge MODEL" in capsys.readouterr().err
    assert main(["facts", "grade", str(rows), "--out", out, "--grader", "matcher",
                 "--judge", "openai/gpt-4o-mini"]) == 2
    assert "--judge is only used by --grader judge" in capsys.readouterr().err


def test_the_offline_grader_through_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    from lens.scoring.grading.offline_grader import OfflineGrader

    class Fake:
        def choice_probabilities(self, prompt: str, choices: tuple[str, ...]
                                 ) -> dict[str, float]:
            return dict(zip(choices, (0.7, 0.2, 0.1), strict=True))

    monkeypatch.setattr(OfflineGrader, "_client", lambda self: Fake())
    monkeypatch.setenv("LENS_CACHE_DIR", str(tmp_path / "cache"))
    sentence = {"id": "s#0", "question": "Why?", "fact": "the filter never triggered",
                "answer": "Nothing ever set the alarm off."}
    rows = write_jsonl(tmp_path / "rows.jsonl", [*ROWS, sentence])
    out = tmp_path / "o.jsonl"
    assert main(["facts", "grade", str(rows), "--out", str(out)]) == 0
    assert {r["id"]: r["grade"] for r in read_jsonl(out)} == {
        "a1#0": 1.0, "a1#1": 1.0, "a2#0": 0.0, "a3#0": 1.0, "s#0": 1.0}
    assert "with the local grader" in capsys.readouterr().err


def test_the_cli_in_a_subprocess(tmp_path: Path) -> None:
    rows = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    labels = write_jsonl(tmp_path / "labels.jsonl", [{"id": r["id"], "grade": 1} for r in ROWS])
    proc = subprocess.run(
        [sys.executable, "-m", "lens", "facts", "grade", str(rows), "--out",
         str(tmp_path / "o.jsonl"), "--grader", "matcher", "--labels", str(labels)],
        capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "recall 0.750" in proc.stdout and "kappa 0.000" in proc.stdout


def test_agreement_statistics() -> None:
    assert answer_of("q7-run2#3") == "q7-run2" and answer_of("solo") == "solo"
    assert answer_of("x#1", "mine") == "mine"
    assert cohen_kappa([True, False, True, False], [True, False, True, False]) == 1.0
    assert cohen_kappa([True, True, False, False], [True, False, True, False]) == 0.0
    assert cohen_kappa([True, True], [True, True]) is None
    assert pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert pearson([1, 1, 1], [1, 2, 3]) is None
    a = agreement({"a#0": 1.0, "a#1": 0.0, "b#0": 0.5, "c#0": None, "d#0": 0.0},
                  {"a#0": 1.0, "a#1": 1.0, "b#0": 0.0, "c#0": 1.0, "d#0": 0.0})
    assert (a.pairs, a.unknown, a.answers) == (4, 1, 3)
    assert a.precision == 0.5 and a.recall == 0.5
