"""The mechanical fact matcher: paraphrase in, contradiction and unrelated text out."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from lens.scoring.facts import AnswerText, FactMatcherSettings, match_fact, match_facts, stem
from lens.scoring.numbers import extract_numbers, numbers_match


def matched(fact: str, answer: str, **settings: float) -> bool:
    return match_fact(fact, AnswerText(answer), FactMatcherSettings(**settings)).matched


@pytest.mark.parametrize("written", ["1,200 requests", "1200 requests", "1.2k requests",
                                     "1.2 thousand requests", "1,210 requests"])
def test_number_formats_meet(written: str) -> None:
    assert matched("queue reached 1200 requests", f"The queue reached {written} at peak.")


@pytest.mark.parametrize("written", ["1,300 requests", "12 requests", "1.5k requests"])
def test_other_numbers_do_not_meet(written: str) -> None:
    assert not matched("queue reached 1200 requests", f"The queue reached {written} at peak.")


def test_units_convert_and_bare_numbers_meet_their_unit() -> None:
    fact = "p99 latency rose to 800ms"
    assert matched(fact, "p99 latency rose to 0.8 s")
    assert matched(fact, "p99 latency rose to 800 milliseconds")
    assert matched(fact, "p99 latency rose to 800")
    assert not matched(fact, "p99 latency rose to 800%")
    assert matched("error share rose to 45%", "The error share rose to 45 percent.")
    assert matched("cash of $1.2M missing", "about 1,200,000 usd of cash is missing")


def test_rounded_suffix_number_covers_its_precision() -> None:
    fact_n = extract_numbers("1,234 orders")[0]
    assert numbers_match(fact_n, extract_numbers("1.2k")[0], rel_tol=0.0)
    assert not numbers_match(fact_n, extract_numbers("1.1k")[0], rel_tol=0.0)
    # Without a suffix "1200" is exact: 1234 is 2.8% away, beyond the default 2% tolerance.
    assert not matched("1,234 orders were lost", "1200 orders were lost")
    assert matched("1,234 orders were lost", "1200 orders were lost", rel_tol=0.03)


def test_number_words_in_answers_meet_digits() -> None:
    assert matched("retries reached 12 per minute", "Retries reached twelve per minute.")
    assert not matched("retries reached 12 per minute", "Retries reached eleven per minute.")


def test_digits_inside_identifiers_are_not_numbers() -> None:
    assert [n.text for n in extract_numbers("p99 of ep_009 rose 5%")] == ["5%"]


def test_case_punctuation_and_inflection() -> None:
    assert matched("connection pool exhaustion", "CONNECTION-POOL: exhausted!")
    assert matched("service-B retry rate elevated", "Service B's retry rates are elevated.")
    assert stem("exhaustion") == stem("exhausted") == stem("exhausting")
    assert stem("rising") == stem("increasing")


def test_missing_content_words_fail() -> None:
    assert not matched("connection pool exhaustion", "The connection was slow.")
    assert not matched("service-B retry rate elevated", "service-C retry rate elevated")


def test_negated_fact_needs_a_denial() -> None:
    fact = "service-C deploy is not the root cause"
    assert not matched(fact, "The service-C deploy is the root cause of the failures.")
    assert matched(fact, "The service-C deploy was ruled out as the root cause.")
    assert matched(fact, "The service-C deploy was a red herring, not the root cause.")


def test_long_lens_fact_survives_paraphrase() -> None:
    fact = ("geo-lookup latency degraded progressively over multiple reporting periods with p99 "
            "values increasing from baseline through each successive day rather than appearing "
            "as a single sudden spike")
    good = ("Across the reporting periods the geo-lookup p99 latency rose day after day from its "
            "baseline: a progressive degradation rather than a sudden spike.")
    vague = "Geo-lookup had a latency spike."
    assert matched(fact, good)
    assert not matched(fact, vague)


def test_empty_answer_matches_nothing() -> None:
    ms = match_facts(["connection pool exhaustion", "latency rose to 800ms"], "")
    assert [m.matched for m in ms] == [False, False]


def test_detail_says_what_is_missing() -> None:
    m = match_fact("latency rose to 800ms at the gateway", AnswerText("latency rose to 900ms"))
    assert not m.matched
    assert m.numbers_missing == ["800ms"]
    assert "gateway" in m.words_missing


def test_published_facts_do_not_match_other_scopes(shared_datasets: Path) -> None:
    """A control on real data: the canonical answers of one scope state (almost) none of another
    scope's key facts."""
    files = sorted(shared_datasets.glob("scope_*.json"))
    scopes = {f.name: json.loads(f.read_text(encoding="utf-8"))["questions"] for f in files}
    rng = random.Random(7)
    false = total = 0
    for name, questions in scopes.items():
        others = [q["ground_truth"]["canonical_answer"]
                  for other, qs in scopes.items() if other != name for q in qs]
        for q in questions:
            facts = q["ground_truth"]["key_facts"]
            if not facts:
                continue
            for m in match_facts(facts, rng.choice(others)):
                false += m.matched
                total += 1
    assert total > 200
    assert false / total < 0.02


def test_number_format_invariance_over_many_values() -> None:
    """Seeded sweep: a figure written with thousands separators, plainly, or rounded with a
    suffix meets the fact's figure; a figure 10% off does not."""
    rng = random.Random(11)
    for _ in range(300):
        n = rng.randint(1_000, 9_999_999)
        fact = f"throughput reached {n} requests"
        assert matched(fact, f"throughput reached {n:,} requests")
        if n < 1_000_000:
            assert matched(fact, f"throughput reached {n / 1000:.1f}k requests")
        else:
            assert matched(fact, f"throughput reached {n / 1e6:.2f}M requests")
        assert not matched(fact, f"throughput reached {round(n * 1.1):,} requests")


def test_denial_must_be_about_the_facts_subject() -> None:
    fact = "service-C deploy is not the root cause"
    assert not matched(fact, "The service-C deploy is the root cause. No other issues were seen.")
    assert matched(fact, "No other issues. Yet the service-C deploy is not the root cause.")
    # A leading "No." covers the sentence after it.
    assert matched(fact, "No. The service-C deploy was merely the root cause people suspected.")


@pytest.mark.parametrize("fact, answer, expected", [
    ("connection pool exhaustion", "The shared connection pool was exhausted by retries.", True),
    ("service-B retry rate elevated",
     "Service-B retry rates first showed elevation around episode 10.", True),
    ("geo-lookup API latency increasing", "Latency of the geo-lookup API kept rising.", True),
    # The words are all there, but scattered over quoted records about other things.
    ("service-B retry rate elevated",
     "Updated service-B retry backoff parameters.\nStandardized TSIG algorithms.\n"
     "Transfer success rates recovered.", False),
    ("geo-lookup API latency increasing", "The geo-lookup API was replaced last year.", False),
])
def test_lens_style_facts(fact: str, answer: str, expected: bool) -> None:
    assert matched(fact, answer) is expected
