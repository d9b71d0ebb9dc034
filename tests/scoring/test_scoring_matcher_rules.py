"""Each of the fact matcher's named rules, with the adversary answer it exists to stop.

For every rule: the adversary's scope is rejected by that rule and by no rule before it (the
reason the matcher gives is the rule's), and a faithful answer to the same fact matches.
"""

from __future__ import annotations

import pytest

from lens.scoring.text import facts
from lens.scoring.text.facts import AnswerText, FactMatcherSettings, match_fact

S = FactMatcherSettings()

# (rule, fact, adversary answer, faithful answer, rivals)
CASES = [
    (facts._figure_missing, "auth p99 latency: 224 ms",
     "The auth p99 latency was 252 ms.", "The auth p99 latency was 224 ms.", ()),
    (facts._date_missing, "CHG-5382 deployed on 2024-03-18",
     "CHG-5382 was deployed on 2024-03-19.", "CHG-5382 was deployed on 18 March 2024.", ()),
    (facts._identifier_missing, "CHG-5382 caused the rollback",
     "The rollback was caused by a config push.", "The rollback was caused by CHG-5382.", ()),
    (facts._bare_list, "CHG-5382: 224 ms",
     "CHG-5382, 224 ms, 307 ms.", "CHG-5382 raised the latency to 224 ms.", ()),
    (facts._change_reversed, "output rose from 10 to 40 units a day",
     "Output fell from 40 to 10 units a day.", "Output rose from 10 to 40 units a day.", ()),
    (facts._value_denied, "2024-07-19",
     "It is not true that it happened on 2024-07-19.", "It happened on 2024-07-19.", ()),
    (facts._figure_denied, "auth p99 latency: 531 ms",
     "Auth p99 latency never reached 531 ms.", "Auth p99 latency reached 531 ms.", ()),
    (facts._subject_or_direction_missing, "notifications p99 latency increasing",
     "Notifications p99 latency is decreasing.", "Notifications p99 latency is increasing.",
     ()),
    (facts._words_missing, "the billing export job failed nightly after the schema migration",
     "The billing job failed.",
     "The billing export job failed nightly after the schema migration.", ()),
    (facts._subject_apart_from_change, "notifications request volume increasing",
     "Auth request volume stayed flat, while notifications latency rose.",
     "Notifications request volume rose.", ()),
    (facts._denial_missing, "ERP-1148 is not the cause of the rise",
     "ERP-1148 is the cause of the rise.", "ERP-1148 is not the cause of the rise.", ()),
    (facts._finding_denied, "notifications p99 latency increasing",
     "Notifications p99 latency did not increase.", "Notifications p99 latency increased.",
     ()),
    (facts._about_another_subject, "auth p99 latency: 531 ms",
     "Auth p99 latency spiked to 235 ms; inventory-sync p99 kept climbing, to 531 ms.",
     "Auth p99 latency climbed to 531 ms.", ("auth p99 latency", "inventory-sync p99")),
]

ALL_RULES = (facts.VALUE_RULES + facts.ANCHOR_RULES + facts.VALUE_ALONE_RULES
             + facts.FINDING_RULES)


def _scope(fact: str, answer: str, rivals: tuple[str, ...]) -> facts._Scope:
    f = facts._parse_fact(fact)
    [(clauses, after_no)] = AnswerText(answer).windows(1)
    subjects = [r for r in map(facts._subject, rivals) if r is not None]
    return facts._Scope.of(f, clauses, facts._usable(f, clauses), after_no, S, subjects)


def _check(fact: str, answer: str, rivals: tuple[str, ...]) -> tuple[bool, str]:
    f = facts._parse_fact(fact)
    [(clauses, after_no)] = AnswerText(answer).windows(1)
    subjects = [r for r in map(facts._subject, rivals) if r is not None]
    ok, _, why = facts._check(f, clauses, after_no, S, subjects)
    return ok, why


def test_every_rule_has_its_adversary() -> None:
    assert {rule for _, rule in ALL_RULES} == {case[0] for case in CASES}
    assert all(rule.__doc__ for _, rule in ALL_RULES)


@pytest.mark.parametrize(("rule", "fact", "adversary", "faithful", "rivals"), CASES,
                         ids=[c[0].__name__.strip("_") for c in CASES])
def test_rule_stops_its_adversary(rule, fact: str, adversary: str, faithful: str,
                                  rivals: tuple[str, ...]) -> None:
    reason = next(r for r, fn in ALL_RULES if fn is rule)
    assert rule(_scope(fact, adversary, rivals))
    assert _check(fact, adversary, rivals) == (False, reason)
    assert not rule(_scope(fact, faithful, rivals))
    assert _check(fact, faithful, rivals) == (True, "")
    assert match_fact(fact, AnswerText(faithful), rivals=rivals).matched
    assert not match_fact(fact, AnswerText(adversary), rivals=rivals).matched


def test_another_entity_lends_nothing() -> None:
    """A clause naming another entity of the fact's kind (CHG-5383 for CHG-5382) is not used."""
    f = facts._parse_fact("CHG-5382 caused the rollback")
    [(clauses, _)] = AnswerText("CHG-5383 caused the rollback.").windows(1)
    assert facts._usable(f, clauses) == []
    assert _check("CHG-5382 caused the rollback", "CHG-5383 caused the rollback.", ()) == (
        False, facts.ANOTHER_ENTITY)
    assert _check("CHG-5382 caused the rollback", "CHG-5382 caused the rollback.", ()) == (
        True, "")


@pytest.mark.parametrize(("answer", "matched"), [
    ("It went from 10 to 40 units a day.", True),
    ("It went 10 → 40 units a day.", True),
    ("It rose to 40 units a day from 10 units a day.", True),
    ("It was 10 units a day before the change and 40 units a day after.", True),
    ("Latency rose from 224 ms to 531 ms.", True),
    ("It fell from 40 to 10 units a day.", False),
    ("It went 40 → 10 units a day.", False),
    ("It fell to 10 units a day from 40 units a day.", False),
])
def test_a_change_between_figures_keeps_its_order(answer: str, matched: bool) -> None:
    """A fact "from A to B" is met by the change A → B in any of its spellings, and by both
    figures said apart; the same figures as the change B → A are rejected, so a reversed change
    earns nothing."""
    fact = ("latency from 224 ms to 531 ms" if "ms" in answer
            else "from 10 to 40 units a day")
    m = match_fact(fact, AnswerText(answer))
    assert m.matched is matched
    if not matched:
        assert m.reason == "change reversed"
