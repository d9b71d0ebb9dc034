"""What CI's second stage runs: every test the first stage did not pass.

CI runs the suite twice: in a fresh clone with only the README's extras (stage 1), then in a
checkout with every extra (stage 2). A test that passed in stage 1 gives the same answer in
stage 2 unless what an extra installs changes it, so stage 2 runs the tests stage 1 skipped (a
missing extra, a missing system package, a check that insists on CI), the tests stage 1 did not
have (a module skipped whole), and the tests marked ``extras_sensitive`` (an extra moves a
library they exercise to another version: litellm's extra takes openai back a major version).

Stage 1 records the tests that passed in pytest's cache (key ``lens/passed``); stage 2 is given
that file as ``--passed-in=FILE`` (one word: the option lives in the suite's conftest, so pytest
reads a separate FILE as a test path, and picks its root by it, before it knows the option) and
deselects those tests, saying how many.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

CACHE_KEY = "lens/passed"
OPTION = "--passed-in"


class StageRecord:
    """Collects the node ids of tests whose every phase passed, on the process that reports."""

    def __init__(self) -> None:
        self.passed: set[str] = set()
        self.failed: set[str] = set()

    def take(self, report: pytest.TestReport) -> None:
        if report.failed or report.skipped:
            self.failed.add(report.nodeid)
        elif report.when == "call" and report.passed:
            self.passed.add(report.nodeid)

    def passed_ids(self) -> list[str]:
        return sorted(self.passed - self.failed)


def add_option(parser: pytest.Parser) -> None:
    parser.addoption(
        OPTION, metavar="FILE", default=None,
        help="run only the tests that did not pass in the run whose pytest cache file "
             f"(.pytest_cache/v/{CACHE_KEY}) is FILE, and those marked extras_sensitive "
             "(CI's second stage); give it as --passed-in=FILE")


def read_passed(path: Path) -> set[str]:
    try:
        ids = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise pytest.UsageError(f"{OPTION} {path}: cannot read the first stage's record ({exc}); "
                                "run the first stage's suite in full first") from exc
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise pytest.UsageError(f"{OPTION} {path}: not a list of test ids")
    return set(ids)


def deselect_passed(config: pytest.Config, items: list[pytest.Item]) -> None:
    value = config.getoption(OPTION)
    if value is None:
        return
    passed = read_passed(Path(value))
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        rerun = item.nodeid not in passed or item.get_closest_marker("extras_sensitive")
        (keep if rerun else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def summary_line(config: pytest.Config) -> str | None:
    """Says, at the end of the run, how many tests the first stage's record kept out."""
    value = config.getoption(OPTION)
    if value is None:
        return None
    return (f"{OPTION}: the {len(read_passed(Path(value)))} tests that passed in the first stage "
            "were not run again, but for those marked extras_sensitive")
