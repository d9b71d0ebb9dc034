"""Every verdict word, with its reason on the same line, where lens prints it: the line the
console prints after the results and the report's "Verdict" list (verdict_lines), and the
"Paired comparisons" table of the report and of ``lens compare`` (layout.comparison), in
Markdown and in HTML. docs/reports.md, "Verdicts", defines each word."""

from __future__ import annotations

import pytest

from lens.report.documents.document import to_html, to_markdown
from lens.report.documents.layout import comparison
from lens.report.documents.verdict_lines import verdict_lines
from lens.report.foundations.shapes import Comparison, ComparisonRow, EstimateOut, ReportSummary

WORDS = {
    "better": "good better than base",
    "worse": "good worse than base",
    "equivalent": "equivalent within the margin",
    "real but small": "a real difference smaller than the margin",
    "undecided": "undecided",
}


def _comparison(verdict: str) -> Comparison:
    row = ComparisonRow.model_construct(
        metric="composite", family="confirmatory", pairs=40, mean_a=0.5, mean_b=0.52,
        delta=EstimateOut(n=40, mean=0.02, low=0.01, high=0.03, margin=0.01, method="bootstrap"),
        test="paired-bootstrap", p_value=0.01, p_holm=0.01, p_mc_error=None, margin_a=0.05,
        margin_b=0.05, noise_floor=None, verdict=verdict, reason=f"the reason for {verdict}",
        by_judge={}, rule="significance")
    return Comparison(arm_a="base", arm_b="good", pairs=40, unmatched_a=0, unmatched_b=0,
                      rows=[row])


@pytest.mark.parametrize("verdict", list(WORDS))
def test_each_verdict_word_is_printed_with_its_reason_on_one_line(verdict: str) -> None:
    comp = _comparison(verdict)
    summary = ReportSummary.model_construct(comparisons=[comp], primary_metric="composite")
    (line,) = verdict_lines(summary)
    assert line.endswith(f", {WORDS[verdict]}: the reason for {verdict}"), line
    md = [x for x in to_markdown(comparison(comp)).splitlines() if x.startswith("| composite")]
    assert len(md) == 1
    assert f"{WORDS[verdict]} (significance rule): the reason for {verdict}" in md[0]
    html = to_html(comparison(comp))
    assert f"{WORDS[verdict]}</span> (significance rule): the reason for {verdict}" in html
