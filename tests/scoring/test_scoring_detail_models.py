"""Every detail lens's scoring writes is typed: the models of lens/scoring/foundations/detail.py,
each metric's named by its spec, name each key that a real run's scoring stores (lens's own
metrics under each fact grader, a failing judge, errored questions, the published protocols, a
plugin metric with its own model), so a new key of the detail must be typed; and a detail no
model knows (an older run's, a hand-written file's) still loads, its keys kept."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from scoring_fixtures import ScriptedJudge, build_run, failing, fair, record, write_dataset
from test_scoring_run import Q1, Q2, records

import lens.scoring.metrics as registry
from lens.commands.cli import main
from lens.scoring.foundations.detail import (
    Block,
    FactRecallDetail,
    GroundingDetail,
    PairwiseDetail,
    QuestionDetail,
    read_detail,
    untyped,
)
from lens.scoring.foundations.types import QuestionScores, RunScores
from lens.scoring.grading.fact_credit import apply_offline
from lens.scoring.grading.offline_grader import FactGrade
from lens.scoring.scorer import score_run_sync
from tests.protocols.builders import (
    LME_FAITHFUL,
    LOCOMO_FAITHFUL,
    LOCOMO_NOT_MENTIONED,
    PolicyJudge,
    imported,
    stored_run,
)
from tests.protocols.test_protocols_beam import CONV, FAITHFUL, rubric_judge
from tests.protocols.test_protocols_locomo import locomo_judge

ROOT = Path(__file__).resolve().parents[2]
REPLAY_JUDGE = {"model": "scripted/replay", "options": {"replies": [
    {"text": '{"verdict": "A", "reason": "r"}'},
    {"text": '{"grade": "partial", "reason": "r"}'}]}}


def assert_typed(scores: RunScores) -> set[str]:
    """No stored key of any question's detail is left untyped; returns the keys seen."""
    seen: set[str] = set()
    problems = {}
    for q in scores.questions:
        seen |= set(q.detail)
        if left := untyped(q.details):
            problems[q.question_id] = left
    assert not problems, f"detail keys no model of scoring/foundations/detail.py names: {problems}"
    return seen


def _scores(run: Path) -> RunScores:
    return RunScores.model_validate_json((run / "scores.json").read_text(encoding="utf-8"))


def test_a_real_run_and_its_rescoring_write_only_typed_detail(tmp_path: Path) -> None:
    raw = yaml.safe_load((ROOT / "configs" / "scripted.yaml").read_text(encoding="utf-8"))
    raw.update(name="typed", out_dir=str(tmp_path / "runs"), judge=REPLAY_JUDGE,
               dataset={**raw["dataset"],
                        "path": str((ROOT / "configs" / raw["dataset"]["path"]).resolve())})
    config = tmp_path / "typed.yaml"
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    assert main(["run", str(config), "--quiet", "--limit", "16"]) == 0
    run = next((tmp_path / "runs").glob("typed-*"))
    judged = _scores(run)
    seen = assert_typed(judged)
    assert {"fact_recall", "evidence_grounding", "answer_quality", "retrieval", "judge",
            "composite"} <= seen
    facts = [q.details.block("fact_recall", FactRecallDetail) for q in judged.questions]
    assert any(f.grade for d in facts if d for f in d.facts)
    for grader in ("both", "matcher"):
        assert main(["score", str(run), "--fact-grader", grader]) == 0
        rescored = _scores(run)
        assert_typed(rescored)
        facts = [d for q in rescored.questions
                 if (d := q.details.block("fact_recall", FactRecallDetail))]
        assert facts and all(f.grader == (grader if grader == "both" else None) for f in facts)


def test_a_failing_judge_and_errored_questions_write_only_typed_detail(tmp_path: Path) -> None:
    ds = write_dataset(tmp_path / "ds.json")
    recs = [*records(), record(Q2, "", adapter="broken", status="error")]
    run = build_run(tmp_path / "runs", ds, recs)
    scores = score_run_sync(run, judge=ScriptedJudge("judge-x", failing), fact_grader="judge")
    assert_typed(scores)
    q1 = next(q for q in scores.questions if q.question_id == Q1 and q.adapter == "fts")
    pairwise = q1.details.block("answer_quality", PairwiseDetail)
    assert pairwise and pairwise.failed_judge_calls
    facts = q1.details.block("fact_recall", FactRecallDetail)
    assert facts and "failed" in (facts.reason or "")
    broken = next(q for q in scores.questions if q.adapter == "broken")
    assert broken.details.error == "boom"
    assert_typed(score_run_sync(run, judge=ScriptedJudge("judge-y", fair), fact_grader="both"))


def test_the_offline_graders_detail_is_typed(tmp_path: Path) -> None:
    ds = write_dataset(tmp_path / "ds.json")
    run = build_run(tmp_path / "runs", ds, records())
    row = next(q for q in score_run_sync(run).questions if q.question_id == Q1)
    matched = row.details.block("fact_recall", FactRecallDetail)
    assert matched is not None and matched.grader is None
    facts = [f.fact for f in matched.facts if f.fact]
    grades = {f: FactGrade(1.0 if i else None, "model" if i else "error", 0.9 if i else None,
                           0.05 if i else None, reason="" if i else "the model call failed")
              for i, f in enumerate(facts)}
    graded = row.model_copy(deep=True)
    apply_offline(graded, grades, {"model": "local-x"})
    typed = read_detail(json.loads(json.dumps(graded.detail)))
    assert not untyped(typed)
    facts = typed.block("fact_recall", FactRecallDetail)
    assert facts and facts.grader == "local"
    assert facts.facts[1].p_present == 0.9


def test_published_protocols_write_only_typed_detail(tmp_path: Path) -> None:
    locomo = stored_run(tmp_path / "l", imported(tmp_path, "locomo"),
                        {"faithful": LOCOMO_FAITHFUL, "nothing": LOCOMO_NOT_MENTIONED})
    scores = score_run_sync(locomo, judge=PolicyJudge("judge-a", locomo_judge),
                            protocol="locomo")
    assert_typed(scores)
    judged = [q.details.judged["locomo_j"] for q in scores.questions
              if "locomo_j" in q.details.judged]
    assert judged and all(v.prompt for v in judged)
    assert all(q.details.protocol and q.details.protocol.name == "locomo"
               for q in scores.questions)
    lme = stored_run(tmp_path / "m", imported(tmp_path, "longmemeval"), {"a": LME_FAITHFUL})
    assert_typed(score_run_sync(lme, judge=PolicyJudge("gpt-4o-2024-08-06",
                                                       lambda p: "no"),
                                protocol="longmemeval"))
    assert_typed(score_run_sync(lme, judge=PolicyJudge("gpt-4o-2024-08-06", _raise),
                                protocol="longmemeval"))
    from lens.data.importers.beam import write_beam

    beam_ds = tmp_path / "beam.json"
    write_beam(CONV / "1", beam_ds)
    beam = stored_run(tmp_path / "b", beam_ds, {"a": FAITHFUL})
    scores = score_run_sync(beam, judge=PolicyJudge("gpt-4.1-mini", rubric_judge),
                            protocol="beam")
    assert_typed(scores)
    assert any(k.startswith("rubric_") for q in scores.questions for k in q.details.judged)


def _raise(prompt: str) -> str:
    raise RuntimeError("judge down")


def _row(detail: dict) -> QuestionScores:
    return QuestionScores(key="k", unit_key="u", adapter="a", scope_id="s", repeat=0,
                          question_id="q", question_type="t", checkpoint=1, status="answered",
                          detail=detail)


def test_a_detail_no_model_knows_loads_with_its_keys_kept() -> None:
    stored = {
        "fact_recall": {"facts": [{"fact": "p99 rose", "matched": True, "old_key": 3}],
                        "stated": 1},
        # A block that does not fit its model is kept whole, shown, never interpreted.
        "retrieval": {"first": "not a table"},
        "plugin_metric": {"whatever": [1, 2]},
        "_fields_set": "a key named like a keyword",
    }
    row = _row(json.loads(json.dumps(stored)))
    d = row.details
    facts = d.block("fact_recall", FactRecallDetail)
    assert facts and facts.facts[0].matched is True
    assert d.retrieval is None and d.of("retrieval") == {"first": "not a table"}
    assert [k for k, _ in d.blocks()] == list(stored)
    assert sorted(untyped(d)) == sorted(["retrieval", "plugin_metric", "_fields_set",
                                         "fact_recall.facts[0].old_key"])
    # Reading the typed view changes nothing that is written.
    assert row.model_dump()["detail"] == stored
    assert json.loads(row.model_dump_json())["detail"] == stored


def test_each_metrics_spec_names_its_detail_model_and_no_other_list_does() -> None:
    models = registry.detail_models()
    assert models["fact_recall"] is FactRecallDetail
    assert models["answer_quality"] is models["action_quality"] is PairwiseDetail
    assert set(models) == set(registry.question_metrics())
    # QuestionDetail names only the blocks no metric owns.
    assert not set(QuestionDetail.model_fields) & set(registry.metric_names())


def test_a_block_asked_for_with_another_model_than_its_specs_is_refused() -> None:
    d = _row({"fact_recall": {"facts": []}}).details
    assert d.block("evidence_grounding", GroundingDetail) is None  # not stored
    try:
        d.block("fact_recall", GroundingDetail)
    except TypeError as exc:
        assert "FactRecallDetail" in str(exc)
    else:
        raise AssertionError("a block read with another model than its spec's was returned")


class HitsDetail(Block):
    hits: int | None = None


def test_a_plugin_metrics_detail_is_read_with_the_model_its_spec_names(tmp_path: Path) -> None:
    spec = registry.register_metric(registry.MetricSpec(
        "hits_metric", 1, lambda m: (1.0, {"hits": len(m.item.record.answer)}),
        detail=HitsDetail))
    try:
        ds = write_dataset(tmp_path / "ds.json")
        scores = score_run_sync(build_run(tmp_path / "runs", ds, records()))
        assert_typed(scores)
        blocks = [q.details.block(spec.name, HitsDetail) for q in scores.questions
                  if q.status == "answered"]
        assert blocks and all(b is not None and b.hits for b in blocks)
    finally:
        registry.unregister_metric(spec.name)
