"""Careless arguments to ``lens adapters new``, ``lens compare`` and ``lens facts grade``: each
is refused with one message and exit 2, no traceback, and nothing written where the user did not
point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import Lens, cli_runner


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def _refused(r: object) -> str:
    out = r.stdout + r.stderr  # type: ignore[attr-defined]
    assert r.returncode == 2, out  # type: ignore[attr-defined]
    assert "Traceback" not in out
    return out


# -- 10. a package named like lens's own distribution -------------------------------------------

def test_adapters_new_refuses_lens_own_distribution_name(lens: Lens, tmp_path: Path) -> None:
    out = _refused(lens("adapters", "new", "memory_eval"))
    assert "lens-memory-eval" in out and "replace" in out
    assert not (tmp_path / "lens-memory-eval").exists()


def test_adapters_new_and_check_show_a_careless_name_cut_and_visible(lens: Lens,
                                                                      tmp_path: Path) -> None:
    # A name is quoted through lens.core.redact: control characters visible, cut short.
    name = "\x1b[31mBad" + "x" * 300
    before = sorted(tmp_path.iterdir())
    msg = _refused(lens("adapters", "new", name))
    assert "\x1b" not in msg and "\u241b[31mBad" in msg
    (named,) = [line for line in msg.splitlines() if "NAME" in line]
    assert "x" * 100 not in named
    assert sorted(tmp_path.iterdir()) == before
    msg = _refused(lens("adapters", "check", "null", "--only", "\x1b[2Jwipe"))
    assert "\x1b" not in msg and "\u241b[2Jwipe" in msg


# -- 18. --out that cannot be a new folder -----------------------------------------------------

@pytest.mark.parametrize("shape", ["dangling", "under_a_file", "long_name", "under_dangling"])
def test_adapters_new_out_that_cannot_be_written(lens: Lens, tmp_path: Path,
                                                 shape: str) -> None:
    before = sorted(tmp_path.rglob("*"))
    if shape == "dangling":
        out = tmp_path / "link"
        out.symlink_to(tmp_path / "nowhere")
    elif shape == "under_a_file":
        (tmp_path / "file").write_text("x")
        out = tmp_path / "file" / "pkg"
    elif shape == "under_dangling":
        (tmp_path / "gone").symlink_to(tmp_path / "nowhere")
        out = tmp_path / "gone" / "pkg"
    else:
        out = tmp_path / ("p" * 300)
    before = sorted(tmp_path.rglob("*"))
    msg = _refused(lens("adapters", "new", "my_hostile_memory", "--out", str(out)))
    assert "--out" in msg
    assert sorted(tmp_path.rglob("*")) == before
    assert not (tmp_path / "nowhere").exists()


# -- 17, 20. lens compare: levels, --out, --arms, and a limit that keeps every question ---------

@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    from tests.cli.runs import real_run

    whole = real_run(tmp_path / "whole", "w", ["sqlite_fts", "null"])
    big = real_run(tmp_path / "big", "w", ["sqlite_fts", "null"], "--limit", "100000")
    return whole, big


def test_compare_refuses_careless_arguments(lens: Lens, tmp_path: Path,
                                            runs: tuple[Path, Path]) -> None:
    whole, big = runs
    for level in ("1.5", "0", "nan", "1", "-inf"):
        msg = _refused(lens("compare", str(whole), f"--confidence={level}"))
        assert "--confidence" in msg
    existing = tmp_path / "notes.txt"
    existing.write_text("mine")
    msg = _refused(lens("compare", str(whole), "--out", str(existing)))
    assert "--out" in msg and existing.read_text() == "mine"
    msg = _refused(lens("compare", str(whole), "--out", str(existing / "sub")))
    assert "--out" in msg
    for arms in (",,,", " , ", ""):
        msg = _refused(lens("compare", str(whole), f"--arms={arms}"))
        assert "--arms" in msg
    # 20. a --limit above the dataset's size is the whole dataset: comparable with it.
    manifest = json.loads((big / "manifest.json").read_text())
    assert "question_limit" not in manifest["condition"]
    r = lens("compare", str(whole), str(big), "--arms",
             f"{whole.name}:sqlite_fts,{big.name}:sqlite_fts")
    assert r.returncode == 0, r.stdout + r.stderr


# -- 19. lens facts grade: hostile rows and an --out under a file -------------------------------

def _row(i: int, **extra: object) -> str:
    return json.dumps({"id": f"r{i}", "question": "q?", "fact": "a dog", "answer": "a dog",
                       **extra})


HOSTILE_ROWS = {
    "deep": b'{"id": "x", "question": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "huge_int": b'{"id": "x", "question": ' + b"9" * 5000 + b"}",
    "not_utf8": b'{"id": "x", "question": "caf\xe9", "fact": "f", "answer": "a"}',
    "lone_surrogate": b'{"id": "x\\ud800", "question": "q", "fact": "f", "answer": "a"}',
}


@pytest.mark.parametrize("kind", sorted(HOSTILE_ROWS))
def test_facts_grade_refuses_hostile_rows(lens: Lens, tmp_path: Path, kind: str) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(_row(1).encode() + b"\n" + HOSTILE_ROWS[kind] + b"\n")
    out = tmp_path / "grades.jsonl"
    msg = _refused(lens("facts", "grade", str(rows), "--out", str(out), "--grader", "matcher"))
    assert "line 2" in msg and len(msg) < 3_000
    assert "\u240a" not in msg and "\n  line 2: " in msg  # one problem a line
    assert not out.exists()


def test_facts_grade_refuses_an_out_under_a_file(lens: Lens, tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(_row(1) + "\n")
    msg = _refused(lens("facts", "grade", str(rows), "--out", str(rows / "grades.jsonl"),
                        "--grader", "matcher"))
    assert "--out" in msg
    msg = _refused(lens("facts", "grade", str(rows), "--out", str(rows), "--grader", "matcher"))
    assert "--out" in msg and rows.read_text() == _row(1) + "\n"
    # An input named as --out is shown through lens.core.redact (control characters visible).
    odd = tmp_path / "rows\x1b[2J.jsonl"
    odd.write_text(_row(1) + "\n")
    msg = _refused(lens("facts", "grade", str(odd), "--out", str(odd), "--grader", "matcher"))
    assert "is an input file" in msg and "\x1b" not in msg


# -- a run directory someone edited: lens score, report and compare read it through the guard --

@pytest.mark.parametrize("command", ["score", "report", "compare"])
def test_a_run_manifest_nested_deep_is_refused(lens: Lens, tmp_path: Path, command: str) -> None:
    from tests.protocols.builders import LME_FAITHFUL, imported, stored_run

    run = stored_run(tmp_path / "runs", imported(tmp_path, "longmemeval"),
                     {"faithful": LME_FAITHFUL})
    (run / "manifest.json").write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    before = sorted(tmp_path.rglob("*"))
    msg = _refused(lens(command, str(run)))
    assert "manifest.json" in msg and "nested" in msg and len(msg) < 1_000
    assert sorted(tmp_path.rglob("*")) == before


def test_an_events_line_nested_deep_is_skipped_as_unreadable(lens: Lens, tmp_path: Path) -> None:
    from tests.protocols.builders import LME_FAITHFUL, imported, stored_run

    run = stored_run(tmp_path / "runs", imported(tmp_path, "longmemeval"),
                     {"faithful": LME_FAITHFUL})
    with open(run / "events.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"kind": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    r = lens("report", str(run))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Traceback" not in r.stdout + r.stderr
