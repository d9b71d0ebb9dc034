"""The fact matcher on real agents' answers graded fact by fact by a large LLM judge (the LENS
benchmark's second version, third-party, beside the project in ../shared/lens-v2-grades).

The matcher is a strict check of what an answer states: it finds few of the facts the judge
finds in paraphrasing answers (docs/scoring.md gives the numbers). These floors keep its
agreement from getting worse; they are not a target.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.v2_agreement import measure

ROOT = Path(__file__).resolve().parents[2]
GRADES = ROOT.parent / "shared" / "lens-v2-grades"


def test_the_matcher_agrees_with_the_judge_at_least_as_well_as_measured() -> None:
    if not (GRADES / "grading_tasks.jsonl").is_file():
        pytest.skip(f"the LENS v2 per-fact grades are not beside the project ({GRADES})")
    a = measure(GRADES)
    assert a.facts == 422 and a.judge_present == 209
    # Measured: 19 of the judge's 209 present facts, 24 matched in all; kappa 0.068,
    # answer-level Pearson r 0.151.
    assert a.recall is not None and a.recall >= 19 / 209 - 1e-9
    assert a.precision is not None and a.precision >= 0.75
    assert a.kappa is not None and a.kappa >= 0.06
    assert a.pearson_r is not None and a.pearson_r >= 0.14
