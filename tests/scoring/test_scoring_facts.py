"""The mechanical fact matcher: paraphrase in, contradiction and unrelated text out."""

from __future__ import annotations

import json
import random
import re
import time
from pathlib import Path

import pytest

from lens.data.ground_truth_text import fact_subject
from lens.scoring.text.facts import AnswerText, FactMatcherSettings, match_fact, match_facts, stem
from lens.scoring.text.numbers import extract_numbers, numbers_match


def matched(fact: str, answer: str, **settings: float) -> bool:
    return match_fact(fact, AnswerText(answer), FactMatcherSettings(**settings)).matched


@pytest.mark.parametrize("written", ["1,200 requests", "1200 requests", "1.20k requests",
                                     "1.20 thousand requests", "one thousand two hundred requests"])
def test_number_formats_meet(written: str) -> None:
    assert matched("queue reached 1200 requests", f"The queue reached {written} at peak.")


@pytest.mark.parametrize("written", ["1,300 requests", "12 requests", "1.5k requests",
                                     # a count is exact: 1% off is another count
                                     "1,210 requests", "1,188 requests"])
def test_other_numbers_do_not_meet(written: str) -> None:
    assert not matched("queue reached 1200 requests", f"The queue reached {written} at peak.")


def test_units_convert_and_a_measured_fact_needs_its_unit() -> None:
    fact = "p99 latency rose to 800ms"
    assert matched(fact, "p99 latency rose to 0.8 s")
    assert matched(fact, "p99 latency rose to 800 milliseconds")
    assert matched(fact, "p99 latency rose from 500 to 800 ms")  # the range shares its unit
    # A bare figure states no duration: a list of numbers would otherwise match every fact.
    assert not matched(fact, "p99 latency rose to 800")
    assert not matched(fact, "p99 latency rose to 800%")
    assert matched("error share rose to 45%", "The error share rose to 45 percent.")
    assert matched("cash of $1.2M missing", "about 1,200,000 usd of cash is missing")


def test_rounded_suffix_number_covers_its_precision() -> None:
    fact_n = extract_numbers("1,234 orders")[0]
    assert numbers_match(fact_n, extract_numbers("1.23k")[0], rel_tol=0.0)
    assert not numbers_match(fact_n, extract_numbers("1.22k")[0], rel_tol=0.0)
    # Two significant digits declare a size, not a figure: "1.2k" covers 1150-1250.
    assert not numbers_match(fact_n, extract_numbers("1.2k")[0], rel_tol=0.0)
    # A count is exact whatever the tolerance for measured values.
    assert not matched("1,234 orders were lost", "1200 orders were lost")
    assert not matched("1,234 orders were lost", "1200 orders were lost", rel_tol=0.03)


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
        # A declared rounding with three significant digits ("4.57k", "1.23M").
        if n < 10_000:
            assert matched(fact, f"throughput reached {n / 1000:.2f}k requests")
        elif n < 100_000:
            assert matched(fact, f"throughput reached {n / 1000:.1f}k requests")
        elif n < 1_000_000:
            assert matched(fact, f"throughput reached {round(n / 1000)}k requests")
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


# -- the measured false matches and missed paraphrases of the fact-matching issue --------------

ROOT = Path(__file__).resolve().parents[2]


def _standard() -> dict:
    return json.loads((ROOT / "datasets" / "standard.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("fact, answer", [
    ("CHG-5382", "Auth p99 latency has climbed since CHG-5383 cut the cache TTL."),
    ("MED-4468", "F. Rossi's ALT has climbed since MED-4470 raised the atorvastatin dose."),
    ("180,820 requests", "Notifications request volume was 178,805 requests."),
    ("252 ms", "Auth handled 252 requests on 2024-03-19."),
    ("3 invoices", "The invoice count jumped on 2024-03-21."),
])
def test_issue_false_matches_of_figures_ids_and_dates(fact: str, answer: str) -> None:
    assert not matched(fact, answer)


@pytest.mark.parametrize("fact, answer", [
    ("notifications p99 latency increasing",
     "Notifications p99 latency did NOT increase after CHG-8016."),
    ("notifications p99 latency increasing", "Notifications p99 latency is decreasing."),
    ("notifications p99 latency increasing", "Notifications p99 latency is no longer increasing."),
    ("F. Rossi's ALT elevated", "F. Rossi's ALT is not elevated."),
])
def test_issue_false_matches_of_denials_and_opposite_direction(fact: str, answer: str) -> None:
    assert not matched(fact, answer)
    # The same sentence without the denial or with the fact's direction matches: the rejection
    # is the polarity, not a missing word.
    plain = (answer.replace("did NOT increase", "increased").replace("is decreasing", "is rising")
             .replace("no longer ", "").replace("not elevated", "elevated"))
    assert matched(fact, plain)


def test_it_is_not_true_that_defeats_every_fact() -> None:
    """The issue measured 'It is not true that <fact>' matching 20 of 20 facts."""
    facts = list(dict.fromkeys(f for q in _standard()["questions"]
                               for f in q["ground_truth"]["key_facts"]))[:16]
    facts += ["notifications p99 latency increasing", "F. Rossi's ALT elevated",
              "Brightline Facilities invoice count rising", "order-router retries increasing"]
    assert len(facts) == 20
    for fact in facts:
        # A fact in subject form ("DEP-4230: 2024-03-23") is stated as a sentence about it.
        subject, value = fact_subject(fact)
        claim = fact if subject is None else f"{subject} is given as {value}"
        assert matched(fact, f"{claim}."), fact
        assert not matched(fact, f"It is not true that {claim}."), fact
        assert not matched(fact, f"It is not the case that {claim}."), fact


def test_a_sentence_about_one_student_does_not_match_another() -> None:
    fact = "tpark_2026 escalated to full content production"
    assert matched(fact, "Over the sessions tpark_2026 escalated to full content production.")
    assert not matched(fact, "jlee_2025 escalated to full content production.")
    assert not matched(fact, "tpark_2026 only asked comprehension questions; jlee_2025 "
                             "escalated to full content production.")
    assert not matched("F. Rossi's ALT elevated", "F. Rossi's creatinine is normal, while "
                                                  "G. Byrne's ALT is elevated.")


@pytest.mark.parametrize("fact, answer", [
    ("43 tickets", "The app now gets forty-three tickets a day."),
    ("$14,685", "The average invoice was fourteen thousand six hundred eighty-five dollars."),
    ("128 min", "Median first response time is 2 h 8 min."),
    ("128 min", "Median first response time is 128m."),
    ("24 U/L", "F. Rossi's ALT was 24 units per litre."),
    ("2024-07-19", "It has been above the threshold since 19 July 2024."),
])
def test_issue_missed_paraphrases(fact: str, answer: str) -> None:
    assert matched(fact, answer)


def test_every_shipped_date_fact_meets_its_written_forms() -> None:
    """The issue measured 45 of 48 written dates missed."""
    months = ["January", "February", "March", "April", "May", "June", "July", "August",
              "September", "October", "November", "December"]
    # Shipped facts are in subject form ("DEP-4230: 2024-03-23"): the sentence names it.
    dated = [(*fact_subject(f), f) for q in _standard()["questions"]
             for f in q["ground_truth"]["key_facts"]]
    dates = [(subject, v, f) for subject, v, f in dated
             if len(v) == 10 and v[4] == "-" and v[7] == "-"]
    assert len(dates) >= 40
    for subject, iso, fact in dates:
        y, m, d = (int(x) for x in iso.split("-"))
        month = months[m - 1]
        for written in (f"{d} {month} {y}", f"{month} {d}, {y}", f"{month[:3]} {d}",
                        f"the {d}th of {month}"):
            assert matched(fact, f"{subject} changed on {written}."), (iso, written)
        other = f"{d % 28 + 1} {month} {y}"
        assert not matched(fact, f"{subject} changed on {other}."), (iso, other)


def _perturb(answer: str) -> str:
    """The canonical answer with every id, figure and date subtly changed: the near-miss
    answer a matcher with tolerance or substring matching would credit."""
    def bump_id(m: re.Match[str]) -> str:
        return f"{m.group(1)}-{int(m.group(2)) + 1}"

    def bump_date(m: re.Match[str]) -> str:
        # Another month, same day: no collision with the answer's other dates.
        return f"{m.group(1)}-{int(m.group(2)) % 12 + 1:02d}-{m.group(3)}"

    def bump_figure(m: re.Match[str]) -> str:
        value = float(m.group(0).replace(",", ""))
        # 3% above and a little: close enough for a tolerance to forgive, and past the
        # answer's other figures' neighbours.
        return f"{value * 1.03 + 1:,.0f}" if "." not in m.group(0) else f"{value * 1.03:.2f}"

    out = re.sub(r"\b([A-Z]{2,4})-(\d{3,5})\b", bump_id, answer)
    out = re.sub(r"\b(\d{4})-(\d{2})-(\d{2})\b", bump_date, out)
    parts = re.split(r"(\b[A-Z]{2,4}-\d+\b|\b\d{4}-\d{2}-\d{2}\b)", out)
    return "".join(p if i % 2 else re.sub(r"\d[\d,]*(?:\.\d+)?", bump_figure, p)
                   for i, p in enumerate(parts))


def test_canonical_answers_score_full_and_their_near_misses_almost_nothing() -> None:
    """Adversary for fact_recall on the shipped dataset: every canonical answer states all its
    key facts; the same answers with each id, date and figure nudged state almost none."""
    found = nudged = total = 0
    for q in _standard()["questions"]:
        facts, answer = q["ground_truth"]["key_facts"], q["ground_truth"]["canonical_answer"]
        found += sum(m.matched for m in match_facts(facts, answer))
        nudged += sum(m.matched for m in match_facts(facts, _perturb(answer)))
        total += len(facts)
    assert found == total
    assert nudged / total < 0.02


def test_bare_figures_without_units_or_subject_earn_nothing() -> None:
    """Adversary: every figure of the scope's records pasted bare, with no unit, id or date."""
    data = _standard()
    for scope in data["scopes"][:2]:
        text = " ".join(e["text"] for e in scope["episodes"])
        figures = " ".join(re.findall(r"(?<![\w-])\d[\d,]*(?:\.\d+)?(?![\w-])", text))
        questions = [q for q in data["questions"] if q["scope_id"] == scope["scope_id"]]
        facts = [f for q in questions for f in q["ground_truth"]["key_facts"]]
        assert sum(m.matched for m in match_facts(facts, figures)) == 0


def test_settings_enter_the_scoring_condition() -> None:
    base = FactMatcherSettings().as_condition()
    assert base["matcher_version"] >= 2
    assert set(base) >= {"coverage", "short_fact_words", "rel_tol", "window_sentences",
                         "long_fact_words"}
    assert FactMatcherSettings(rel_tol=0.05).as_condition() != base


@pytest.mark.parametrize("fact, answer, expected", [
    # Rounding a measured value counts only when the answer says it rounds.
    ("252 ms", "Auth p99 was about 250 ms.", True),
    ("252 ms", "Auth p99 was ~250ms.", True),
    ("252 ms", "Auth p99 was 250 ms.", False),
    ("349 ms", "Auth p99 was 350 ms.", False),
    ("128 min", "The median first response is a 128-minute wait.", True),
    ("45 tickets", "It is close to the 45-ticket escalation threshold.", True),
    ("224 ms", "Auth p99 went 224-531 ms over the period.", True),
    ("531 ms", "- **Auth p99**: 224 ms → **531 ms** (Apr 4)", True),
    ("CHG-5382", "Trigger: CHG-5382's TTL cut.", True),
    ("128 min", "The median first response is a 128-ticket backlog.", False),
    ("19 tickets", "Login-loop tickets crossed 45 on 2024-07-19.", False),
])
def test_markdown_hyphenated_units_and_ranges(fact: str, answer: str, expected: bool) -> None:
    assert matched(fact, answer) is expected


_ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen "
         "fourteen fifteen sixteen seventeen eighteen nineteen").split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def _spell(n: int) -> str:
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else "-" + _ONES[n % 10])
    if n < 1000:
        return _ONES[n // 100] + " hundred" + ("" if n % 100 == 0 else " " + _spell(n % 100))
    return _spell(n // 1000) + " thousand" + ("" if n % 1000 == 0 else " " + _spell(n % 1000))


_SPELLED_UNITS = {"ms": "milliseconds", "U/L": "units per litre", "min": "minutes",
                  "per hour": "an hour", "g/L": "grams per litre", "mg/L": "milligrams per litre",
                  "mL": "millilitres"}


def _variants(fact: str) -> tuple[list[str], list[str]]:
    """(faithful rewrites, near-misses) of one shipped key fact."""
    if m := re.fullmatch(r"([A-Z]+)-(\d+)", fact):
        prefix, num = m.groups()
        return ([fact.lower(), f"{prefix} {num}"],
                [f"{prefix}-{int(num) + 1}", f"{prefix}-{num}1", f"{prefix}-{num[:-1]}"])
    if m := re.fullmatch(r"\$([\d,]+)", fact):
        v = int(m.group(1).replace(",", ""))
        return [f"{v} dollars", f"USD {v:,}", f"${v / 1000:.2f}k" if v < 100_000 else f"${v:,}"], \
               [f"${v + 1:,}", f"${round(v * 1.01):,}", f"{v:,} requests"]
    if m := re.fullmatch(r"([\d,.]+) (.+)", fact):
        raw, unit = m.groups()
        v = float(raw.replace(",", ""))
        good = [f"{raw.replace(',', '')} {unit}"]
        if v.is_integer() and v < 100_000:
            good.append(f"{_spell(int(v))} {unit}")
        if unit in _SPELLED_UNITS:
            good.append(f"{raw} {_SPELLED_UNITS[unit]}")
        other_unit = "requests" if unit != "requests" else "ms"
        decimals = len(raw.partition(".")[2])
        step = 10.0 ** -decimals
        bad = [f"{max(v * 1.05, v + step):,.{decimals}f} {unit}", f"{raw} {other_unit}"]
        if v.is_integer():
            bad.append(f"{int(v) + 1:,} {unit}")
        return good, bad
    return [], []


def test_every_shipped_key_fact_meets_its_rewrites_and_rejects_its_near_misses() -> None:
    """A sweep over the shipped dataset's key facts (dates are swept above): each figure, sum
    and id rewritten faithfully (number words, spelled units, other separators) matches, and
    each nudged one (+1, +1%, +5%, another unit, another id) does not."""
    facts = sorted({f for q in _standard()["questions"] for f in q["ground_truth"]["key_facts"]})
    swept = 0
    for fact in facts:
        # Shipped facts are in subject form: the value is varied, the subject named beside it.
        subject, value = fact_subject(fact)
        good, bad = _variants(value)
        for text in good:
            assert matched(fact, f"The report gives {subject} {text} for that day."), (fact, text)
        for text in bad:
            assert not matched(fact, f"The report gives {subject} {text} for that day."), (
                fact, text)
        swept += bool(good)
    assert swept >= 100


@pytest.mark.parametrize("text", ["19 July " * 20000, ". " * 80000, "2 h 8 min " * 15000,
                                  "Aa " * 40000 + "-", "a-" * 40000 + "^"])
def test_hostile_answers_are_read_in_linear_time(text: str) -> None:
    """Overlap checks and windows that grew with the square of the answer took seconds on
    inputs like these, and longer ones take minutes; the bound is loose, a quadratic
    regression blows through it."""
    # This process's CPU time, which other jobs on a busy machine do not stretch as they do
    # the wall clock: at most 0.4 s per input here, against 6 to 17 s for the first three
    # inputs with the matcher before it read them in linear time (commit 9612aea's parent).
    start = time.process_time()
    ms = match_facts(["43 tickets", "CHG-5382", "F. Rossi's ALT elevated", "2024-07-19"], text)
    assert time.process_time() - start < 4
    assert len(ms) == 4


def test_a_sentential_denial_ends_where_a_new_statement_starts() -> None:
    answer = "It is not true that auth p99 reached 828 ms; it was corrected to 274 ms."
    assert [m.matched for m in match_facts(["828 ms", "274 ms"], answer)] == [False, True]
    answer = "It is not true that auth p99 reached 828 ms, which the report later corrected."
    assert not matched("828 ms", answer)


def test_month_names_are_no_one() -> None:
    """A clause that names someone else does not state a change of the fact's subject; a
    capitalised month or weekday names no one."""
    assert matched("F. Rossi's ALT elevated", "Since July, F. Rossi's ALT has been elevated.")
    assert matched("F. Rossi's ALT elevated", "On Monday F. Rossi's ALT was elevated.")
