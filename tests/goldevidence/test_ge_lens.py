from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from goldevidence.config import preset
from goldevidence.generate import generate
from goldevidence.lensrun import LensJob, grade_run, run_job
from goldevidence.report import section_html, section_markdown
from goldevidence.scenario import record_to_prediction, rows_to_dataset
from lens.data.dataset_check import validate_raw
from lens.runs.records import QuestionRecord

CANDIDATES = "goldevidence.lens_adapter:CandidateAdapter"


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return generate(preset("smoke", mid_query_rate=0.5, queries=8), seed=21)


def test_dataset_is_valid_and_checkpoints_follow_steps(rows: list[dict]) -> None:
    ds = rows_to_dataset(rows)
    _, problems = validate_raw(ds.model_dump(mode="json"), "generated")
    assert problems == []
    assert len(ds.scopes) == 2  # the episode and its twin
    for q in ds.questions:
        info = q.meta["goldevidence"]
        scope = ds.scope(q.scope_id)
        seen = scope.ordered_episodes()[: q.checkpoint_after]
        as_of = info["meta"]["as_of_step"]
        assert all(e.meta["step"] <= as_of for e in seen)
        assert len(seen) == sum(1 for e in scope.episodes if e.meta["step"] <= as_of)
        for ref in q.ground_truth.required_evidence_refs:
            assert ref in {e.episode_id for e in seen}
    stamps = [e.timestamp for e in ds.scopes[0].ordered_episodes()]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)


def test_gold_never_reaches_adapters_or_agent(rows: list[dict]) -> None:
    ds = rows_to_dataset(rows)
    for s in ds.scopes:
        for e in s.episodes:
            seen = e.for_adapter()
            assert seen.meta == {}
            assert "gold" not in seen.model_dump_json()
    for q in ds.questions:
        shown = q.for_agent().model_dump_json()
        assert "twin" not in shown and "support_ids\": [\"U" not in shown
        assert "goldevidence" not in shown


def test_step_granularity_groups_a_step(rows: list[dict]) -> None:
    ds = rows_to_dataset(rows, granularity="step")
    _, problems = validate_raw(ds.model_dump(mode="json"), "generated")
    assert problems == []
    steps = [e.meta["step"] for e in ds.scopes[0].episodes]
    assert len(steps) == len(set(steps))


def test_record_citations_map_to_update_ids() -> None:
    eps = {"S.U00000B": ["U00000B"], "S.L00003": [], "S.s00003": ["U00000B", "UAAAAAA"]}
    rec = QuestionRecord(unit_key="u", adapter="a", scope_id="S", repeat=0, question_id="q",
                         checkpoint=1, status="answered",
                         answer='{"value": "crimson-0003", "support_ids": []} see [S.U00000B]',
                         cited_refs=["S.U00000B"], retrieved_refs=["S.s00003", "S.L00003"])
    pred = record_to_prediction(rec, eps)
    assert pred["value"] == "crimson-0003" and pred["support_ids"] == ["U00000B"]
    assert pred["presented_ids"] == ["U00000B", "UAAAAAA"]
    rec2 = rec.model_copy(update={"answer": "no json here", "cited_refs": []})
    assert "value" not in record_to_prediction(rec2, eps)  # graded as missing_value
    # A one-token answer with a citation is read as the value (small models answer so).
    rec3 = rec.model_copy(update={"answer": "crimson-0003, [S.U00000B]"})
    pred3 = record_to_prediction(rec3, eps)
    assert pred3["value"] == "crimson-0003" and pred3["support_ids"] == ["U00000B"]


def _job(rows: list[dict], out: Path, policy: str, adapters: list[dict]) -> LensJob:
    return LensJob(name=f"t-{policy}", cells={"c.": ({"state_mode": "kv", "seed": 21}, rows)},
                   adapters=adapters, agent={"model": f"goldevidence-policy/{policy}"}, out=out,
                   concurrency={"units": 3, "questions": 4})


def test_run_through_lens_and_grade(rows: list[dict], tmp_path: Path) -> None:
    adapters = [
        {"name": CANDIDATES, "label": "k1", "options": {"k": 1}},
        {"name": CANDIDATES, "label": "k8", "options": {"k": 8}},
        {"name": CANDIDATES, "label": "k8-latest", "options": {"k": 8, "rerank": "latest_step"}},
        {"name": "sqlite_fts"},
    ]
    run_dir = run_job(_job(rows, tmp_path, "first", adapters))
    # A stand-in policy's run calls no model in scoring either (no offline grader on llama.cpp).
    condition = json.loads((run_dir / "scores.json").read_text())["condition"]
    assert condition["settings"]["fact_grader"] == "matcher"
    report = json.loads((run_dir / "goldevidence" / "grades.json").read_text())
    by = {g["adapter"]: g["metrics"] for g in report["groups"]}
    assert set(by) == {"k1", "k8", "k8-latest", "sqlite_fts"}
    assert all(m["n"] == len(rows) for m in by.values())
    assert by["k1"]["value_acc"] == 1.0 and by["k8-latest"]["value_acc"] == 1.0
    # A reader that trusts the first listed line loses when the gold is one of eight.
    assert by["k8"]["value_acc"] < 0.8 and by["k8"]["gold_present_rate"] == 1.0
    assert by["k8"]["selection_rate"] < 0.8
    assert by["k8"]["tokens_per_query"] > 0 and by["k8"]["passes_per_query"] == 2
    with open(run_dir / "goldevidence" / "summary.csv") as fh:
        table = list(csv.DictReader(fh))
    assert {r["adapter"] for r in table} == set(by)
    k8 = next(r for r in table if r["adapter"] == "k8")
    assert float(k8["value_acc_low"]) <= float(k8["value_acc"]) <= float(k8["value_acc_high"])
    md = section_markdown(run_dir)
    assert md is not None and "## GoldEvidence" in md and "k8-latest" in md
    assert '<table class="data" id="goldevidence">' in (section_html(run_dir) or "")
    # Grading again from the records gives the same numbers.
    again = grade_run(run_dir)
    assert {g["adapter"]: g["metrics"]["value_acc"] for g in again["groups"]} == {
        a: m["value_acc"] for a, m in by.items()}


def test_resume_a_finished_run_adds_nothing(rows: list[dict], tmp_path: Path) -> None:
    job = _job(rows, tmp_path, "latest_step", [{"name": CANDIDATES, "label": "k4",
                                                "options": {"k": 4}}])
    run_dir = run_job(job)
    before = (run_dir / "events.jsonl").read_text().count('"question_done"')
    run_job(job, resume=run_dir)
    after = (run_dir / "events.jsonl").read_text().count('"question_done"')
    assert before == after == len(rows)


def test_report_section_is_none_for_other_runs(tmp_path: Path) -> None:
    assert section_markdown(tmp_path) is None


def test_shipped_sweep_configs_parse() -> None:
    from goldevidence.sweep import load_spec, sweep_job

    root = Path(__file__).resolve().parents[2] / "configs"
    for path in sorted(root.glob("goldevidence*.yaml")):
        spec = load_spec(path)
        job = sweep_job(spec.model_copy(update={"seeds": spec.seeds[:1]}))
        assert job.adapters and job.cells
        labels = [a.get("label") or a["name"] for a in job.adapters]
        assert len(labels) == len(set(labels))


def test_sweep_config_errors_name_the_field(tmp_path: Path) -> None:
    from goldevidence.sweep import load_spec
    from lens.core.errors import ConfigError

    bad = tmp_path / "s.yaml"
    bad.write_text("k: [0]\n")
    with pytest.raises(ConfigError, match="field 'k"):
        load_spec(bad)
    bad.write_text("reranks: [biggest_id]\n")
    with pytest.raises(ConfigError, match="reranks"):
        load_spec(bad)
