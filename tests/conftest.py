from __future__ import annotations

import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from lens.core import plugins
from tests.support import ci_stages

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATASETS = ROOT.parent / "shared" / "lens-datasets"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    if not SHARED_DATASETS.is_dir():
        pytest.skip(f"the published LENS scopes are not beside the project ({SHARED_DATASETS})")
    return SHARED_DATASETS


def project_entry_points() -> dict[str, dict[str, str]]:
    """The ``lens.*`` entry points pyproject.toml declares, as lens reads them once installed."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    return {group: dict(names) for group, names in declared.items() if group.startswith("lens.")}


@pytest.fixture(autouse=True, scope="session")
def _declared_plugins() -> Iterator[None]:
    # The tests see the plugins this checkout declares even when the installed metadata is
    # older (an editable install made before an entry point was added).
    with plugins.entry_points_added(project_entry_points()):
        yield


_STAGE = ci_stages.StageRecord()


def pytest_addoption(parser: pytest.Parser) -> None:
    ci_stages.add_option(parser)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    ci_stages.deselect_passed(config, items)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _STAGE.take(report)


def pytest_sessionfinish(session: pytest.Session) -> None:
    # Under pytest-xdist the controller receives every worker's reports; the workers keep quiet.
    config = session.config
    # Without the cache plugin (-p no:cacheprovider) there is nowhere to keep the record.
    cache = getattr(config, "cache", None)
    if hasattr(config, "workerinput") or cache is None:
        return
    if config.getoption(ci_stages.OPTION) is None:
        cache.set(ci_stages.CACHE_KEY, _STAGE.passed_ids())


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter,
                            config: pytest.Config) -> None:
    line = ci_stages.summary_line(config)
    if line:
        terminalreporter.write_line(line)
