"""Write-side scoring's screen: an item is parsed only when its characters could hold the fact
(``may_hold``), and the screen never turns away an item the matcher or the record-line rule
would credit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lens.data.dataset_load import load_dataset
from lens.memory.listing import MemoryItem, MemoryListing
from lens.scoring.measures.write_side import FactReader, item_holds, may_hold
from lens.scoring.text.facts import AnswerText, fact_subjects, match_fact, may_state, screen_text
from lens.scoring.text.lexicon import may_hold_stem

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "scoring" / "data" / "fact_matcher_corpus.jsonl"


def _corpus() -> list[dict[str, str]]:
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def test_the_screen_passes_every_answer_the_matcher_credits_in_its_corpus() -> None:
    rows = _corpus()
    credited = [r for r in rows if match_fact(r["fact"], AnswerText(r["answer"])).matched]
    assert len(credited) > 150
    missed = [r["id"] for r in credited if not may_state(r["fact"], screen_text(r["answer"]))]
    assert missed == []
    # And it settles some of the rest: near-misses that lack the fact's words.
    turned_away = [r for r in rows if not may_state(r["fact"], screen_text(r["answer"]))]
    assert turned_away and all(
        not match_fact(r["fact"], AnswerText(r["answer"])).matched for r in turned_away)


@pytest.mark.parametrize(("word_stem", "text"), [
    ("caus", "the culprit was the cache"),        # a synonym's stem, written as another word
    ("baby", "two babies"),                         # "-ies" written "y" in the stem
    ("fly", "the flies"),
    ("⟨up⟩", "latency went up"),                    # a direction, from a phrase
    ("certain", "there is no doubt"),               # a word normalise writes for a phrase
    ("latenc", "p99 latencies"),                    # an inflection sharing four letters
])
def test_a_stem_is_found_however_the_stemmer_reached_it(word_stem: str, text: str) -> None:
    assert may_hold_stem(word_stem, screen_text(text))


def test_a_stem_whose_letters_are_absent_is_not() -> None:
    assert not may_hold_stem("latenc", screen_text("the checkout queue grew"))
    assert not may_hold_stem("coupon", screen_text("I bought coffee creamer"))


def test_a_fact_in_subject_form_passes_on_its_record_line_alone() -> None:
    # The matcher does not credit this line (the label is shorter than the subject); the record
    # rule does, so the screen must pass it.
    fact, line = "notifications p99 latency: 215 ms", "- notifications: p99 215 ms"
    assert item_holds(fact, AnswerText(line), line, ())
    assert may_hold(fact, screen_text(line))
    assert not may_hold(fact, screen_text("- checkout: p50 80 ms"))


# The standard dataset's first scope, cut to its first 40 episodes: its long reports make the
# parse of every pair (what the screen is checked against) slow.
@pytest.mark.parametrize(("name", "scopes", "episodes"), [("quickstart", 3, None),
                                                          ("standard", 1, 40)])
def test_the_reader_with_its_screen_decides_every_pair_as_the_parse_does(
        name: str, scopes: int, episodes: int | None) -> None:
    """Every key fact against every episode of the shipped datasets, whole and line by line:
    FactReader (screen, then parse) agrees with item_holds on the parsed item everywhere, and
    the screen settles a share of the pairs without a parse."""
    dataset = load_dataset(ROOT / "datasets" / f"{name}.json")
    pairs = settled = 0
    for scope in dataset.scopes[:scopes]:
        facts = list(dict.fromkeys(f for q in dataset.questions if q.scope_id == scope.scope_id
                                   for f in q.ground_truth.key_facts))
        rivals = tuple(fact_subjects(facts))
        texts = [e.text for e in scope.episodes[:episodes]]
        items = list(dict.fromkeys([*texts, *(ln for t in texts for ln in t.splitlines()
                                              if ln.strip())]))
        reader = FactReader()
        for item in items:
            screened, prepared = screen_text(item), AnswerText(item)
            for fact in facts:
                pairs += 1
                settled += not may_hold(fact, screened)
                assert reader.holds(fact, item, rivals) == item_holds(
                    fact, prepared, item, rivals), (fact, item[:200])
    assert pairs > 500 and settled > pairs // 4


def test_held_facts_reads_a_listing_through_the_screen() -> None:
    listing = MemoryListing(items=[
        MemoryItem(item_id="a", text="Auth p99 latency was 531 ms on 2024-03-22."),
        MemoryItem(item_id="b", text="The team met for lunch."),
    ])
    facts = ["auth p99 latency: 531 ms", "the lunch was cancelled"]
    assert FactReader().held_facts(facts, listing) == [True, False]
