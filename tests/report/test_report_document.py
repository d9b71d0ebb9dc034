"""One model of a report: the Markdown and HTML files are renderings of the same blocks."""

from __future__ import annotations

import html as htmllib
from pathlib import Path

from lens.report import build_summary
from lens.report.documents.document import (
    Bullets,
    Heading,
    Para,
    Parts,
    Raw,
    Styled,
    Table,
    md_cell,
    to_html,
    to_markdown,
)
from lens.report.documents.html import render_html
from lens.report.documents.layout import report_blocks
from lens.report.documents.markdown import render_markdown
from tests.report.runfactory import RunSpec, make_run


def _texts(blocks: list) -> list[str]:
    out = []
    for b in blocks:
        if b.formats != {"markdown", "html"}:
            continue
        if isinstance(b, Heading | Para):
            out.append(b.text)
        elif isinstance(b, Bullets):
            out += list(b.items)
        elif isinstance(b, Table):
            out += [c for row in b.rows for c in row if isinstance(c, str)]
    return out


def test_both_files_carry_every_text_of_the_shared_blocks(tmp_path: Path) -> None:
    run = make_run(tmp_path, RunSpec(adapters=("a", "b", "c"), repeats=2))
    summary = build_summary(run)
    blocks = report_blocks(summary)
    md = render_markdown(summary)
    page = htmllib.unescape(render_html(summary, []))
    texts = _texts(blocks)
    assert len(texts) > 100
    assert [x for x in texts if md_cell(x) not in md] == []
    assert [x for x in texts if x not in page] == []
    # The sections a reader looks for are in both.
    for title in ("Pre-flight checklist", "Results", "Usage", "Judge", "All arms at once",
                  "Paired comparisons"):
        assert f"## {title}" in md and f"<h2>{title}</h2>" in render_html(summary, [])


def test_hostile_text_is_inert_in_both_renderings() -> None:
    evil = "<script>alert(1)</script> | x"
    blocks = [Heading(evil), Para(evil), Bullets([evil]),
              Table(["h"], [[evil], [Parts((Styled(evil, "pass"), evil))]])]
    md, page = to_markdown(blocks), to_html(blocks)
    assert "<script>" not in md and "<script>" not in page
    assert "&lt;script&gt;" in md and "&lt;script&gt;" in page
    assert "\\| x" in md  # a pipe cannot open a new markdown table cell


def test_styles_and_format_only_blocks() -> None:
    blocks = [Table(["status"], [[Styled("FAIL", "fail", badge=True)]]),
              Raw(markdown="md only", formats=frozenset({"markdown"})),
              Raw(html="<b>html only</b>", formats=frozenset({"html"}))]
    md, page = to_markdown(blocks), to_html(blocks)
    assert "**FAIL**" in md and '<span class="badge fail">FAIL</span>' in page
    assert "md only" in md and "md only" not in page
    assert "<b>html only</b>" in page and "html only" not in md


def test_both_renderings_show_control_characters_never_obey_them() -> None:
    """Text from lens.adapters and datasets reaches every block kind; an ESC must not reach a
    terminal that cats report.md, a newline must not end a table row or start a heading, and a
    NUL must not reach the HTML parser."""
    hostile = "id\x1b[2J\nmore\x00"
    blocks = [Heading(hostile), Para(hostile), Bullets([hostile]),
              Table(["adapter", "answered"], [[hostile, Styled(hostile, "fail", badge=True)]])]
    md, page = to_markdown(blocks), to_html(blocks)
    for text in (md, page):
        assert "\x1b" not in text and "\x00" not in text
        assert "\u241b" in text and "\u2400" in text
    assert "\nmore" not in md  # the newline is shown (␊), so no heading or row is broken
    table_rows = [ln for ln in md.splitlines() if ln.startswith("| id")]
    assert len(table_rows) == 1 and table_rows[0].count(" | ") == 1
