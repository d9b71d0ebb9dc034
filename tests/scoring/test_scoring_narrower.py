"""Right answers stated more narrowly than their gold, and the adversaries each reading must
refuse: a date inside a gold's period (a month, a year, a period relative to another date), a
case of the kind a gold names, and quoted titles. Each faithful answer is credited and each
adversary (a list of every date or case, a hedge naming the gold among others, a reversal, a
denial, a vaguer answer) is not, so stuffing, hedging and reversing score below the faithful
answer (LoCoMo's golds and answers written the way its readers write)."""

from __future__ import annotations

from datetime import date

import pytest

from lens.scoring.text.facts import MATCHER_VERSION, AnswerText, FactMatcherSettings, match_fact
from lens.scoring.text.periods import find_periods, fold_text, gold_period

# (gold, answer, whether the answer states the gold)
CASES = [
    # Quoted titles.
    ("The Great Gatsby", 'Evan is reading the novel "The Great Gatsby," which he finds gripping '
                         'and says it "just gets better with every page."', True),
    ("The Great Gatsby", "Evan is reading the novel \u201cThe Great Gatsby,\u201d which he finds "
                         "gripping.", True),
    ("The Great Gatsby", "Evan is reading *The Great Gatsby*.", True),
    ("The Great Gatsby", 'Evan is not reading "The Great Gatsby" any more.', False),
    # A range inside a stated period.
    ("March, 2023", "Jon started going to the gym during the week of 9 March to 15 March, 2023.",
     True),
    ("March, 2023", "Jon started going to the gym on March 9, 2023.", True),
    ("March, 2023", "Jon started going to the gym in March 2023, two months after he lost his "
                    "job in January 2023.", True),
    ("March, 2023", "Jon started going to the gym in March or April 2023.", False),
    ("March, 2023", "Jon went to the gym on 1 January, 1 February, 1 March, 1 April and 1 May "
                    "2023.", False),
    ("March, 2023", "Jon did not start going to the gym in March 2023.", False),
    ("March, 2023", "Maybe in March 2023.", False),
    ("March, 2023", "Sometime in spring.", False),
    ("March, 2023", "Jon started in 2023.", False),
    ("March, 2023", "Between January and June 2023.", False),
    ("2022", "Melanie painted a lake sunrise on January 1, 2022.", True),
    ("2022", "Melanie painted it in 2021 or 2022.", False),
    ("The summer of 2022", "John went camping with Max on 12 July 2022.", True),
    ("The summer of 2022", "John went camping with Max in October 2022.", False),
    # A date the gold gives relative to another.
    ("The Saturday before 7November, 2022", "Nate won the tourney on Saturday, 5 November 2022.",
     True),
    ("The Saturday before 7November, 2022", "Nate won it on the Saturday before 7 November "
                                            "2022.", True),
    ("The Saturday before 7November, 2022", "Nate won it on the Saturday after 7 November "
                                            "2022.", False),
    ("The Saturday before 7November, 2022", "Nate won it on 29 October, 5 November, 12 November "
                                            "2022.", False),
    ("The Saturday before 7November, 2022", "Nate won it on 5 November or 12 November 2022.",
     False),
    ("The Saturday before 7November, 2022", "In November 2022.", False),
    ("The week before 9 June 2023", "Caroline gave the speech on June 2, 2023.", True),
    ("The week before 9 June 2023", "Caroline gave the speech on June 12, 2023.", False),
    ("two weekends before 17 July 2023", "Melanie went camping on 8 July 2023.", True),
    ("two weekends before 17 July 2023", "Melanie went camping on 15 July 2023.", False),
    # A specific case of a general gold.
    ("an instrument", "the violin", True),
    ("an instrument", "Tim recently started learning to play the violin.", True),
    ("an instrument", "Tim started learning an instrument.", True),
    ("an instrument", "Tim started learning the violin, the guitar, the piano and the drums.",
     False),
    ("an instrument", "Tim started learning the violin or the piano.", False),
    ("an instrument", "Tim did not start learning the violin.", False),
    ("an instrument", "Perhaps the violin.", False),
    ("an instrument", "Tim started learning Spanish.", False),
    # Plain days stay the matcher's own date rule.
    ("2024-03-22", "It happened on 22 March 2024.", True),
    ("2024-03-22", "It happened on 23 March 2024.", False),
]


@pytest.mark.parametrize(("gold", "answer", "states"), CASES,
                         ids=[f"{g}|{a[:40]}" for g, a, _ in CASES])
def test_a_narrower_answer_states_its_gold_and_the_adversary_does_not(
        gold: str, answer: str, states: bool) -> None:
    m = match_fact(gold, AnswerText(answer))
    assert m.matched is states, m.reason


@pytest.mark.parametrize(("gold", "first", "last"), [
    ("The Saturday before 7November, 2022", date(2022, 11, 5), date(2022, 11, 5)),
    ("The sunday before 25 May 2023", date(2023, 5, 21), date(2023, 5, 21)),
    ("The weekend before 17 July 2023", date(2023, 7, 15), date(2023, 7, 16)),
    ("two weekends before 17 July 2023", date(2023, 7, 8), date(2023, 7, 9)),
    ("The week before 9 June 2023", date(2023, 5, 29), date(2023, 6, 8)),
    ("the week before 21Janury, 2022", date(2022, 1, 10), date(2022, 1, 20)),
    ("first weekend of August 2023", date(2023, 8, 5), date(2023, 8, 6)),
    ("last week of September 2023", date(2023, 9, 24), date(2023, 9, 30)),
    ("between 26 March and 20 April 2023", date(2023, 3, 26), date(2023, 4, 20)),
    ("November 5-6, 2022", date(2022, 11, 5), date(2022, 11, 6)),
    ("early August, 2023", date(2023, 8, 1), date(2023, 8, 10)),
    ("April.2023", date(2023, 4, 1), date(2023, 4, 30)),
])
def test_gold_periods_are_read_strictly(gold: str, first: date, last: date) -> None:
    found = gold_period(gold)
    assert found is not None
    assert (found.period.first, found.period.last) == (first, last)


@pytest.mark.parametrize("gold", ["7 May 2023", "three years", "Since 2016", "her mother",
                                  "A few years ago"])
def test_a_plain_day_or_no_date_is_no_period_gold(gold: str) -> None:
    assert gold_period(gold) is None


def test_two_days_joined_by_and_are_two_days_not_a_range() -> None:
    found = find_periods(fold_text("on 5 November and 12 November 2022"))
    assert [f.period.single_day for f in found] == [True, True]


def test_the_condition_records_the_matcher_version_with_these_readings() -> None:
    assert FactMatcherSettings().as_condition()["matcher_version"] == MATCHER_VERSION >= 6


# No wall-clock assertion (the suite shares its machine): a quadratic reading of these inputs
# takes minutes and meets pytest-timeout's bound instead.
@pytest.mark.timeout(300)
@pytest.mark.parametrize("text", ["19 July " * 20000, "the violin, " * 20000,
                                  "on 5 November 2022 or " * 5000, "a, b or c " * 20000,
                                  "the " * 40000, '"a" ' * 40000, "1,2,3 and 4; " * 10000,
                                  "1 " * 80000])
def test_long_answers_are_read_in_linear_time(text: str) -> None:
    """Every date or case of an answer is checked against its clause; a check that read the
    clause again for each of them took minutes on inputs like these."""
    answer = AnswerText(text)
    for gold in ("March, 2023", "The Saturday before 7 November, 2022", "an instrument",
                 "between 5 and 7 May", "$1,200", "The Great Gatsby"):
        assert match_fact(gold, answer) is not None
