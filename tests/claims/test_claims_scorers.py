"""lens's scorers on a publisher's answers, below the command line: LoCoMo's F1 through lens's
protocol code, the offline grader's resumable work folder, the seeded sample and the wrong
answers lens builds."""

from __future__ import annotations

from pathlib import Path

import pytest

from lens.claims.items import ClaimItem, ClaimSet, InputFile
from lens.claims.readers import read_mem0
from lens.claims.rescore import locomo_f1, matcher_grades, offline_grades, sample
from lens.claims.wrong_answers import KINDS, build
from lens.models.cache import ModelCache
from lens.scoring.grading.offline_grader import OfflineGrader
from lens.scoring.protocols.locomo import category_f1
from lens.scoring.text.facts import MATCHER_VERSION
from tests.support.cli import Lens, cli_runner

EXCERPT = Path(__file__).parent / "data" / "memobase" / "memobase_eval_0710_excerpt.json"


class CountingModel:
    """Says ``yes`` when the answer repeats the fact's last word; counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def choice_probabilities(self, prompt: str, choices: tuple[str, ...]) -> dict[str, float]:
        self.calls += 1
        answer = prompt.split("<<<", 1)[1].split(">>>", 1)[0].lower()
        fact = prompt.split("Key fact:", 1)[1].split("\n", 1)[0].strip().lower()
        hit = fact.split()[-1] in answer if fact.split() else False
        return dict(zip(choices, (0.9 if hit else 0.1, 0.05, 0.05 if hit else 0.85),
                        strict=True))


def test_locomo_f1_is_the_protocols_per_category_rule() -> None:
    claims = read_mem0([EXCERPT])
    scored = locomo_f1(claims, claims.items)
    for item, value in zip(claims.items, scored.values, strict=True):
        assert value == category_f1(int(item.category or 0), item.answer, item.gold)
    # mem0's stored f1_score is its own token F1 (no stemming): it differs from LoCoMo's.
    differ = [i.id for i, v in zip(claims.items, scored.values, strict=True)
              if abs(i.scores["f1_score"] - (v or 0)) > 1e-9]
    assert differ


def test_the_sample_is_seeded_by_the_files_content() -> None:
    claims = read_mem0([EXCERPT])
    first, again = sample(claims, 10), sample(claims, 10)
    assert first == again and len(first) == 10
    other = ClaimSet(claims.reader, claims.items, (InputFile("x", "0" * 64, 1),))
    assert sample(other, 10) != first
    positions = [claims.items.index(i) for i in first]
    assert positions == sorted(positions)


def test_the_offline_grader_resumes_from_its_work_folder(tmp_path: Path) -> None:
    items = [ClaimItem(f"q{n}", "What did Sam adopt?", "a rescue greyhound named Pixel",
                       answer, "4", (True,), group="c1")
             for n, answer in enumerate(["Sam adopted a greyhound, Pixel, from a rescue.",
                                         "Sam got a new bicycle last spring.",
                                         "They talked about pets at length."])]
    model = CountingModel()
    grader = OfflineGrader(model, model_identity="counting",
                           cache=ModelCache(tmp_path / "grades.sqlite"))
    first = offline_grades(items, grader)
    grader.close()
    assert model.calls > 0 and None not in first.values
    again_model = CountingModel()
    again = OfflineGrader(again_model, model_identity="counting",
                          cache=ModelCache(tmp_path / "grades.sqlite"))
    second = offline_grades(items, again)
    again.close()
    assert again_model.calls == 0 and second.values == first.values
    assert first.condition["scorer"] == "offline-grader"
    assert first.condition["matcher_version"] == MATCHER_VERSION
    assert first.agreement is not None and first.agreement.n == 3


def test_the_matcher_accepts_a_restated_gold_and_refuses_another() -> None:
    items = [ClaimItem("a", "When did Jon lose his job?", "19 January, 2023",
                       "Jon lost it on 19 January 2023.", "2", (True,)),
             ClaimItem("b", "When did Jon lose his job?", "19 January, 2023",
                       "Jon lost it on 19 March 2023.", "2", (True,))]
    s = matcher_grades(items)
    assert s.values == (1.0, 0.0)
    # The matcher's version is in its condition: a new matcher moves the figure.
    assert s.condition["matcher_version"] == MATCHER_VERSION
    assert s.disagreements == (("b", True, False),)


def test_wrong_answers_are_seeded_from_the_data_and_wrong() -> None:
    claims = read_mem0([EXCERPT])
    items = claims.items[:20]
    built = build(items, claims.items, "seed-a")
    assert build(items, claims.items, "seed-a") == built
    assert build(items, claims.items, "seed-b") != built
    assert {w.kind for w in built} == set(KINDS)
    for w in built:
        assert w.answer.strip().lower() != w.item.gold.strip().lower()
    specific = [w for w in built if w.kind == "specific" and "2023" in w.item.gold]
    assert specific and all(w.answer != w.item.gold for w in specific)


@pytest.mark.local_model
def test_the_offline_grader_with_the_local_model_through_the_cli(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("llama_cpp", reason="the local model is not installed (extra 'local')")
    lens: Lens = cli_runner(tmp_path, monkeypatch, capsys)
    r = lens("claims", "check", str(EXCERPT), "--reader", "memobase", "--grader", "local",
             "--limit", "4", "--no-leniency", "--work", "work")
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("| offline grader"))
    assert "unknown" not in line
    assert (tmp_path / "work" / "offline-grades.sqlite").exists()
