"""The third-party graded sources (beside the project, never in it) and the per-source agreement
script: each source loads with its judge's verdicts, the script measures each source with a
threshold chosen on the others, and a missing source is named, not skipped silently."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.grader_agreement import choose_threshold, measured, saved_path, with_intervals
from bench.grader_sources import (
    LENS_V2_DIR,
    MEMOBASE_DIR,
    SOURCES_DIR,
    ZEP_DIR,
    GradedFact,
    load_all,
    sample,
)

ROOT = Path(__file__).resolve().parents[2]


def _need_sources() -> None:
    memobase = (SOURCES_DIR / "memobase-locomo" if (SOURCES_DIR / "memobase-locomo").exists()
                else MEMOBASE_DIR)
    for path in (SOURCES_DIR / "mab", memobase, LENS_V2_DIR / "grading_tasks.jsonl",
                 ZEP_DIR / "zep_locomo_grades.json"):
        if not path.exists():
            pytest.skip(f"the graded third-party sources are not beside the project ({path})")


def test_every_source_loads_with_its_verdicts_and_second_judge() -> None:
    _need_sources()
    found, missing = load_all()
    assert missing == []
    sizes = {name: len(rows) for name, rows in found.items()}
    assert sizes == {"lens-v2": 422, "mab-longmemeval": 60, "mab-ruler-qa": 200,
                     "memobase-locomo": 1540, "zep-locomo": 1540}
    assert {r.label for r in found["zep-locomo"]} == {0.0, 1.0}
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
    # Thresholds the other sources cannot tell apart: the one nearest the shipped threshold,
    # not the lowest of them.
    assert choose_threshold(sources, saved, "b") == 0.75
    assert choose_threshold(sources, saved, "b", prefer=0.85) == 0.85
    assert choose_threshold(sources, saved, "a", prefer=0.5) == 0.3


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
         "--zep", str(tmp_path / "none"), "--memobase", str(tmp_path / "none"),
         "--work", str(tmp_path / "w")],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 2
    assert "source missing: lens-v2:" in out.stdout and "memobase-locomo" in out.stdout
    assert "zep-locomo" in out.stdout
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


def test_a_finer_date_states_a_coarser_gold_and_not_the_reverse() -> None:
    from bench.grader_variants import finer_date_states

    assert finer_date_states("May 2023", "On 27 May 2023.")
    assert finer_date_states("May, 2023", "May 27th, 2023")
    assert finer_date_states("in 2022", "It was 2022-07-14.")
    assert finer_date_states("2022", "July 2022")
    # The reverse, another month, a bare year for a month gold: not stated.
    assert not finer_date_states("27 May 2023", "May 2023")
    assert not finer_date_states("May 2023", "27 June 2023")
    assert not finer_date_states("May 2023", "2023")
    assert not finer_date_states("May 2023", "May 2023")  # the same date: the matcher's call
    assert not finer_date_states("a doggy playdate", "27 May 2023")


def test_the_split_variant_leaves_exact_golds_to_the_matcher() -> None:
    from bench.grader_variants import variant

    rows = [GradedFact("s", "d", "d", "q", "May 2023", "27 May 2023", 1.0),
            GradedFact("s", "p", "p", "q", "Glad", "Joyful", 1.0)]
    matcher = {"d": {"id": "d", "grade": 0.0}, "p": {"id": "p", "grade": 0.0}}
    either = {"d": {"id": "d", "grade": 1.0, "method": "model", "p_present": 0.9},
              "p": {"id": "p", "grade": 1.0, "method": "model", "p_present": 0.9}}
    saved = {"matcher": matcher, "either": either}
    split = variant("split", rows, saved)
    assert split["d"]["grade"] == 0.0 and split["p"] == either["p"]
    assert variant("split-dates", rows, saved)["d"]["grade"] == 1.0
    assert variant("matcher-dates", rows, saved) == {"d": {"id": "d", "grade": 1.0},
                                                     "p": {"id": "p", "grade": 0.0}}


def test_a_run_cut_short_has_graded_every_source_alike() -> None:
    from bench.grader_agreement import interleaved

    rows = [GradedFact(s, f"{s}{i}", f"{s}{i}", "q", "f", "x" * (10 - i), 1.0)
            for s in ("a", "b") for i in range(3)]
    order = interleaved(rows)
    assert [r.source for r in order] == ["a", "b"] * 3
    assert [r.id for r in order[:2]] == ["a2", "b2"]  # the shortest answers first


def _saved_grades(work: Path, name: str, rows: list[GradedFact], read: Any) -> None:
    saved_path(work, name).write_text("".join(json.dumps({"id": r.id, **read(r)}) + "\n"
                                                for r in rows))


def test_the_judge_and_the_variants_are_reported_through_the_command_line(
        tmp_path: Path) -> None:
    # The model's grades come from --work (as a resumed run reads them), so no model runs.
    _need_sources()
    found, _ = load_all()
    picked = {name: sample(found[name], 6) for name in ("mab-ruler-qa", "memobase-locomo")}
    rows = [r for name_rows in picked.values() for r in name_rows]
    # The slow judge reached 4 answers of each source: --subset-of compares every grader there.
    _saved_grades(tmp_path, "judge-local", [r for rs in picked.values() for r in rs[:4]],
                  lambda r: {"grade": r.label, "raw": "{}"})
    _saved_grades(tmp_path, "either", rows,
                  lambda r: {"grade": r.label, "method": "model", "p_present": r.label})
    _saved_grades(tmp_path, "matcher", rows, lambda r: {"grade": 0.0})
    out = subprocess.run(
        [sys.executable, "-m", "bench.grader_agreement", "--report-only", "--answers", "6",
         "--graders", "judge-local,either,split,matcher-dates,split-dates",
         "--only", "mab-ruler-qa,memobase-locomo", "--subset-of", "judge-local",
         "--work", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert out.returncode == 0, out.stderr
    for source in ("mab-ruler-qa", "memobase-locomo"):
        assert f"{source}: 4 facts of 4 answers" in out.stdout
        assert f"| {source} | judge-local | — | 4 | " in out.stdout
        assert f"| {source} | either | 0.60 (shipped) | 4 |" in out.stdout
        for name in ("split", "matcher-dates", "split-dates"):
            assert f"| {source} | {name} |" in out.stdout
    # A judge that agrees with the source's judge on every answer (of both verdicts).
    assert "| memobase-locomo | judge-local | — | 4 | 1.00 [1.00, 1.00] |" in out.stdout


@pytest.mark.local_model
def test_the_judge_and_the_ensemble_grade_with_the_local_model(tmp_path: Path) -> None:
    _need_sources()
    out = subprocess.run(
        [sys.executable, "-m", "bench.grader_agreement", "--answers", "2",
         "--graders", "judge-local,either,split", "--only", "mab-ruler-qa",
         "--threads", "2", "--work", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=1800, check=False)
    assert out.returncode == 0, out.stderr
    judged = [json.loads(line) for line in
              saved_path(tmp_path, "judge-local").read_text().splitlines()]
    assert len(judged) == 2 and all(j["grade"] in (0.0, 0.5, 1.0) for j in judged)
    assert "| mab-ruler-qa | judge-local |" in out.stdout
    assert "| mab-ruler-qa | split |" in out.stdout


def test_the_local_judge_keeps_its_probability_of_yes() -> None:
    from bench.fact_grading import judge_probabilities
    from lens.scoring.judging.judge_prompts import local_fact_verdict

    raw = local_fact_verdict({"yes": 0.55, "partly": 0.25, "no": 0.2})
    assert judge_probabilities(raw) == {"method": "model", "p_yes": 0.55, "p_partly": 0.25,
                                        "p_no": 0.2}
    # A verdict the judge wrote (a hosted judge) has no probability to read again.
    assert judge_probabilities('{"verdict": "yes"}') == {}
    assert judge_probabilities("not json") == {} and judge_probabilities(None) == {}


def test_the_yes_variants_credit_the_matcher_first_and_read_the_judge_for_the_rest() -> None:
    from bench.grader_agreement import reading, shipped_at
    from bench.grader_variants import variant
    from lens.scoring.grading.offline_grader import PRESENT_AT
    from lens.scoring.judging.judge_prompts import LOCAL_YES_AT

    rows = [GradedFact("s", "m", "m", "q", "Paris", "It was Paris.", 1.0),
            GradedFact("s", "p", "p", "q", "Glad", "She felt joyful about it.", 1.0),
            GradedFact("s", "d", "d", "q", "May 2023", "Sometime in spring.", 0.0)]
    matcher = {"m": {"id": "m", "grade": 1.0}, "p": {"id": "p", "grade": 0.0},
               "d": {"id": "d", "grade": 0.0}}
    judge = {r.id: {"id": r.id, "grade": 1.0, "method": "model", "p_yes": 0.7} for r in rows}
    judge["m"] = {"id": "m", "grade": 0.0, "method": "model", "p_yes": 0.1}
    saved = {"matcher": matcher, "judge-local": judge}
    both = variant("matcher+yes", rows, saved)
    assert both["m"]["grade"] == 1.0 and both["p"] == judge["p"] and both["d"] == judge["d"]
    assert reading(both["p"], 0.75) == 0.0 and reading(both["p"], 0.6) == 1.0
    cheap = variant("local+yes", rows, saved)
    # The offline grader's cheap checks settle the bare date the matcher misses as a miss.
    assert cheap["m"]["grade"] == 1.0 and cheap["p"] == judge["p"]
    assert cheap["d"] == {"id": "d", "grade": 0.0, "method": "matcher"}
    assert shipped_at("matcher+yes") == shipped_at("judge-local") == LOCAL_YES_AT
    assert shipped_at("local") == shipped_at("split") == PRESENT_AT


def test_the_judge_read_by_p_yes_is_reported_at_both_thresholds(tmp_path: Path) -> None:
    _need_sources()
    found, _ = load_all()
    picked = {name: sample(found[name], 6) for name in ("mab-ruler-qa", "memobase-locomo")}
    rows = [r for name_rows in picked.values() for r in name_rows]
    _saved_grades(tmp_path, "judge-local", rows,
                  lambda r: {"grade": r.label, "method": "model", "p_yes": 0.3 + 0.4 * r.label})
    _saved_grades(tmp_path, "matcher", rows, lambda r: {"grade": 0.0})
    out = subprocess.run(
        [sys.executable, "-m", "bench.grader_agreement", "--report-only", "--answers", "6",
         "--graders", "judge-local,matcher+yes,local+yes",
         "--only", "mab-ruler-qa,memobase-locomo", "--work", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert out.returncode == 0, out.stderr
    for source in ("mab-ruler-qa", "memobase-locomo"):
        for name in ("judge-local", "matcher+yes", "local+yes"):
            assert f"| {source} | {name} | 0.60 (shipped) |" in out.stdout
            assert (f"| {source} | {name} | " in out.stdout
                    and "(chosen on the others)" in out.stdout)
    # P(yes) 0.7 for every answer its judge accepted, 0.3 for the others: 0.60 agrees fully.
    assert ("| memobase-locomo | judge-local | 0.60 (shipped) | 6 | 1.00 [1.00, 1.00] |"
            in out.stdout)


def test_a_fact_limit_takes_whole_answers_in_the_samples_order() -> None:
    from bench.fact_grading import first_answers

    # The file lists one scope's answers after another; a limit must not take one scope.
    rows = [{"id": f"{scope}-{i}#{j}", "answer_id": f"{scope}-{i}"}
            for scope in ("a", "b", "c") for i in range(6) for j in range(3)]
    kept = first_answers(rows, 10)
    answers = {r["answer_id"] for r in kept}
    assert len(kept) == 9 and len(answers) == 3
    assert all(sum(r["answer_id"] == a for r in kept) == 3 for a in answers)
    graded = [GradedFact("s", r["id"], r["answer_id"], "q", "f", "x", 1.0) for r in rows]
    assert answers == {r.answer_id for r in sample(graded, 3)}
    assert len({r["answer_id"].split("-")[0] for r in first_answers(rows, 30)}) > 1
    # One answer is kept even when its facts alone pass the limit.
    assert len(first_answers(rows, 1)) == 3


def test_the_matcher_keeps_the_grades_of_rows_outside_its_run(tmp_path: Path) -> None:
    from bench.grader_agreement import grade_matcher

    path = tmp_path / "matcher.jsonl"
    path.write_text(json.dumps({"id": "other#0", "grade": 1.0}) + "\n")
    rows = [GradedFact("s", "a#0", "a", "q", "blue", "It is blue.", 1.0),
            GradedFact("s", "b#0", "b", "q", "red", "It is green.", 0.0)]
    grade_matcher(rows, path, 1)
    saved = {s["id"]: s["grade"] for s in map(json.loads, path.read_text().splitlines())}
    assert saved == {"other#0": 1.0, "a#0": 1.0, "b#0": 0.0}


def test_lens_v2_is_reported_scope_by_scope_at_the_shipped_threshold() -> None:
    from bench.fact_grading import half
    from bench.grader_agreement import by_scope

    rows = [GradedFact("lens-v2", f"grade-{scope}-policy_core-q{i}#0",
                       f"grade-{scope}-policy_core-q{i}", "q", "f", "x", float(i % 2))
            for scope in ("alpha_01", "beta_02") for i in range(12)]
    held = [r for r in rows if half(r.answer_id) == "held-out"]
    # The model's P(yes) is 0.55 on every fact: below the shipped 0.6, so nothing is credited
    # (a threshold chosen on the scope itself would credit everything).
    judge = {r.id: {"id": r.id, "grade": 0.0, "method": "model", "p_yes": 0.55} for r in rows}
    table = by_scope(rows, {"judge-local": judge})
    for scope in ("alpha_01", "beta_02"):
        n = sum(r.answer_id.split("-")[1] == scope for r in held)
        assert f"| {scope} | judge-local | 0.60 (shipped) | {n} | {n} | " in table
    assert "recall" in table and " 0.00 [0.00, 0.00] |" in table


def test_version_3_reads_a_long_answer_by_its_support_and_its_own_threshold() -> None:
    """The shipped variant (``matcher+yes``) settles a long answer without the fact's words as
    unsupported and reads one that has them at LONG_PRESENT_AT, kept through a reading at
    another threshold; ``offline-v2`` reads both at the one threshold, as version 2 did."""
    from bench.grader_agreement import reading
    from bench.grader_variants import variant
    from lens.scoring.grading.offline_grader import LONG_ANSWER_CHARS, LONG_PRESENT_AT

    fact = "the keyword filter never triggered because the student avoided trigger phrases"
    filler = "The tutor logged each session and answered questions on essay structure. " * 25
    assert len(filler) >= LONG_ANSWER_CHARS
    rows = [GradedFact("s", "bare", "bare", "q", fact, filler, 0.0),
            GradedFact("s", "held", "held", "q", fact,
                       filler + "No filter fired: the student avoided every banned word.", 1.0)]
    p = LONG_PRESENT_AT + 0.01
    judge = {r.id: {"id": r.id, "grade": 1.0, "method": "model", "p_yes": p} for r in rows}
    v3 = variant("matcher+yes", rows, {"judge-local": judge})
    assert v3["bare"] == {"id": "bare", "grade": 0.0, "method": "unsupported"}
    assert v3["held"]["method"] == "model-long" and v3["held"]["grade"] == 1.0
    assert reading(v3["held"], 0.9) == 1.0
    v2 = variant("offline-v2", rows, {"judge-local": judge})
    assert v2 == judge and reading(v2["bare"], 0.9) == 0.0


def test_the_gate_bench_reads_the_development_half_and_never_the_held_out(
        tmp_path: Path) -> None:
    _need_sources()
    from bench.fact_grading import half

    found, _ = load_all()
    v2 = sample(found["lens-v2"], 20)
    rows = [*v2, *sample(found["mab-ruler-qa"], 6)]
    _saved_grades(tmp_path, "judge-local", rows,
                  lambda r: {"grade": r.label, "method": "model", "p_yes": 0.3 + 0.4 * r.label})
    out = subprocess.run([sys.executable, "-m", "bench.grader_gate", "--work", str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert out.returncode == 0, out.stderr
    dev = sum(half(r.answer_id) == "dev" for r in v2)
    assert f"lens-v2 ({dev}) kappa / r" in out.stdout
    assert "| lens-v2 (held-out half) |" in out.stdout and "| version 2 |" in out.stdout
