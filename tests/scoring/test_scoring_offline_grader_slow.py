"""The offline fact grader through the real local model (llama-cpp-python, Qwen2.5-Coder-1.5B).

Slow: a model load and a few verdicts on CPU at one model thread (the benches' setting on a
shared 2-core machine); the agreement check (25 facts of real answers, a quarter of an hour at
a load of 10) runs only on request (``-m opt_in``). The adversarial shapes are built by hand
from a question of datasets/standard.json with its finding written as a sentence (the shipped
key facts are bare figures, which the matcher alone decides); the grader must not credit any of
them more than the phrase matcher does (a shape the matcher vetoes gets no points in lens's
scoring whatever the model says), and must credit the faithful answer, paraphrased, which the
matcher misses. The agreement check reads the third-party graded answers beside the project
(``../shared/lens-v2-grades``) and skips without them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.grader_sources import LENS_V2_DIR
from lens.scoring.grading.fact_grader import VETO_REASONS, offline_available
from lens.scoring.grading.offline_grader import FactTask, OfflineGrader
from lens.scoring.text.facts import AnswerText, match_fact
from lens.stats.fact_agreement import fact_agreement as agreement

pytestmark = [pytest.mark.slow, pytest.mark.local_model]
if not offline_available():
    pytest.skip("the offline grader needs the 'local' extra (llama-cpp-python and the model's "
                "part packages)", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
# Beside the checkout, or beside the folder of worktrees it sits in (bench.grader_sources).
GRADES = LENS_V2_DIR


@pytest.fixture(scope="module")
def grader() -> OfflineGrader:
    return OfflineGrader(n_threads=1)


def standard_question() -> tuple[str, str]:
    data = json.loads((ROOT / "datasets" / "standard.json").read_text())
    q = next(q for q in data["questions"] if q["question_type"] == "longitudinal"
             and "auth p99 latency: 531 ms" in q["ground_truth"]["key_facts"])
    assert "climbed steadily since CHG-5382" in q["ground_truth"]["canonical_answer"]
    return q["prompt"], q["ground_truth"]["canonical_answer"]


FACT = "auth p99 latency climbed from 224 ms to 531 ms after CHG-5382"
FAITHFUL = ("Ever since the change CHG-5382, requests to auth take far longer at the 99th "
            "percentile: 224 ms before it, 531 ms now, and rising report after report.")
ADVERSARIAL = {
    "reversed": "Auth p99 latency fell from 531 ms to 224 ms after CHG-5382.",
    "bare list": "CHG-5382, 224 ms, 531 ms, 2024-03-17, 2024-04-04 [s_ep_010] [s_ep_027]",
    "denied": ("Auth p99 latency did not climb after CHG-5382; it stayed near 224 ms and never "
               "reached 531 ms."),
    "other subject": "Checkout p99 latency climbed from 224 ms to 531 ms after CHG-5382.",
    "abstention": "I do not have enough information in the records to answer this question.",
    "vague": "Something about auth may have changed at some point; more data is needed.",
}


def test_no_adversarial_shape_earns_more_than_from_the_matcher(grader: OfflineGrader) -> None:
    question, _ = standard_question()
    shapes = {"faithful": FAITHFUL, **ADVERSARIAL}
    tasks = [FactTask(question, FACT, a) for a in shapes.values()]
    grades = dict(zip(shapes, grader.grade(tasks), strict=True))
    print({k: (g.grade, g.method, g.p_present) for k, g in grades.items()})
    assert not match_fact(FACT, AnswerText(FAITHFUL)).matched
    assert grades["faithful"].method == "model" and (grades["faithful"].grade or 0) >= 0.5
    for name, answer in ADVERSARIAL.items():
        match = match_fact(FACT, AnswerText(answer))
        if match.reason in VETO_REASONS:
            continue  # lens's scoring gives it no points without asking the model
        matcher = 1.0 if match.matched else 0.0
        assert grades[name].grade is not None and grades[name].grade <= matcher, name


@pytest.mark.opt_in
# About 38 s a fact at one thread with the machine's load at 10 (bench/RESULTS.md): 25 facts
# and the model's load fit in 1,800 s, not in the suite's default 900 s.
@pytest.mark.timeout(1800)
def test_agreement_with_a_large_judge_on_real_answers(grader: OfflineGrader) -> None:
    if not GRADES.is_dir():
        pytest.skip(f"the third-party graded answers are not beside the project ({GRADES})")
    from bench.fact_grading import first_answers, load_pairs

    # The held-out half (never used to tune), 25 facts of whole answers in the order
    # bench.grader_agreement samples (4 scopes; the file's first facts are one scope's): well
    # above the matcher's answer-level r (0.15 on the whole set) and kappa (0.07).
    rows = first_answers([r for r in load_pairs(GRADES) if r["half"] == "held-out"], 25)
    assert len(rows) == 25
    graded = grader.grade([FactTask(r["question"], r["fact"], r["answer"]) for r in rows])
    ours = {r["id"]: g.grade for r, g in zip(rows, graded, strict=True)}
    labels = {r["id"]: r["label"] for r in rows}
    a = agreement(ours, labels, {r["id"]: r["answer_id"] for r in rows})
    print(a.render())
    assert a.unknown == 0
    assert a.kappa is not None and a.kappa >= 0.2
    assert a.answer_r is not None and a.answer_r >= 0.4
