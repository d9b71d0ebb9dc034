"""The LoCoMo protocol on a hand-built LoCoMo file: F1 (normalisation, stemming, the multi-answer
and open-domain rules, the adversarial rule) and J, each checked against values worked out by
hand from the published definitions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lens.scoring.protocols.locomo import (
    LocomoProtocol,
    category_f1,
    multi_answer_f1,
    normalize,
    token_f1,
    tokens,
)
from lens.scoring.scorer import score_run_sync
from tests.protocols.builders import (
    LOCOMO_FAITHFUL,
    LOCOMO_NOT_MENTIONED,
    PolicyJudge,
    imported,
    stored_run,
)


def test_normalisation_drops_commas_punctuation_articles_and_and() -> None:
    assert normalize("The cat, a dog and AN owl!") == "cat dog owl"
    assert normalize("Rock,n'roll") == "rocknroll"


def test_porter_stemming_makes_word_forms_match() -> None:
    assert tokens("hiking hikes") == ["hike", "hike"]
    # "has" stems to "ha": by hand, the answer has 5 tokens, 1 shared with the gold "dog".
    assert tokens("She has a dog named Rex") == ["she", "ha", "dog", "name", "rex"]


def test_f1_by_hand() -> None:
    # P = 1/5, R = 1/1 -> F1 = 2 * 0.2 / 1.2 = 1/3
    assert token_f1("She has a dog named Rex", "a dog") == pytest.approx(1 / 3)
    # P = 3/4 (on, 7, may, 2023), R = 3/3 -> 6/7
    assert token_f1("On 7 May 2023.", "7 May 2023") == pytest.approx(6 / 7)
    assert token_f1("", "a dog") == 0.0
    # Multi-answer: gold parts painting (best 0) and hiking (best 1) -> 0.5
    assert multi_answer_f1("hiking, swimming", "painting, hiking") == pytest.approx(0.5)
    # Open-domain keeps the gold before ';': "likely yes" -> like, ye; answer "yes" -> ye:
    # P = 1, R = 1/2 -> 2/3
    assert category_f1(3, "yes", "Likely yes; she enjoys art") == pytest.approx(2 / 3)
    assert category_f1(5, "That is NOT mentioned.", "") == 1.0
    assert category_f1(5, "No information available", "") == 1.0
    assert category_f1(5, "He went to Paris.", "") == 0.0


LOCOMO_J = {"What pet": '{"reason": "same pet", "label": "CORRECT"}',
            "What does Mel": '{"reason": "misses painting", "label": "WRONG"}',
            "When did Rex": '{"label": "CORRECT"}',
            # Not JSON: read from the one label word it holds.
            "Would Mel": "The answer agrees with the gold. CORRECT"}


def locomo_judge(prompt: str) -> str:
    generated = prompt.split("Generated answer: ", 1)[1].split("\n", 1)[0]
    if "not mentioned" in generated.lower():
        return '{"label": "WRONG"}'
    for start, reply in LOCOMO_J.items():
        if f"Question: {start}" in prompt:
            return reply
    raise AssertionError("the adversarial category must not reach the judge")


def test_locomo_protocol_scores_by_hand(tmp_path: Path) -> None:
    ds = imported(tmp_path, "locomo")
    run = stored_run(tmp_path, ds, {"faithful": LOCOMO_FAITHFUL,
                                    "not_mentioned": LOCOMO_NOT_MENTIONED})
    judge = PolicyJudge("judge-a", locomo_judge)
    scores = score_run_sync(run, judge=judge, protocol="locomo")
    assert len(judge.requests) == 8  # 4 questions x 2 arms; adversarial ones are not judged
    assert all(r.temperature == 0.0 and len(r.messages) == 1 for r in judge.requests)
    faithful = scores.aggregates["adapter"]["faithful"]
    f1s = [1 / 3, 0.5, 6 / 7, 2 / 3, 1.0, 0.0]
    assert faithful["locomo_f1"] == pytest.approx(sum(f1s) / 6)  # 0.5595
    assert faithful["locomo_f1_no_adversarial"] == pytest.approx(sum(f1s[:4]) / 4)
    assert faithful["locomo_j"] == pytest.approx(3 / 4)
    assert faithful["locomo_not_mentioned_rate"] == 0.0
    table = scores.aggregates["adapter/category"]
    keys = [k for k in table if k.startswith("faithful|")]
    # The paper's order and naming.
    assert keys == ["faithful|single-hop", "faithful|multi-hop", "faithful|temporal",
                    "faithful|open-domain", "faithful|adversarial"]
    assert table["faithful|adversarial"]["locomo_f1"] == pytest.approx(0.5)
    assert table["faithful|adversarial"]["locomo_j"] is None
    assert table["faithful|adversarial"]["n_questions"] == 2
    assert scores.condition["settings"]["protocol"]["name"] == "locomo"
    assert scores.condition["settings"]["protocol"]["version"] == 1
    # The report section beside the scores.
    section = json.loads((run / "sections" / "protocol.json").read_text())
    assert section["title"].startswith("LoCoMo protocol")
    by_cat = next(t for t in section["tables"] if t["title"] == "faithful: by category")
    assert [r[0] for r in by_cat["rows"]] == ["single-hop", "multi-hop", "temporal",
                                              "open-domain", "adversarial"]
    assert any("judge openai/gpt-4o-mini" in n for n in scores.notes)


def test_answering_not_mentioned_everywhere_scores_below_a_faithful_answer(
        tmp_path: Path) -> None:
    """The adversary of LoCoMo's adversarial rule: it wins that category and loses overall,
    and its not-mentioned rate gives it away."""
    ds = imported(tmp_path, "locomo")
    run = stored_run(tmp_path, ds, {"faithful": LOCOMO_FAITHFUL,
                                    "not_mentioned": LOCOMO_NOT_MENTIONED})
    scores = score_run_sync(run, judge=PolicyJudge("judge-a", locomo_judge), protocol="locomo")
    gamed, faithful = (scores.aggregates["adapter"][a] for a in ("not_mentioned", "faithful"))
    table = scores.aggregates["adapter/category"]
    assert table["not_mentioned|adversarial"]["locomo_f1"] == 1.0
    assert gamed["locomo_f1"] == pytest.approx(2 / 6)
    assert gamed["locomo_f1"] < faithful["locomo_f1"]
    assert gamed["locomo_j"] == 0.0 < faithful["locomo_j"]
    assert gamed["locomo_not_mentioned_rate"] == 1.0


def test_without_a_judge_j_is_unknown_not_zero(tmp_path: Path) -> None:
    ds = imported(tmp_path, "locomo")
    run = stored_run(tmp_path, ds, {"faithful": LOCOMO_FAITHFUL})
    scores = score_run_sync(run, protocol="locomo")
    assert scores.aggregates["adapter"]["faithful"]["locomo_j"] is None
    assert scores.aggregates["adapter"]["faithful"]["locomo_f1"] == pytest.approx(0.5595, 1e-3)
    assert any("no judge" in n for n in scores.notes)


def test_judge_verdicts_are_reused_on_rescoring(tmp_path: Path) -> None:
    ds = imported(tmp_path, "locomo")
    run = stored_run(tmp_path, ds, {"faithful": LOCOMO_FAITHFUL})
    score_run_sync(run, judge=PolicyJudge("judge-a", locomo_judge), protocol="locomo")
    again = PolicyJudge("judge-a", locomo_judge)
    scores = score_run_sync(run, judge=again, protocol="locomo")
    assert again.requests == []
    assert scores.aggregates["adapter"]["faithful"]["locomo_j"] == pytest.approx(3 / 4)


def test_unreadable_verdict_is_unknown(tmp_path: Path) -> None:
    assert LocomoProtocol().parse("locomo-j@1", "CORRECT or WRONG, hard to say") is None
    assert LocomoProtocol().parse("locomo-j@1", '{"label": "maybe"}') is None


def test_a_dataset_without_locomo_categories_is_refused_with_the_fix(tmp_path: Path) -> None:
    from lens.core.errors import UserError
    from tests.scoring.scoring_fixtures import build_run, record, write_dataset

    ds = write_dataset(tmp_path / "ds.json")
    run = build_run(tmp_path / "r", ds, [record("s1_q01_longitudinal", "x")])
    with pytest.raises(UserError, match="--format locomo"):
        score_run_sync(run, protocol="locomo")
