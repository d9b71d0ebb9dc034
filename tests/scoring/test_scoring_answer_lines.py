"""List items, lines under headings and table rows are read with the line they continue: for the
subject rule a value in a list item belongs to the subject its lead-in or heading names."""

from __future__ import annotations

from lens.scoring.text.answer_lines import with_context
from lens.scoring.text.facts import AnswerText, match_fact

LEAD_IN = ("Recommendations p99 latency has climbed since CHG-6507 on 2024-06-01:\n"
           "- from 238 ms on 2024-05-31 to 531 ms on 2024-06-18\n"
           "- still under the 550 ms SLO")
PROSE = ("Recommendations p99 latency has climbed since CHG-6507 on 2024-06-01: from 238 ms on "
         "2024-05-31 to 531 ms on 2024-06-18, still under the 550 ms SLO.")
FACTS = ["recommendations p99 latency: 238 ms", "recommendations p99 latency: 531 ms",
         "recommendations p99 latency: CHG-6507"]
RIVALS = ["recommendations p99 latency", "search p99 latency"]


def _matched(answer: str) -> list[bool]:
    prepared = AnswerText(answer)
    return [match_fact(f, prepared, rivals=RIVALS).matched for f in FACTS]


def test_a_list_item_is_read_with_its_lead_in() -> None:
    lines = with_context(LEAD_IN).split("\n")
    assert lines[1] == ("Recommendations p99 latency has climbed since CHG-6507 on 2024-06-01: "
                        "from 238 ms on 2024-05-31 to 531 ms on 2024-06-18")
    assert _matched(LEAD_IN) == _matched(PROSE) == [True, True, True]


def test_without_the_lead_in_the_values_have_no_subject() -> None:
    bare = "\n".join(LEAD_IN.split("\n")[1:])
    assert _matched(bare)[:2] == [False, False]


def test_a_heading_attaches_the_values_below_it_to_its_subject() -> None:
    right = "## Recommendations p99 latency\n- rose from 238 ms to 531 ms after CHG-6507"
    wrong = "## Search p99 latency\n- rose from 238 ms to 531 ms after CHG-6507"
    assert _matched(right)[:2] == [True, True]
    assert _matched(wrong)[:2] == [False, False]


def test_a_nested_item_continues_every_lead_in_above_it() -> None:
    text = ("Findings:\n- Recommendations p99 latency:\n  - 238 ms on 2024-05-31\n"
            "- Search p99 latency:\n  - 531 ms on 2024-06-18")
    lines = with_context(text).split("\n")
    assert lines[2] == "Findings: Recommendations p99 latency: 238 ms on 2024-05-31"
    assert lines[4] == "Findings: Search p99 latency: 531 ms on 2024-06-18"
    assert _matched(text)[:2] == [True, False]


def test_a_table_row_is_read_with_its_header() -> None:
    text = ("| metric | before | after |\n| --- | --- | --- |\n"
            "| recommendations p99 | 238 ms | 531 ms |")
    assert with_context(text).split("\n")[2] == (
        "metric, before, after: | recommendations p99 | 238 ms | 531 ms |")


def test_a_plain_line_ends_the_lead_in_and_prose_is_unchanged() -> None:
    text = "Latency rose:\n- 238 ms\nSomething else.\n- 531 ms"
    assert with_context(text).split("\n") == [
        "Latency rose:", "Latency rose: 238 ms", "Something else.", "- 531 ms"]
    assert with_context(PROSE) == PROSE
