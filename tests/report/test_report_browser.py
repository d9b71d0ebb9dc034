"""report.html in a real headless Chromium: the summary table and plots render, the drill-down
opens, and the console stays free of errors. Needs Debian's chromium and chromium-driver and
selenium from PyPI (installed by .ci/run); skipped outside CI when they are missing."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lens.report import write_reports
from tests.report.runfactory import RunSpec, make_run

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1200,1600")


def _missing() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install selenium)"
    for path in (CHROMIUM, CHROMEDRIVER):
        if not Path(path).exists():
            return f"{path} is missing (apt-get install -y chromium chromium-driver)"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    reason = _missing()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"browser test cannot run in CI: {reason}")
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="lens-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def test_report_renders_in_headless_chromium(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    run_dir = make_run(tmp_path, RunSpec(
        adapters=("sqlite_fts", "null", "<b>bold</b>"), error_every=19,
        answer=lambda s, q: "<script>console.error('injected')</script> see [ep_1]"))
    paths = write_reports(run_dir)
    summary = json.loads(paths.summary.read_text())
    browser.get(paths.html.resolve().as_uri())

    assert browser.title.startswith("lens report")
    table = browser.find_element(By.ID, "summary-table")
    headers = [th.text for th in table.find_elements(By.CSS_SELECTOR, "thead th")]
    assert headers == ["metric", "sqlite_fts", "null", "<b>bold</b>"]
    body = table.find_elements(By.CSS_SELECTOR, "tbody tr")
    assert [r.find_element(By.TAG_NAME, "td").text for r in body] == summary["metrics"]
    composite = summary["adapters"]["null"]["metrics"]["composite"]
    assert f"{composite['mean']:.3f} [{composite['low']:.3f}" in body[0].text
    assert table.size["height"] > 40 and table.size["width"] > 200

    checklist = browser.find_elements(By.CSS_SELECTOR, "#checklist tbody tr")
    assert len(checklist) == len(summary["checklist"])
    badges = {b.text for b in browser.find_elements(By.CSS_SELECTOR, "#checklist .badge")}
    assert {"PASS", "FAIL"} <= badges

    plots = browser.find_elements(By.CSS_SELECTOR, "svg.plot")
    assert len(plots) == 5
    for plot in plots:
        assert plot.size["width"] > 200 and plot.size["height"] > 60
        marks = plot.find_elements(By.CSS_SELECTOR, "rect.bar, circle.point")
        assert marks, plot.get_attribute("aria-label")
    assert len(plots[0].find_elements(By.CSS_SELECTOR, "rect.bar")) == 5 * 3  # types × arms

    first = browser.find_element(By.CSS_SELECTOR, "details.q")
    assert not first.find_element(By.TAG_NAME, "h4").is_displayed()
    first.find_element(By.TAG_NAME, "summary").click()
    assert first.get_attribute("open") is not None
    transcript = first.text
    assert "Transcript" in transcript and "memory_search" in transcript
    assert "<script>console.error('injected')</script>" in transcript

    box = browser.find_element(By.ID, "qfilter")
    box.send_keys("error")
    count = browser.find_element(By.ID, "qcount").text
    shown = [d for d in browser.find_elements(By.CSS_SELECTOR, "details.q") if d.is_displayed()]
    assert count == f"{len(shown)} shown" and 0 < len(shown) < 90

    shot = tmp_path / "report.png"
    browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 20_000
    errors = [e for e in browser.get_log("browser") if e.get("level") == "SEVERE"]
    assert errors == []
