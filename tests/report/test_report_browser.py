"""report.html in a real headless Chromium (Debian's ``chromium`` package), driven over the
DevTools protocol through ``--remote-debugging-pipe``: the summary table, checklist and plots
render with real sizes, a question's drill-down opens on a mouse click, the filter reacts to
typing, and the console stays free of errors. Skipped outside CI when Chromium is missing;
in CI (``CI`` set) a missing browser fails the test."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from lens.report import write_reports
from tests.report.cdp import PipeBrowser, headless_browser
from tests.report.runfactory import RunSpec, make_run


@pytest.fixture
def browser() -> Iterator[PipeBrowser]:
    with headless_browser() as b:
        yield b


def test_report_renders_in_headless_chromium(browser: PipeBrowser, tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, RunSpec(
        adapters=("sqlite_fts", "null", "<b>bold</b>"), questions_per_scope=20, error_every=19,
        answer=lambda s, q: "<script>console.error('injected')</script> see [ep_1]"))
    paths = write_reports(run_dir)
    summary = json.loads(paths.summary.read_text())
    browser.navigate(paths.html.resolve().as_uri())
    js = browser.evaluate

    assert js("document.title").startswith("lens report")
    headers = js("[...document.querySelectorAll('#summary-table thead th')]"
                 ".map(th => th.textContent)")
    assert headers == ["metric", "sqlite_fts", "null", "<b>bold</b>"]
    first_cells = js("[...document.querySelectorAll('#summary-table tbody tr')]"
                     ".map(tr => tr.cells[0].textContent)")
    assert first_cells == summary["metrics"]
    composite = summary["adapters"]["null"]["metrics"]["composite"]
    null_cell = js("document.querySelector('#summary-table tbody tr').cells[2].textContent")
    assert null_cell.startswith(f"{composite['mean']:.3f} [{composite['low']:.3f}")
    table_box = js("(() => { const r = document.getElementById('summary-table')"
                   ".getBoundingClientRect(); return [r.width, r.height]; })()")
    assert table_box[0] > 200 and table_box[1] > 40

    assert js("document.querySelectorAll('#checklist tbody tr').length") == \
        len(summary["checklist"])
    badges = set(js("[...document.querySelectorAll('#checklist .badge')]"
                    ".map(b => b.textContent)"))
    assert {"PASS", "FAIL"} <= badges

    plots = js("""[...document.querySelectorAll('svg.plot')].map(s => {
        const r = s.getBoundingClientRect();
        return {label: s.getAttribute('aria-label'), w: r.width, h: r.height,
                marks: s.querySelectorAll('rect.bar, circle.point').length,
                whiskers: s.querySelectorAll('line.whisker').length,
                note: (s.querySelector('text.pnote') || {}).textContent || ''};
    })""")
    # the factory's runs carry no prices, so the cost frontier says its x is unknown
    # instead of drawing points at zero cost
    frontier = [p for p in plots if "total cost per question" in (p["label"] or "")]
    assert len(frontier) == 1 and frontier[0]["marks"] == 0
    assert "unknown" in frontier[0]["note"], frontier
    drawn = [p for p in plots if p not in frontier]
    assert len(drawn) == 5
    for p in drawn:
        assert p["w"] > 200 and p["h"] > 60, p
        assert p["marks"] > 0, p
    assert plots[0]["marks"] == 5 * 3  # question types × adapters
    assert plots[0]["whiskers"] > 0

    assert js("document.querySelector('details.q').open") is False
    browser.click("details.q > summary")
    assert js("document.querySelector('details.q').open") is True
    text = js("document.querySelector('details.q').innerText")
    assert "Transcript" in text and "memory_search" in text
    assert "<script>console.error('injected')</script>" in text

    browser.click("#qfilter")
    browser.type_text("error")
    shown = js("[...document.querySelectorAll('details.q')]"
               ".filter(d => d.style.display !== 'none').length")
    assert 0 < shown < 180
    assert js("document.getElementById('qcount').textContent") == f"{shown} shown"

    shot = tmp_path / "report.png"
    browser.screenshot(shot)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    assert browser.console_errors() == []


def test_console_errors_are_caught(browser: PipeBrowser, tmp_path: Path) -> None:
    """The check above can fail: a page that logs an error, or whose injected script the
    report's Content-Security-Policy blocks, is reported."""
    run_dir = make_run(tmp_path, RunSpec(scopes=1, questions_per_scope=2))
    page = write_reports(run_dir).html.read_text()
    hostile = tmp_path / "hostile.html"
    hostile.write_text(page.replace("</body>", "<script>console.error('boom')</script></body>"))
    browser.navigate(hostile.resolve().as_uri())
    errors = browser.console_errors()
    assert any("Content Security Policy" in e for e in errors), errors
    assert not any("boom" in e for e in errors)  # blocked, so it never ran
