"""Every score has an adversary. A real scripted-policy run over datasets/standard.json
(sqlite_fts, 150 questions) is rewritten into answer shapes that try to win by formatting
(pasted records, a list of figures, abstaining, a vague answer; each citing what it can) and
re-scored: each must score below the canonical answer on every headline metric, and
``lens compare`` must never call it better. Failing or erroring the control questions must
never raise the composite, and the scoring condition must keep differently scored runs apart.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from gaming_arms import ArmBuilder
from scoring_fixtures import ScriptedJudge, build_run, dataset_dict, fair, record, write_dataset

import lens.report.figures.groupstats as gs
from bench import adversary_table
from lens.core.errors import UserError
from lens.data.dataset_load import load_dataset
from lens.report.foundations.data import load_run as load_report_run
from lens.report.run_comparison import compare_runs
from lens.report.summary import summarize
from lens.runs.records import QuestionRecord
from lens.runs.store import RunStore
from lens.scoring import SCORES_FILE, score_run_sync
from lens.scoring.measures.composite import composite, resolve_weights
from lens.scoring.text.facts import FactMatcherSettings
from lens.scoring.types import RunScores
from lens.stats import cluster_bootstrap_weights

ROOT = Path(__file__).resolve().parents[2]
STANDARD = ROOT / "datasets" / "standard.json"
ADAPTER = "sqlite_fts"
GAMING = ("policy", "pasted", "numbers", "abstain", "vague")
# The canonical answer with something added: pasted records, or citations of everything.
PADDED = ("padded", "cite_all")
# Every metric a report shows for a no-judge scoring, the composite first.
HEADLINE = ("composite", "fact_recall", "citation_precision", "evidence_grounding",
            "evidence_coverage", "budget_compliance", "insight_depth", "reasoning_quality")
# Metrics an answer's wording decides: a gaming shape must be strictly below on these.
WORDING = ("composite", "fact_recall", "insight_depth", "reasoning_quality")
CONTROL = "null_hypothesis"


def _lens(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lens", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def scripted_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run: the scripted retrieval policy over sqlite_fts, through the CLI."""
    return adversary_table.scripted_run(tmp_path_factory.mktemp("std"))


def _store_arm(source: Path, parent: Path, name: str,
               records: list[QuestionRecord]) -> Path:
    """A run directory holding ``records`` under the source run's manifest (same condition)."""
    src = RunStore.open(source)
    manifest = src.manifest_data()
    store = RunStore.create(parent, name, name)
    store.write_manifest({**manifest, "run_id": name})
    for unit in dict.fromkeys(r.unit_key for r in records):
        store.append_event("unit_started", unit, capabilities={})
    for r in records:
        store.save_question(r)
    store.close()
    return store.root


@pytest.fixture(scope="module")
def builder() -> ArmBuilder:
    return ArmBuilder(load_dataset(STANDARD))


@pytest.fixture(scope="module")
def source_records(scripted_run: Path) -> list[QuestionRecord]:
    records = RunStore.open(scripted_run).load_records()
    assert len(records) == 150 and all(r.status == "answered" for r in records)
    return records


@pytest.fixture(scope="module")
def arms(scripted_run: Path, source_records: list[QuestionRecord], builder: ArmBuilder,
         tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, RunScores]]:
    parent = tmp_path_factory.mktemp("arms")
    out: dict[str, tuple[Path, RunScores]] = {}
    for arm in ("canonical", *GAMING, *PADDED):
        root = _store_arm(scripted_run, parent, arm, builder.rewrite(source_records, arm))
        if arm == "pasted":
            # The real re-scoring path: `lens score` on the rewritten run.
            proc = _lens("score", str(root))
            assert proc.returncode == 0, proc.stderr
            scores = RunScores.model_validate_json((root / SCORES_FILE).read_text())
        else:
            scores = score_run_sync(root, judge=None)
        out[arm] = (root, scores)
    return out


def _agg(scores: RunScores) -> dict[str, float | None]:
    return scores.aggregates["adapter"][ADAPTER]


def test_the_canonical_answer_scores_high(arms: dict[str, tuple[Path, RunScores]]) -> None:
    a = _agg(arms["canonical"][1])
    assert a["fact_recall"] == pytest.approx(1.0)
    assert a["reasoning_quality"] == pytest.approx(1.0)
    assert a["composite"] is not None and a["composite"] > 0.8


@pytest.mark.parametrize("arm", GAMING)
def test_gaming_shape_scores_below_the_canonical_answer_on_every_headline_metric(
        arms: dict[str, tuple[Path, RunScores]], arm: str) -> None:
    good, bad = _agg(arms["canonical"][1]), _agg(arms[arm][1])
    for m in HEADLINE:
        assert good[m] is not None and bad[m] is not None, m
        assert bad[m] <= good[m] + 1e-12, (arm, m, bad[m], good[m])
    for m in WORDING:
        assert bad[m] < good[m] - 0.25, (arm, m, bad[m], good[m])
    # The shapes that cite every record received lose citation precision for it.
    if arm in ("pasted", "numbers", "abstain"):
        assert bad["citation_precision"] < good["citation_precision"] - 0.1


@pytest.mark.parametrize("arm", PADDED)
def test_padding_a_faithful_answer_earns_nothing_and_costs_citation_precision(
        arms: dict[str, tuple[Path, RunScores]], arm: str) -> None:
    good, padded = _agg(arms["canonical"][1]), _agg(arms[arm][1])
    for m in HEADLINE:
        assert padded[m] <= good[m] + 1e-12, (arm, m, padded[m], good[m])  # type: ignore[operator]
    # The facts stated are the same; the extra citations are not relevant.
    assert padded["fact_recall"] == pytest.approx(good["fact_recall"])
    assert padded["citation_precision"] < good["citation_precision"] - 0.1  # type: ignore[operator]
    assert padded["composite"] < good["composite"]  # type: ignore[operator]


def test_pasted_records_earn_no_fact_credit(arms: dict[str, tuple[Path, RunScores]]) -> None:
    scores = arms["pasted"][1]
    # The facts are in the pasted text; none is stated as a claim.
    assert _agg(scores)["fact_recall"] == 0.0
    quoted = [q.detail["fact_recall"].get("quoted_sentences", 0) for q in scores.questions
              if q.metrics["fact_recall"] is not None]
    assert min(quoted) > 0


def test_listing_every_figure_is_discounted(arms: dict[str, tuple[Path, RunScores]]) -> None:
    rows = [q for q in arms["numbers"][1].questions if q.metrics["fact_recall"] is not None]
    factors = [q.detail["fact_recall"]["stuffing_factor"] for q in rows]
    assert max(factors) < 0.5
    assert _agg(arms["numbers"][1])["fact_recall"] < 0.1


@pytest.mark.parametrize("arm", ("pasted", "numbers", "vague"))
def test_a_judge_preferring_the_gaming_answer_cannot_rescue_it(
        arms: dict[str, tuple[Path, RunScores]], arm: str) -> None:
    # The worst case for the tier-2 judge: it rates the gaming answer best outright and the
    # canonical answer as a tie with itself.
    weights = resolve_weights(None)
    good = {**_agg(arms["canonical"][1]), "answer_quality": 0.5, "action_quality": 0.5}
    bad = {**_agg(arms[arm][1]), "answer_quality": 1.0, "action_quality": 1.0}
    assert composite(bad, weights).value < composite(good, weights).value  # type: ignore[operator]


@pytest.mark.parametrize("arm", (*GAMING, *PADDED))
def test_compare_never_calls_a_gaming_arm_better(
        arms: dict[str, tuple[Path, RunScores]], arm: str) -> None:
    result = compare_runs([arms["canonical"][0], arms[arm][0]])
    assert not result.summary.not_comparable
    (comp,) = result.summary.comparisons
    rows = {row.metric: row for row in comp.rows}
    assert "better" not in {row.verdict for row in rows.values()}, rows
    # Δ = gaming − canonical: the gaming arm is worse, or, where these scopes are too few for
    # the bounded-mean test every verdict of a difference needs, undecided by that rule alone.
    for metric in (("composite", "fact_recall") if arm in GAMING else ("citation_precision",)):
        row = rows[metric]
        assert row.verdict == "worse" or (row.verdict == "undecided" and row.rule == "scopes"), \
            (metric, row.verdict, row.rule, row.reason)


# Point 4: the controls.

def _with_controls(records: list[QuestionRecord], how: str) -> list[QuestionRecord]:
    out = []
    for r in records:
        if not r.question_id.endswith("_null_hypothesis"):
            out.append(r)
        elif how == "fail":
            out.append(r.model_copy(update={"answer": "Not enough evidence to say."}))
        else:
            out.append(r.model_copy(update={"status": "error", "answer": "", "budget": None,
                                            "error": "timeout"}))
    return out


def test_failing_or_erroring_controls_never_raise_the_composite(
        arms: dict[str, tuple[Path, RunScores]], scripted_run: Path,
        source_records: list[QuestionRecord], builder: ArmBuilder,
        tmp_path: Path) -> None:
    canonical = builder.rewrite(source_records, "canonical")
    assert any(r.question_id.endswith("_null_hypothesis") for r in canonical)
    base = _agg(arms["canonical"][1])
    for how in ("fail", "error"):
        root = _store_arm(scripted_run, tmp_path, how, _with_controls(canonical, how))
        a = _agg(score_run_sync(root, judge=None))
        assert a["composite"] is not None and base["composite"] is not None
        assert a["composite"] < base["composite"], how
    # Failing controls does raise the advantage: it is reported, not rewarded.
    failed = score_run_sync(_store_arm(scripted_run, tmp_path, "fail2",
                                       _with_controls(canonical, "fail")), judge=None)
    assert _agg(failed)["longitudinal_advantage"] > base["longitudinal_advantage"]  # type: ignore[operator]


def test_bootstrap_replicates_keep_every_metric_of_the_point_estimate(
        arms: dict[str, tuple[Path, RunScores]]) -> None:
    # One scope, as in the quickstart: questions are resampled and many replicates draw no
    # control or no action question. Each replicate must still compute the same statistic.
    scores = arms["canonical"][1]
    scope = scores.questions[0].scope_id
    rows = [q for q in scores.questions if q.scope_id == scope]
    how = gs.GroupScoring.of(scores)
    matrix = gs._Matrix(rows)
    w = cluster_bootstrap_weights([f"q{i}" for i in range(len(rows))], resamples=400,
                                  seed_label="adversaries")
    assert ((w @ matrix.control.astype(float)) == 0).any()  # the case that used to drop LA
    point = how.point(rows)
    reps = gs._replicates(matrix, w, how, point)
    assert np.isfinite(reps["composite"]).all()
    assert np.isfinite(reps["longitudinal_advantage"]).all()
    est = gs.group_estimates(rows, how)["composite"]
    assert est.mean == pytest.approx(point["composite"])


# Point 7: the scoring condition.

def test_scores_record_their_condition(arms: dict[str, tuple[Path, RunScores]]) -> None:
    scores = arms["canonical"][1]
    cond = scores.condition
    assert cond["protocol"] >= 2
    assert cond["weights"]["longitudinal_advantage"] == 0.0
    assert cond["settings"]["fact_matcher"]["coverage"] == FactMatcherSettings().coverage
    assert scores.condition_hash and len(scores.condition_hash) == 64
    stored = json.loads((arms["canonical"][0] / SCORES_FILE).read_text())
    assert stored["condition"] == cond
    summary = summarize(load_report_run(arms["canonical"][0]))
    assert summary.scoring_condition == cond


def test_compare_refuses_other_matcher_settings(
        scripted_run: Path, source_records: list[QuestionRecord], builder: ArmBuilder,
        tmp_path: Path, arms: dict[str, tuple[Path, RunScores]]) -> None:
    records = builder.rewrite(source_records, "canonical")
    loose = _store_arm(scripted_run, tmp_path, "loose", records)
    score_run_sync(loose, judge=None, matcher=FactMatcherSettings(coverage=0.3))
    with pytest.raises(UserError, match="scoring_fact_matcher"):
        compare_runs([arms["canonical"][0], loose])
    forced = compare_runs([arms["canonical"][0], loose], force=True)
    assert forced.summary.not_comparable == ["scoring_fact_matcher"]


def test_compare_refuses_another_fact_grading(tmp_path: Path) -> None:
    ds = write_dataset(tmp_path / "ds.json")
    recs = [record("s1_q01_longitudinal", "Latency rose [s1_ep_002].", retrieved=["s1_ep_002"])]
    runs = []
    for name, grader in (("a", "matcher"), ("b", "judge")):
        root = build_run(tmp_path / name, ds, recs)
        store = RunStore.open(root)
        store.write_manifest({**store.manifest_data(), "run_id": f"run-{name}"})
        store.close()
        score_run_sync(root, judge=ScriptedJudge("scripted/judge", fair), fact_grader=grader)
        runs.append(root)
    with pytest.raises(UserError, match="scoring_fact_grader"):
        compare_runs(runs)


def test_local_reply_rules_enter_the_prompts_hash() -> None:
    from lens.data.prompts import prompts_hash, register_template
    from lens.models import local_prompt

    before = prompts_hash()
    try:
        register_template("local_reply_rules", local_prompt._REPLY_RULES + "\nBe brief.")
        assert prompts_hash() != before
    finally:
        register_template("local_reply_rules", local_prompt._REPLY_RULES)
    assert prompts_hash() == before


def test_the_fact_judge_is_not_asked_about_pasted_text(tmp_path: Path) -> None:
    data = dataset_dict()
    pasted = ("Day 4: connection pool exhaustion stopped checkout for most of the morning while "
              "geo-lookup latency increased from 200ms to 1,200ms across the fleet.")
    data["scopes"][0]["episodes"][3]["text"] = pasted
    ds = write_dataset(tmp_path / "ds.json", data)
    q1 = "s1_q01_longitudinal"
    stated = ("The connection pool was exhausted (connection pool exhaustion) while geo-lookup "
              "latency increased from 200ms to 1,200ms [s1_ep_004].")
    for answer, expected in ((f"{pasted} [s1_ep_004]", 0.0), (stated, 1.0)):
        root = build_run(tmp_path / f"r{expected}", ds,
                         [record(q1, answer, retrieved=["s1_ep_004"])])
        judge = ScriptedJudge("scripted/judge", fair)
        scores = score_run_sync(root, judge=judge, fact_grader="judge", tiers={1, 2})
        (row,) = scores.questions
        assert row.metrics["fact_recall"] == expected, answer
        fact_checks = [r.messages[-1].content for r in judge.requests
                       if "Criterion:" not in r.messages[-1].content]
        assert all("stopped checkout for most" not in p for p in fact_checks)


def test_lens_score_ignores_a_longitudinal_weight_an_old_run_configured(tmp_path: Path) -> None:
    ds = write_dataset(tmp_path / "ds.json")
    root = build_run(tmp_path / "old", ds, [record("s1_q01_longitudinal", "Latency rose.")])
    store = RunStore.open(root)
    manifest = store.manifest()
    manifest.config["scoring"] = {"weights": {"longitudinal_advantage": 0.15}}
    store.write_manifest(manifest)
    store.close()
    proc = _lens("score", str(root), "--tier", "1")
    assert proc.returncode == 0, proc.stderr
    assert "longitudinal_advantage" in proc.stdout and "ignored" in proc.stdout
    scores = RunScores.model_validate_json((root / SCORES_FILE).read_text())
    assert scores.weights["longitudinal_advantage"] == 0.0
