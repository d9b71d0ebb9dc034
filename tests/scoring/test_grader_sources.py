"""The third-party graded sources (beside the project, never in it) and the per-source agreement
script: each source loads with its judge's verdicts, the script measures each source with a
threshold chosen on the others, and a missing source is named, not skipped silently."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.grader_agreement import choose_threshold, measured, with_intervals
from bench.grader_sources import LENS_V2_DIR, SOURCES_DIR, GradedFact, load_all, sample

ROOT = Path(__file__).resolve().parents[2]


def _need_sources() -> None:
    for path in (SOURCES_DIR / "mab", SOURCES_DIR / "memobase-locomo",
                 LENS_V2_DIR / "grading_tasks.jsonl"):
        if not path.exists():
            pytest.skip(f"the graded third-party sources are not beside the project ({path})")


def test_every_source_loads_with_its_verdicts_and_second_judge() -> None:
    _need_sources()
    found, missing = load_all()
    assert missing == []
    sizes = {name: len(rows) for name, rows in found.items()}
    assert sizes == {"lens-v2": 422, "mab-longmemeval": 60, "mab-ruler-qa": 200,
                     "memobase-locomo": 1540}
    # gpt-5 graded every MemoryAgentBench answer again; Memobase's second run gave 377 of its
    # answers word for word, and those carry its second verdict.
    assert all(r.label2 is not None for r in found["mab-ruler-qa"])
    assert sum(r.label2 is not None for r in found["memobase-locomo"]) == 377
    first = found["mab-longmemeval"][0]
    assert not first.question.startswith("Current Date")
    assert first.fact and first.answer and first.label in (0.0, 1.0)


def test_sampling_is_by_answer_and_stable() -> None:
    rows = [GradedFact("s", f"a{i}#{j}", f"a{i}", "q", "f", "x", 1.0)
            for i in range(10) for j in range(3)]
    picked = sample(rows, 4)
    assert len({r.answer_id for r in picked}) == 4 and len(picked) == 12
    assert {r.id for r in picked} == {r.id for r in sample(list(reversed(rows)), 4)}


def test_a_threshold_is_chosen_on_the_other_sources_only() -> None:
    # Source "a" is best read at 0.8, source "b" at 0.2: each is read at the other's choice.
    def rows(src: str, p_true: float, p_false: float) -> tuple[list[GradedFact], dict]:
        out, saved = [], {}
        for i in range(20):
            label = 1.0 if i % 2 else 0.0
            r = GradedFact(src, f"{src}{i}", f"{src}{i}", "q", "f", "x", label)
            out.append(r)
            saved[r.id] = {"id": r.id, "method": "model", "grade": None,
                           "p_present": p_true if label else p_false}
        return out, saved

    a, sa = rows("a", 0.9, 0.7)
    b, sb = rows("b", 0.3, 0.1)
    sources = {"a": a, "b": b}
    saved = {**sa, **sb}
    assert 0.1 < choose_threshold(sources, saved, "a") <= 0.3
    assert 0.7 < choose_threshold(sources, saved, "b") <= 0.9


def test_intervals_hold_the_point_and_lens_v2_is_measured_on_its_held_out_half() -> None:
    rows = [GradedFact("s", f"a{i}", f"a{i}", "q", "f", "x", float(i % 2)) for i in range(40)]
    grades = {r.id: (r.label if i % 5 else 1 - r.label) for i, r in enumerate(rows)}
    point, iv = with_intervals(rows, grades, {r.id: r.label for r in rows}, "t")
    k = iv["kappa"]
    assert k.value == point.kappa and k.low is not None and k.high is not None
    assert k.low <= k.value <= k.high
    v2 = [GradedFact("lens-v2", f"g{i}#0", f"g{i}", "q", "f", "x", 1.0) for i in range(40)]
    kept = measured(v2)
    assert 0 < len(kept) < len(v2)


def test_the_script_measures_every_source_through_its_command_line(tmp_path: Path) -> None:
    _need_sources()
    out = subprocess.run(
        [sys.executable, "-m", "bench.grader_agreement", "--graders", "matcher",
         "--answers", "15", "--work", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert out.returncode == 0, out.stderr
    for source in ("lens-v2", "mab-longmemeval", "mab-ruler-qa", "memobase-locomo"):
        assert f"| {source} | matcher |" in out.stdout
    assert "| mab-ruler-qa | second judge |" in out.stdout
    saved = [json.loads(line) for line in (tmp_path / "matcher.jsonl").read_text().splitlines()]
    assert saved and all(s["grade"] in (0.0, 1.0) for s in saved)


def test_the_script_names_a_missing_source_and_an_unknown_grader(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "bench.grader_agreement", "--graders", "matcher",
         "--sources", str(tmp_path / "none"), "--lens-v2", str(tmp_path / "none"),
         "--work", str(tmp_path / "w")],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 2
    assert "source missing: lens-v2:" in out.stdout and "memobase-locomo" in out.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "bench.grader_agreement", "--graders", "oracle"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert bad.returncode == 2 and "--graders: unknown oracle" in bad.stdout


def test_a_gold_given_several_ways_is_one_fact_with_its_forms() -> None:
    from bench.grader_sources import _golds

    assert _golds("['Seine or Epte']") == ["Seine", "Epte"]
    assert _golds(["50"]) == ["50"]
    assert _golds("Viking or Norseman, Viking") == ["Viking", "Norseman, Viking"]
    fact = GradedFact("s", "a", "a", "q", "Seine", "River Epte", 1.0, alternatives=("Epte",))
    assert fact.forms() == ("Seine", "Epte")
