"""What the memory wrote on real LongMemEval items (the oracle sample beside the project):
LongMemEval's own flat-BM25 memory lists its documents as its search shows them, and a run over
the imported items scores them beside ``sqlite_fts``'s, with the update figure unknown (the
release records no superseded value) and said so. Skips, naming the path, without the data."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
import yaml

from lens.adapters.longmemeval_bm25 import LongMemEvalBm25Adapter
from lens.data.dataset import Episode
from lens.memory.listing import state_digest
from lens.scoring.measures.write_side import read_write_side
from lens.testing.conformance import run_check
from tests.support.beside import require_beside
from tests.support.cli import Lens, cli_runner
from tests.support.extras import skip_module_unless

skip_module_unless("bm25")

SESSION = ("Chat session of 2023/05/20 (Sat) 02:21.\nuser: I moved to Lisbon\n"
           "assistant: Nice city.\nuser: my rent is 1400 euros")


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


@pytest.mark.parametrize(("granularity", "items"), [
    ("session", [("s_001", SESSION)]),
    ("turn", [("s_001#t1", "user: I moved to Lisbon\nassistant: Nice city."),
              ("s_001#t3", "user: my rent is 1400 euros")])])
def test_longmemeval_bm25_lists_its_documents(granularity: str,
                                              items: list[tuple[str, str]]) -> None:
    when = datetime(2023, 5, 20, 2, 21, tzinfo=UTC)
    a = LongMemEvalBm25Adapter(granularity=granularity)
    a.reset("s")
    a.ingest(Episode(episode_id="s_001", scope_id="s", timestamp=when, text=SESSION))
    a.prepare("s", 1)
    listing = a.list_memory("s", 1)
    assert [(i.item_id, i.text) for i in listing.items] == items
    assert all(i.source_episodes == ["s_001"] and i.changed_at == when for i in listing.items)
    assert state_digest(a.list_memory("s", 1)) == state_digest(listing)
    assert a.get_capabilities().memory_listing
    a.reset("t")
    assert a.list_memory("t", 0).items == []


def test_longmemeval_bm25_passes_the_listing_check() -> None:
    result = anyio.run(run_check, "memory_listing_well_formed", LongMemEvalBm25Adapter)
    assert result.status == "passed", result


def test_real_longmemeval_items_score_what_the_memory_wrote(tmp_path: Path, lens: Lens) -> None:
    sample = require_beside("shared", "longmemeval-sample", "longmemeval_oracle_sample.json",
                            what="the LongMemEval oracle sample")
    items = json.loads(sample.read_text(encoding="utf-8"))
    picked = [it for it in items if it["question_id"] in ("001be529", "gpt4_213fd887")]
    source = tmp_path / "two.json"
    source.write_text(json.dumps(picked), encoding="utf-8")
    data = tmp_path / "lme.json"
    assert lens("datasets", "import", "--format", "longmemeval", str(source), "--out",
                str(data)).returncode == 0
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "lme", "dataset": {"path": str(data)},
        "adapters": [{"name": "longmemeval_bm25"}, {"name": "sqlite_fts"}],
        "agent": {"model": "scripted/policy"}, "out_dir": str(tmp_path / "runs"),
        "cache": {"enabled": False}}), encoding="utf-8")
    res = lens("run", str(cfg))
    assert res.returncode == 0, res.stdout + res.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    ws = read_write_side(run_dir)
    assert ws is not None and ws.unlisted == []
    for arm in ("longmemeval_bm25", "sqlite_fts"):
        figs = ws.arms[arm]
        assert figs["items_per_episode"].mean == 1.0
        assert figs["extraction_recall"].n == 2
        # No superseded figure in the release: unknown, never 0, and the report says why.
        assert figs["update_current"].mean is None
    report = (run_dir / "report.md").read_text(encoding="utf-8")
    section = report.split("## What the memory wrote", 1)[1]
    assert "scopes of other sources record no superseded figures" in section
    assert "longmemeval_bm25: " in res.stdout.split("What the memory wrote", 1)[1]
