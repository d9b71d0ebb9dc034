"""The adversary table of docs/scoring.md as a test (bench/adversary_table.py builds the shapes).

Answers that mention the right figures without being right (the conclusion reversed or drawn
both ways, every figure hedged, a bare list, the facts under doubt or denial, a "Sources:"
footer, the figures given to the distractor metric, another question's answer, invented chunk
refs) must score below the canonical answer, and the same answer as bullets, a table, JSON or
with honest rounding within 0.02 of it: mechanically and with the scripted judge grading facts.

The fast test answers one scope's 25 questions of datasets/standard.json with its required
evidence as the retrieval; the slow one rewrites a real scripted-policy run over all 150.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scoring_fixtures import ScriptedJudge, build_run, fair, record

from bench.adversary_table import (
    FAITHFUL,
    FAITHFUL_MARGIN,
    GAMING,
    SHAPES,
    STANDARD,
    ShapeBuilder,
    aggregate,
    measure,
    per_question,
    store_arm,
)
from lens.data.dataset_load import load_dataset
from lens.scoring import score_run_sync
from lens.scoring.foundations.types import RunScores

# How far below the canonical answer a reversed conclusion must land on the composite.
REVERSED_MARGIN = 0.10


def _check(results: dict[str, dict[str, RunScores]]) -> None:
    for how in ("mechanical", "judge"):
        good = aggregate(results["canonical"][how])
        assert good["composite"] and good["composite"] > 0.6, (how, good)
        for name in GAMING:
            bad = aggregate(results[name][how])
            assert bad["composite"] < good["composite"], (how, name, bad, good)
            assert bad["fact_recall"] <= good["fact_recall"], (how, name, bad, good)
        for name in ("reversed", "either_or"):
            bad = aggregate(results[name][how])
            assert bad["composite"] <= good["composite"] - REVERSED_MARGIN, (how, name)
            assert bad["fact_recall"] < good["fact_recall"], (how, name)
        for name in FAITHFUL:
            same = aggregate(results[name][how])
            assert abs(same["composite"] - good["composite"]) <= FAITHFUL_MARGIN, (how, name)
    # A value is a claim about its subject: the canonical figures given to the distractor lose
    # on every question, not only on the mean. (Only on the mean with the scripted judge: it
    # credits a fact whenever its words of four letters or more appear, which a subject such as
    # "WBC" does not have.)
    canonical = per_question(results["canonical"]["mechanical"])
    moved = per_question(results["distractor"]["mechanical"])
    above = {k: (moved[k], v) for k, v in canonical.items() if moved[k] >= v - 1e-9}
    assert not above, above


@pytest.fixture(scope="module")
def one_scope(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, RunScores]]:
    """Every shape of one scope's questions, the required evidence as what was retrieved."""
    tmp = tmp_path_factory.mktemp("table")
    ds = load_dataset(STANDARD)
    scope = ds.scopes[0].scope_id
    records = [record(q.question_id, "", scope=scope, adapter="sqlite_fts",
                      checkpoint=q.checkpoint_after,
                      retrieved=list(q.ground_truth.required_evidence_refs))
               for q in ds.questions_for(scope)]
    source = build_run(tmp / "src", STANDARD, records)
    builder = ShapeBuilder(ds)
    out: dict[str, dict[str, RunScores]] = {}
    for name in SHAPES:
        root = store_arm(source, tmp / "arms", name, builder.rewrite(records, name))
        out[name] = {
            "mechanical": score_run_sync(root, judge=None, write=False),
            "judge": score_run_sync(root, judge=ScriptedJudge("scripted/judge", fair),
                                    fact_grader=None, write=False),
        }
    return out


def test_every_shape_of_the_table_scores_as_the_rules_say(
        one_scope: dict[str, dict[str, RunScores]]) -> None:
    _check(one_scope)


def test_a_reversed_conclusion_voids_the_fact_credit_and_says_why(
        one_scope: dict[str, dict[str, RunScores]]) -> None:
    rows = [q for q in one_scope["reversed"]["mechanical"].questions
            if q.detail["fact_recall"].get("conclusion")]
    assert rows
    statuses = {q.detail["fact_recall"]["conclusion"]["status"] for q in rows}
    assert "contradicted" in statuses
    for q in rows:
        if q.detail["fact_recall"]["conclusion"]["status"] == "contradicted":
            assert q.metrics["fact_recall"] == 0.0
            assert "conclusion contradicted" in q.detail["fact_recall"]["reason"]


def test_the_canonical_answer_states_every_conclusion(
        one_scope: dict[str, dict[str, RunScores]]) -> None:
    for q in one_scope["canonical"]["mechanical"].questions:
        concl = q.detail["fact_recall"].get("conclusion")
        if concl:
            assert concl["status"] == "stated", (q.question_id, concl)
        assert q.metrics["fact_recall"] == pytest.approx(1.0), q.question_id


@pytest.mark.slow
def test_the_table_holds_on_a_real_scripted_run(tmp_path: Path) -> None:
    results = measure(tmp_path, lambda: ScriptedJudge("scripted/judge", fair))
    _check(results)
    assert aggregate(results["canonical"]["mechanical"])["fact_recall"] == pytest.approx(1.0)
