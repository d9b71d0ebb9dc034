"""The generator: determinism across processes, every domain and question type, storyline
properties, and the CLI's user errors."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from lens.data.datagen.checks import strict_problems
from lens.data.datagen.domains import DOMAINS
from lens.data.datagen.generate import ScopeSpec, build_scope, generate_dataset, generate_scope
from lens.data.datagen.storyline import Days, build_storyline, seeded_rng
from lens.data.dataset import SYNTHESIS_TYPES, QuestionType
from lens.data.dataset_check import validate_raw

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lens", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def test_same_seed_gives_byte_identical_files_in_two_processes(tmp_path: Path) -> None:
    args = ["datasets", "generate", "--domain", "ops,clinical,finance,support", "--seed", "11",
            "--episodes", "40", "--signal-episodes", "16"]
    a = _cli(*args, "--out", str(tmp_path / "a" / "gen.json"), cwd=ROOT)
    b = _cli(*args, "--out", str(tmp_path / "b" / "gen.json"), cwd=ROOT)
    assert a.returncode == 0, a.stderr
    assert b.returncode == 0, b.stderr
    ba = (tmp_path / "a" / "gen.json").read_bytes()
    assert ba == (tmp_path / "b" / "gen.json").read_bytes()
    c = _cli(*[x if x != "11" else "12" for x in args], "--out",
             str(tmp_path / "c" / "gen.json"), cwd=ROOT)
    assert c.returncode == 0, c.stderr
    assert (tmp_path / "c" / "gen.json").read_bytes() != ba


@pytest.mark.parametrize("domain", sorted(DOMAINS))
def test_every_domain_generates_a_strictly_valid_scope(domain: str) -> None:
    scope, questions = generate_scope(ScopeSpec(domain, seed=5))
    ds, problems = validate_raw({"scopes": [scope], "questions": questions}, domain)
    assert ds is not None and problems == []
    assert strict_problems(ds, domain) == []
    assert len(scope["episodes"]) == 120
    assert len(questions) >= 24
    assert {q.question_type for q in ds.questions} == set(QuestionType)
    kinds = Counter(e["meta"]["episode_type"] for e in scope["episodes"])
    assert kinds == {"signal": 40, "distractor": 79, "summary": 1}
    words = [len(e["text"].split()) for e in scope["episodes"]]
    assert sum(words) / len(words) > 120


def test_compact_plan_asks_all_ten_types_about_ten_questions() -> None:
    scope, questions = generate_scope(ScopeSpec("support", seed=3, episodes=30,
                                                signal_episodes=14, style="short",
                                                plan="compact"))
    assert {q["question_type"] for q in questions} == {t.value for t in QuestionType}
    assert 10 <= len(questions) <= 12
    assert max(len(e["text"].split()) for e in scope["episodes"]) < 150


def test_null_hypothesis_controls_have_key_facts_and_one_ref() -> None:
    _, questions = generate_scope(ScopeSpec("finance", seed=1))
    nulls = [q for q in questions if q["question_type"] == "null_hypothesis"]
    assert len(nulls) == 3
    for q in nulls:
        assert len(q["ground_truth"]["key_facts"]) == 1
        assert len(q["ground_truth"]["required_evidence_refs"]) == 1


def test_synthesis_questions_need_several_episodes() -> None:
    _, questions = generate_scope(ScopeSpec("ops", seed=2))
    for q in questions:
        if QuestionType(q["question_type"]) in SYNTHESIS_TYPES:
            assert len(q["ground_truth"]["required_evidence_refs"]) >= 2, q["question_id"]
            assert len(q["ground_truth"]["key_facts"]) >= 3, q["question_id"]


def test_same_prompt_early_and_late_has_different_answers() -> None:
    _, questions = generate_scope(ScopeSpec("clinical", seed=4))
    series: dict[str, list[dict]] = defaultdict(list)
    for q in questions:
        series[q["prompt"]].append(q)
    repeated = {p: qs for p, qs in series.items() if len({q["checkpoint_after"] for q in qs}) > 1}
    types = {qs[0]["question_type"] for qs in repeated.values()}
    assert {"longitudinal", "temporal", "severity_assessment", "action_recommendation",
            "evidence_sufficiency"} <= types
    for qs in repeated.values():
        answers = [q["ground_truth"]["canonical_answer"] for q in qs]
        assert len(set(answers)) == len(answers)
        facts = [tuple(q["ground_truth"]["key_facts"]) for q in qs]
        assert len(set(facts)) == len(facts)


def test_storyline_crosses_its_threshold_once_and_the_misreport_is_corrected() -> None:
    for domain, make in DOMAINS.items():
        cast = make(seeded_rng("t", domain))
        story = build_storyline(cast, 40, seeded_rng("s", domain))
        d = story.days
        before = story.primary[: d.breach]
        after = story.primary[d.breach:]
        assert all(v < cast.threshold for v in before), domain
        assert all(v > cast.threshold for v in after), domain
        climb = story.primary[d.onset:]
        assert all(b >= a for a, b in itertools.pairwise(climb)), domain
        assert story.reported[d.wrong] == story.wrong_value != story.primary[d.wrong]
        assert story.wrong_value > cast.threshold  # the misreport looks like an early breach
        assert [i for i, (r, p) in enumerate(zip(story.reported, story.primary, strict=True))
                if r != p] == [d.wrong]


def test_misreported_figure_is_corrected_in_a_later_episode() -> None:
    scope, questions = generate_scope(ScopeSpec("ops", seed=9))
    corr = [e for e in scope["episodes"] if "Correction to the" in e["text"]]
    assert len(corr) == 1
    q = next(q for q in questions if q["meta"]["plan"] == "distractor_resistance/correction")
    assert corr[0]["episode_id"] in q["ground_truth"]["required_evidence_refs"]
    stale = [e for e in scope["episodes"] if e["meta"]["episode_type"] == "summary"]
    assert len(stale) == 1 and "data snapshot of" in stale[0]["text"]


def test_episode_ids_and_text_do_not_leak_the_episode_kind() -> None:
    scope, _ = build_scope(ScopeSpec("support", seed=8))
    for e in scope["episodes"]:
        assert "signal" not in e["episode_id"] and "distractor" not in e["episode_id"]
        assert "signal" not in e["text"].lower()


def test_days_plan_rejects_too_few_periods() -> None:
    with pytest.raises(ValueError):
        Days.plan(10)
    d = Days.plan(14)
    assert d.onset < d.early < d.wrong < d.corrected <= d.herring < d.mid < d.breach < d.late


def test_multi_scope_dataset_has_unique_ids() -> None:
    data = generate_dataset([ScopeSpec("ops", 1, 0, 30, 14), ScopeSpec("ops", 1, 1, 30, 14)],
                            "two")
    ds, problems = validate_raw(data, "two")
    assert problems == [] and ds is not None
    assert ds.scopes[0].scope_id != ds.scopes[1].scope_id
    texts = [e.text for s in ds.scopes for e in s.episodes]
    assert texts[:30] != texts[30:]
    assert json.loads(json.dumps(data)) == data


@pytest.mark.parametrize("args, needle", [
    (["--domain", "weather"], "unknown domain 'weather'"),
    (["--domain", "ops", "--signal-episodes", "8"], "--signal-episodes must be at least 14"),
    (["--domain", "ops", "--episodes", "20", "--signal-episodes", "20"], "must exceed"),
])
def test_generate_user_errors_exit_2_and_write_nothing(tmp_path: Path, args: list[str],
                                                        needle: str) -> None:
    out = tmp_path / "x.json"
    r = _cli("datasets", "generate", "--seed", "1", *args, "--out", str(out), cwd=ROOT)
    assert r.returncode == 2
    assert needle in r.stderr
    assert "Traceback" not in r.stderr
    assert not out.exists()


def test_signal_episodes_default_to_a_third_of_the_episodes(tmp_path: Path) -> None:
    out = tmp_path / "small.json"
    r = _cli("datasets", "generate", "--domain", "clinical", "--seed", "3", "--episodes", "30",
             "--out", str(out), cwd=ROOT)
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    kinds = Counter(e["meta"]["episode_type"] for e in data["scopes"][0]["episodes"])
    assert kinds["signal"] == 14 and sum(kinds.values()) == 30
    assert data["meta"]["generator"]["scopes"][0]["signal_episodes"] == 14
