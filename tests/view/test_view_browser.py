"""``lens view`` in a real headless Chromium (Debian's ``chromium``), driven over the DevTools
protocol as the report's browser test drives it: the pages load, a question's drill-down opens
from the list, the filters narrow it, a run in flight updates while the page stays open (no
reload), side by side shows the differences and lens compare's verdicts, and hostile labels stay
text. The page's console stays free of errors.

The screenshots in docs/img/ are made here: ``LENS_VIEW_SCREENSHOTS=docs/img python -m pytest
tests/view/test_view_browser.py`` writes them there (otherwise into the test's tmp folder).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.report.cdp import CDPError, PipeBrowser, headless_browser
from tests.report.runfactory import RunSpec, make_run
from tests.view.runs import DETAIL, HOSTILE, InFlight
from tests.view.server import lens_view, require_view_extra


@pytest.fixture
def browser() -> Iterator[PipeBrowser]:
    require_view_extra()
    with headless_browser() as b:
        yield b


def until(check: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    """Poll ``check`` until it returns something true (a page reloading in between is fine)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = check()
        except CDPError:
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


class Shots:
    def __init__(self, browser: PipeBrowser, tmp: Path) -> None:
        self.browser = browser
        self.tmp = tmp
        self.target = os.environ.get("LENS_VIEW_SCREENSHOTS")

    def take(self, name: str) -> None:
        path = self.tmp / f"{name}.png"
        self.browser.screenshot(path)
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000
        if self.target:
            Path(self.target).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, Path(self.target) / path.name)


def submit_and_wait(browser: PipeBrowser, action: Callable[[], None]) -> None:
    browser.events = [e for e in browser.events if e["method"] != "Page.loadEventFired"]
    action()
    try:
        browser.wait_event("Page.loadEventFired")
    except CDPError:
        logs = [e for e in browser.events if e["method"] == "Log.entryAdded"]
        raise AssertionError(f"no page load after the action; at "
                             f"{browser.evaluate('location.href')}; log {logs}") from None


def test_viewer_in_headless_chromium(browser: PipeBrowser, tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    alpha = make_run(folder, RunSpec(name="alpha", adapters=("sqlite_fts", "bm25s"),
                                     questions_per_scope=12, error_every=7, detail=DETAIL))
    beta = make_run(folder, RunSpec(name="beta", adapters=("hybrid",), questions_per_scope=12,
                                    detail=DETAIL))
    gamma = make_run(folder, RunSpec(name="gamma", seed=7, questions_per_scope=3))
    hostile = make_run(folder, RunSpec(name="hostile", adapters=(HOSTILE,), scopes=1,
                                       questions_per_scope=2, answer=lambda s, q: HOSTILE))
    live = InFlight(folder, RunSpec(name="live", scopes=3, questions_per_scope=10))
    live.commit(4)
    shots = Shots(browser, tmp_path)
    js = browser.evaluate
    with lens_view(folder) as base:
        # the run list
        browser.navigate(base + "/")
        assert js("document.querySelectorAll('#runs tbody tr').length") == 5
        names = js("[...document.querySelectorAll('#runs a.run')].map(a => a.textContent)")
        assert {alpha.name, beta.name, gamma.name, hostile.name, live.root.name} == set(names)
        row = js("[...document.querySelectorAll('#runs tbody tr')]"
                 f".find(tr => tr.textContent.includes('{hostile.name}')).textContent")
        assert "<script>console.error('pwned')</script>" in row and "␛" in row
        assert js("document.scripts.length") == 1 and js("document.images.length") == 0
        # the list follows the runs (the live run's last-event age) and stays inert
        status = f"document.querySelector(\"[data-run='{live.root.name}'][data-field=status]\")"
        first = js(f"{status}.textContent")
        until(lambda: js(f"{status}.textContent") != first, "the run list to refresh")
        row = js("[...document.querySelectorAll('#runs tbody tr')]"
                 f".find(tr => tr.textContent.includes('{hostile.name}')).textContent")
        assert "<script>console.error('pwned')</script>" in row and "␛" in row
        assert "\x1b" not in row and js("document.scripts.length") == 1
        shots.take("view-runs")

        # a run page: the report's content arrives (the page reloads itself when it is ready)
        submit_and_wait(browser, lambda: browser.click(f"a.run[href$='{alpha.name}']"))
        until(lambda: js("!!document.getElementById('summary-table')"), "the report")
        headers = js("[...document.querySelectorAll('#summary-table thead th')]"
                     ".map(th => th.textContent)")
        assert headers == ["metric", "sqlite_fts", "bm25s"]
        assert js("document.querySelectorAll('svg.plot').length") >= 4
        assert js("document.getElementById('live-questions').textContent") == "72"

        # questions: filters and drill-down
        submit_and_wait(browser, lambda: browser.click("#questions-link"))
        assert js("document.getElementById('qcount').textContent").startswith("72 of 72")
        browser.click("#f-q")
        browser.type_text("q01_00")
        submit_and_wait(browser, lambda: browser.click("#f-apply"))
        count = js("document.getElementById('qcount').textContent")
        assert count.startswith("20 of 72"), count  # q01_000..q01_009, two adapters
        submit_and_wait(browser, lambda: js(
            "(() => { const s = document.querySelector('select[name=status]');"
            " s.value = 'error'; s.dispatchEvent(new Event('change')); })()"))
        count = js("document.getElementById('qcount').textContent")
        assert 0 < int(count.split()[0]) < 20, count
        statuses = js("[...document.querySelectorAll('#questions tbody tr')]"
                      ".map(tr => tr.cells[6].textContent)")
        assert statuses and all(s == "error" for s in statuses)
        browser.navigate(f"{base}/runs/{alpha.name}/questions?"
                         + urlencode({"sort": "fact_recall", "order": "desc"}))
        values = js("[...document.querySelectorAll('#questions tbody tr')]"
                    ".map(tr => tr.cells[7].textContent)")
        known = [float(v) for v in values if v != "unknown"]
        assert known == sorted(known, reverse=True)
        submit_and_wait(browser, lambda: browser.click("#questions a.qlink"))
        assert "What changed in scope_" in js("document.getElementById('prompt').textContent")
        metrics = js("[...document.querySelectorAll('#metrics > tbody > tr')]"
                     ".map(tr => tr.cells[0].textContent)")
        assert "fact_recall" in metrics
        text = js("document.body.innerText")
        assert "not stated" in text and "the judge preferred" in text
        assert "memory_search" in text and "Transcript" in text
        shots.take("view-question")

        # a run in flight: the panel follows the writer without a reload
        browser.navigate(f"{base}/runs/{live.root.name}")
        js("window.__same_page = true")
        assert js("document.getElementById('live-questions').textContent") == "4/30"
        live.start(every_s=0.15, total=30)
        until(lambda: js("document.getElementById('live-questions').textContent") == "30/30",
              "the live panel to reach 30/30")
        assert js("window.__same_page") is True
        assert js("document.getElementById('live-nq').textContent") == "30"
        assert int(js("document.getElementById('live').getAttribute('data-updates')")) >= 2
        assert js("document.getElementById('live-bar').value") == 30
        shots.take("view-live")

        # side by side, with lens compare's verdicts; refused across conditions
        browser.navigate(f"{base}/compare?" + urlencode({"run": [alpha.name, beta.name]},
                                                        doseq=True))
        until(lambda: js("!!document.querySelector('#verdicts table')"), "the verdicts")
        assert js("document.querySelectorAll('#sbs tr.differs').length") > 0
        assert js("document.querySelectorAll('#sbs thead th').length") == 2 + 3
        assert "Paired comparisons" in js("document.getElementById('verdicts').innerText")
        shots.take("view-compare")
        assert browser.console_errors() == []

        # the hostile run's pages: every label and answer is text, nothing runs
        for path in (f"/runs/{hostile.name}/questions", f"/runs/{hostile.name}"):
            browser.navigate(base + path)
            assert js("document.scripts.length") == 1
            assert js("document.images.length") == 0
            assert "<script>console.error('pwned')</script>" in js("document.body.innerText")
        submit_and_wait(browser, lambda: browser.click("#questions-link"))
        submit_and_wait(browser, lambda: browser.click("#questions a.qlink"))
        assert js("document.scripts.length") == 1 and js("document.images.length") == 0
        assert "onerror=alert(1)" in js("document.body.innerText")
        assert browser.console_errors() == []

        browser.navigate(f"{base}/compare?" + urlencode({"run": [alpha.name, gamma.name]},
                                                        doseq=True))
        refused = js("document.body.innerText")
        assert "different conditions" in refused and "seed" in refused
    live.stop()


# Every column of the side-by-side question page: its tables and answers stay inside it, and no
# column overlaps the next.
SPILLS = """(() => {
  const cols = [...document.querySelectorAll('#side > div')];
  const out = [];
  cols.forEach((col, i) => {
    const c = col.getBoundingClientRect();
    for (const el of col.querySelectorAll('table, pre, h3, p')) {
      const r = el.getBoundingClientRect();
      if (r.right > c.right + 0.5 || r.left < c.left - 0.5) {
        out.push(`column ${i}: a ${el.tagName} spans ${r.left}..${r.right}, ` +
                 `the column ${c.left}..${c.right}`);
      }
    }
    if (i > 0) {
      const p = cols[i - 1].getBoundingClientRect();
      if (c.left < p.right - 0.5 && c.top < p.bottom && p.top < c.bottom) {
        out.push(`column ${i} overlaps column ${i - 1}`);
      }
    }
  });
  return [cols.length, out];
})()"""


@pytest.mark.parametrize("arms", [2, 4])
def test_side_by_side_question_columns_do_not_overlap(browser: PipeBrowser, tmp_path: Path,
                                                      arms: int) -> None:
    adapters = ("sqlite_fts", "bm25s", "hybrid", "recency")[:arms]
    folder = tmp_path / "runs"
    folder.mkdir()
    # A judge's detail as wide as real ones get: several columns of prose and a long token.
    facts = [{"fact": f"fact {i}: p99 latency rose to 410ms after the cache change",
              "matched": i % 2 == 0, "reason": "stated in the answer, with its source " * 3,
              "evidence": "ep_scope_00_1#chunk_" + "0123456789" * 8,
              "judge": "the answer names the value and the episode it comes from"}
             for i in range(3)]
    detail = {**DETAIL, "fact_recall": {"facts": facts}}
    run = make_run(folder, RunSpec(name="arms", adapters=adapters, scopes=1,
                                   questions_per_scope=2, detail=detail))
    shots = Shots(browser, tmp_path)
    with lens_view(folder) as base:
        url = f"{base}/compare/question?" + urlencode(
            {"run": run.name, "scope": "scope_00", "qid": "q00_000", "repeat": 0})
        for width in (1400, 2400):
            browser.send("Emulation.setDeviceMetricsOverride",
                         {"width": width, "height": 1000, "deviceScaleFactor": 1,
                          "mobile": False})
            browser.navigate(url)
            count, spills = browser.evaluate(SPILLS)
            assert count == arms, browser.evaluate("document.body.innerText")[:2000]
            shots.take(f"view-side-question-{arms}-arms-{width}")
            assert spills == [], spills
        assert browser.console_errors() == []
