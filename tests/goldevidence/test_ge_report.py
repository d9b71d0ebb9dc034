"""The GoldEvidence report section is one model: Markdown and HTML carry the same content."""

from __future__ import annotations

import json
from pathlib import Path

from goldevidence.report import section_html, section_markdown

GRADES = {"agent_model": "scripted/<policy>", "pooled": [], "groups": [{
    "adapter": "<b>ledger</b>", "cell": {"k": 4}, "intervals": {"value_acc": [0.5, None]},
    "metrics": {"n": 10, "value_acc": 0.75, "exact_acc": None, "errors": 2}}]}


def _run(tmp_path: Path) -> Path:
    (tmp_path / "goldevidence").mkdir()
    (tmp_path / "goldevidence" / "grades.json").write_text(json.dumps(GRADES))
    return tmp_path


def test_markdown_and_html_say_the_same_things(tmp_path: Path) -> None:
    run = _run(tmp_path)
    md, page = section_markdown(run) or "", section_html(run) or ""
    for text in ("GoldEvidence", "Intervals are Wilson 95%", "0.750 [0.500, unknown]",
                 "k=4", "Per-row prediction errors (counted, not fatal)",
                 "&lt;b&gt;ledger&lt;/b&gt;: 2", "scripted/&lt;policy&gt;"):
        assert text.lower() in md.lower(), text
        assert text.lower() in page.lower(), text
    # Neither format lets an adapter label become markup.
    assert "<b>" not in md and "<b>" not in page
    # A metric with no rows is unknown in both, never 0.
    assert "| unknown |" in md and "<td>unknown</td>" in page
