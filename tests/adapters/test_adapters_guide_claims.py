"""What the adapter guide says about date filters and context, held to the code: its
``date_filters.py`` helper, used as its section 2a says, passes the conformance suite's filter
check; and its dbm example run beside sqlite_fts (the guide's first run, on a dataset made by
``lens datasets generate`` as the guide says) gets the context-parity warning the guide
announces."""

from __future__ import annotations

import json
import types
from pathlib import Path
from typing import Any

import anyio
import pytest

from lens import CapabilityManifest, Document, Episode, MemoryAdapter, SearchResult
from lens.testing import run_conformance
from tests.adapters.test_adapters_guide_example import guide_files
from tests.support.cli import Lens, cli_runner


def _guide_module(name: str) -> types.ModuleType:
    module = types.ModuleType(name.removesuffix(".py"))
    exec(compile(guide_files()[name], name, "exec"), module.__dict__)
    return module


class Dated(MemoryAdapter):
    """Every episode, filtered with the guide's ``date_range`` as its section 2a says."""

    def __init__(self) -> None:
        self.date_range = _guide_module("date_filters.py").date_range
        self.episodes: list[Episode] = []

    async def reset(self, scope_id: str) -> None:
        self.episodes = []

    async def ingest(self, episode: Episode) -> None:
        self.episodes.append(episode)

    async def search(self, query: str, filters: dict[str, Any] | None = None,
                     limit: int | None = None) -> list[SearchResult]:
        start, end = self.date_range(filters)
        words = set(query.lower().split())
        hits = [e for e in self.episodes if words & set(e.text.lower().split())
                and (start is None or start <= e.timestamp) and (end is None or e.timestamp <= end)]
        return [SearchResult(ref_id=e.episode_id, text=e.text) for e in hits][: limit or 10]

    async def retrieve(self, ref_id: str) -> Document | None:
        found = [e for e in self.episodes if e.episode_id == ref_id]
        return Document(ref_id=ref_id, text=found[0].text) if found else None

    async def get_capabilities(self) -> CapabilityManifest:
        return CapabilityManifest(search_modes=["keyword"],
                                  filter_fields=["start_date", "end_date"])


def test_guide_date_filters_pass_the_suite() -> None:
    results = anyio.run(lambda: run_conformance(Dated, ["declared_filters_work",
                                                        "exact_phrase_found"]))
    assert [(r.name, r.status) for r in results] == [("declared_filters_work", "passed"),
                                                     ("exact_phrase_found", "passed")]
    date_range = _guide_module("date_filters.py").date_range
    start, end = date_range({"start_date": "2024-03-01T09:00:00", "end_date": "2024-03-01"})
    assert start is not None and end is not None and start.tzinfo is not None
    assert (end - start).total_seconds() > 14 * 3600  # a bare end date is the whole day
    with pytest.raises(ValueError, match="not a date such as 2024-03-01"):
        date_range({"end_date": "last week"})


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def test_guide_first_run_warns_on_context_parity(lens: Lens, tmp_path: Path) -> None:
    files = guide_files()
    (tmp_path / "dbm_memory.py").write_text(files["dbm_memory.py"])
    made = lens("datasets", "generate", "--domain", "ops,clinical", "--seed", "1", "--plan",
                "compact", "--episodes", "30", "--out", "first-dataset.json")
    assert made.returncode == 0, made.stderr
    config = files["first-run.yaml"].replace("- name: dbm_memory",
                                             "- name: dbm_memory:DbmMemory")
    (tmp_path / "first-run.yaml").write_text(config)
    ran = lens("run", "first-run.yaml", "--quiet", "--limit", "6")
    assert ran.returncode in (0, 1), ran.stderr
    run = next((tmp_path / "runs").iterdir())
    check = next(c for c in json.loads((run / "summary.json").read_text())["checklist"]
                 if c["id"] == "context_parity")
    assert check["status"] == "warn", check
    assert "dbm_memory:DbmMemory receives" in check["detail"]
    assert "of sqlite_fts" in check["detail"]
