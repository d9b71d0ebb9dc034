"""Each strict check fails on data built to break it, passes on data that keeps it, and is
reported by ``lens datasets validate --strict`` with the file and the JSON path."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from lens.data.datagen.checks import DatasetChecker, fact_in_text, strict_problems, tokens
from lens.data.datagen.generate import ScopeSpec, generate_scope
from lens.data.dataset import Dataset
from lens.data.dataset_check import validate_raw

ROOT = Path(__file__).resolve().parents[2]

TEXTS = [
    "2024-03-01 report: geo-lookup p99 210 ms; fraud-check retries 40 per hour.",
    "2024-03-02 report: CHG-4821 lowered the pool. geo-lookup p99 260 ms.",
    "2024-03-03 report: geo-lookup p99 330 ms; fraud-check retries 410 per hour.",
    "2024-03-04 report: geo-lookup p99 420 ms; billing total $9,740.00 for the day.",
]


def _data(questions: list[dict[str, Any]]) -> dict[str, Any]:
    eps = [{"episode_id": f"e{i + 1}", "scope_id": "s", "timestamp": f"2024-03-0{i + 1}T08:00:00",
            "text": t} for i, t in enumerate(TEXTS)]
    return {"scopes": [{"scope_id": "s", "episodes": eps}], "questions": questions}


def _q(qid: str, qtype: str, cp: int, facts: list[str], refs: list[str], prompt: str = "p?",
       answer: str = "a") -> dict[str, Any]:
    return {"question_id": qid, "scope_id": "s", "checkpoint_after": cp, "question_type": qtype,
            "prompt": prompt, "ground_truth": {"canonical_answer": answer,
                                               "required_evidence_refs": refs,
                                               "key_facts": facts}}


def _ds(questions: list[dict[str, Any]]) -> Dataset:
    ds, problems = validate_raw(_data(questions), "t.json")
    assert ds is not None and problems == []
    return ds


def test_fact_matching_tolerates_case_punctuation_and_number_format() -> None:
    assert fact_in_text("$9,740", TEXTS[3])
    assert fact_in_text("9740", TEXTS[3])
    assert fact_in_text("chg-4821", TEXTS[1])
    assert fact_in_text("420 MS", TEXTS[3])
    assert not fact_in_text("42 ms", TEXTS[3])  # no partial numbers
    assert not fact_in_text("421 ms", TEXTS[3])  # no value tolerance: the text must say it
    assert not fact_in_text("retries 40", TEXTS[2])
    assert tokens("Ward 4B, 12.50 mmol/L") == ["ward", "4", "b", "12.5", "mmol", "l"]


def test_spread_check_flags_a_synthesis_question_one_episode_answers() -> None:
    bad = _q("q1", "longitudinal", 4, ["CHG-4821", "260 ms"], ["e2"])
    problems = strict_problems(_ds([bad]), "t.json")
    assert len(problems) == 1
    assert problems[0].location == "$.questions[0].ground_truth.key_facts"
    assert "'e2' alone holds 100%" in problems[0].message


def test_spread_check_passes_facts_spread_over_episodes() -> None:
    good = _q("q1", "longitudinal", 4, ["CHG-4821", "210 ms", "420 ms"], ["e1", "e2", "e4"])
    ds = _ds([good])
    assert strict_problems(ds, "t.json") == []
    assert DatasetChecker(ds).spread(ds.questions[0]).share == 1 / 3


def test_spread_check_counts_only_episodes_visible_at_the_checkpoint() -> None:
    # e3 holds both facts but is streamed after checkpoint 2; e1 and e2 hold one each.
    q = _q("q1", "temporal", 2, ["210 ms", "CHG-4821"], ["e1", "e2"])
    data = _data([q])
    data["scopes"][0]["episodes"][2]["text"] += " Recap: CHG-4821, 210 ms."
    ds, _ = validate_raw(data, "t.json")
    assert ds is not None
    assert strict_problems(ds, "t.json") == []
    late = dict(q, checkpoint_after=3)
    ds3, _ = validate_raw(dict(data, questions=[late]), "t.json")
    assert ds3 is not None
    assert "'e3' alone holds 100%" in strict_problems(ds3, "t.json")[0].message


def test_spread_limit_is_eighty_percent() -> None:
    facts = ["210 ms", "260 ms", "330 ms", "420 ms", "CHG-4821"]
    q = _q("q1", "severity_assessment", 4, facts, ["e1", "e2", "e3", "e4"])
    assert strict_problems(_ds([q]), "t.json") == []  # e2 holds 2 of 5 = 40%
    text = TEXTS[1] + " 330 ms 420 ms"
    data = _data([q])
    data["scopes"][0]["episodes"][1]["text"] = text  # now e2 holds 4 of 5 = 80%
    ds, _ = validate_raw(data, "t.json")
    assert ds is not None
    assert any("80%" in p.message for p in strict_problems(ds, "t.json"))


def test_null_hypothesis_controls_may_come_from_one_episode() -> None:
    q = _q("q1", "null_hypothesis", 4, ["420 ms"], ["e4"])
    assert strict_problems(_ds([q]), "t.json") == []


def test_stated_check_flags_a_fact_missing_from_its_refs() -> None:
    q = _q("q1", "null_hypothesis", 4, ["999 ms"], ["e4"])
    problems = strict_problems(_ds([q]), "t.json")
    assert [p.location for p in problems] == ["$.questions[0].ground_truth.key_facts[0]"]
    assert "not stated in any of the required refs" in problems[0].message
    # Stated elsewhere in the scope is not enough: it must be in a required ref.
    q2 = _q("q2", "null_hypothesis", 4, ["210 ms"], ["e4"])
    assert len(strict_problems(_ds([q2]), "t.json")) == 1


def test_a_key_fact_stated_in_the_prompt_is_flagged() -> None:
    q = _q("q1", "negative", 4, ["CHG-4821", "210 ms", "420 ms"], ["e1", "e2", "e4"],
           prompt="Did chg 4821 cause the rise?")
    problems = strict_problems(_ds([q]), "t.json")
    assert [p.location for p in problems] == ["$.questions[0].ground_truth.key_facts[0]"]
    assert "stated in the prompt itself" in problems[0].message


def test_synthesis_question_without_key_facts_is_flagged() -> None:
    q = _q("q1", "negative", 4, [], ["e1"])
    problems = strict_problems(_ds([q]), "t.json")
    assert len(problems) == 1 and "no key facts" in problems[0].message


def test_visible_check_flags_evidence_from_after_the_checkpoint() -> None:
    q = _q("q1", "null_hypothesis", 2, ["420 ms"], ["e4"])
    # Refused by the plain validator already (no memory system can hold it when asked); the
    # strict check says the same of a dataset built without the validator.
    ds, problems = validate_raw(_data([q]), "t.json")
    assert ds is not None and [p.location for p in problems] == [
        "$.questions[0].ground_truth.required_evidence_refs[0]"]
    assert "after the question's checkpoint (2)" in problems[0].message
    problems = strict_problems(ds, "t.json")
    assert any(p.location == "$.questions[0].ground_truth.required_evidence_refs[0]"
               and "after checkpoint 2" in p.message for p in problems)


def test_changes_check_flags_an_answer_that_ignores_new_evidence() -> None:
    early = _q("q1", "longitudinal", 2, ["210 ms", "CHG-4821"], ["e1", "e2"],
               prompt="How is geo-lookup doing?", answer="Stable at 210 ms.")
    late_same = _q("q2", "longitudinal", 4, ["210 ms", "420 ms", "CHG-4821"],
                   ["e1", "e2", "e4"], prompt="How is geo-lookup doing?",
                   answer="Stable at 210 ms.")
    problems = strict_problems(_ds([early, late_same]), "t.json")
    assert len(problems) == 1
    assert problems[0].location == "$.questions[1].ground_truth.canonical_answer"
    late_new = dict(late_same, ground_truth=dict(late_same["ground_truth"],
                                                 canonical_answer="Rising to 420 ms."))
    assert strict_problems(_ds([early, late_new]), "t.json") == []
    # A repeat that relies on no new evidence may keep its answer.
    late_old_refs = _q("q3", "longitudinal", 4, ["210 ms", "CHG-4821"], ["e1", "e2"],
                       prompt="How is geo-lookup doing?", answer="Stable at 210 ms.")
    assert strict_problems(_ds([early, late_old_refs]), "t.json") == []


def test_checks_catch_a_broken_generated_question() -> None:
    scope, questions = generate_scope(ScopeSpec("finance", seed=21))
    q = next(q for q in questions if q["question_type"] == "counterfactual")
    # Point the question at one episode only: its facts are no longer stated in its refs.
    q["ground_truth"]["required_evidence_refs"] = q["ground_truth"]["required_evidence_refs"][:1]
    ds, problems = validate_raw({"scopes": [scope], "questions": questions}, "g.json")
    assert ds is not None and problems == []
    found = strict_problems(ds, "g.json")
    assert found and all("not stated" in p.message for p in found)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lens", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def test_validate_strict_cli_reports_file_and_path(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_data([_q("q1", "longitudinal", 4, ["CHG-4821", "260 ms"],
                                         ["e2"])])))
    plain = _cli("datasets", "validate", str(path))
    assert plain.returncode == 0 and "ok" in plain.stdout
    strict = _cli("datasets", "validate", "--strict", str(path))
    assert strict.returncode == 2
    assert f"{path}: $.questions[0].ground_truth.key_facts: episode 'e2' alone holds" \
        in strict.stdout
