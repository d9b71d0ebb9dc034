"""Each arm's adapter is recorded (distribution and version, a digest of its source files, the
libraries it imports) in the manifest and so in the bundle; ``--resume`` refuses an arm whose
adapter changed unless told to accept it, which the events record; ``lens compare`` shows the
versions. Through the CLI, with an author's package in its own folder."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.core.helpers import make_dataset, write_json
from tests.support.cli import Lens, cli_runner

ADAPTER = '''
import yaml

from lens.memory.adapter import CapabilityManifest, Document, MemoryAdapter, SearchResult


class Notes(MemoryAdapter):
    def __init__(self):
        self.eps = []

    async def reset(self, scope_id):
        self.eps = []

    async def ingest(self, episode):
        self.eps.append(episode)

    async def search(self, query, filters=None, limit=None):
        return [SearchResult(ref_id=e.episode_id, text=e.text) for e in self.eps[-3:]]

    async def retrieve(self, ref_id):
        return next((Document(ref_id=e.episode_id, text=e.text) for e in self.eps
                     if e.episode_id == ref_id), None)

    async def get_capabilities(self):
        return CapabilityManifest()
'''


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def _setup(tmp_path: Path) -> Path:
    package = tmp_path / "notesmem"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "memory.py").write_text(ADAPTER, encoding="utf-8")
    ds = write_json(tmp_path / "ds.json", make_dataset(n_episodes=4, checkpoints=(2, 4),
                                                       questions_per_checkpoint=2))
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "ident", "dataset": {"path": str(ds)},
        "adapters": [{"name": "notesmem.memory:Notes", "label": "notes"},
                     {"name": "sqlite_fts", "label": "fts"}],
        "agent": {"model": "scripted/policy"}, "out_dir": str(tmp_path / "runs"),
    }), encoding="utf-8")
    return cfg


def _manifest(run: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    return data


def test_versions_are_recorded_resume_refuses_a_changed_adapter_and_compare_shows_them(
        lens: Lens, tmp_path: Path) -> None:
    cfg = _setup(tmp_path)
    first = lens("run", str(cfg), "--quiet")
    assert first.returncode == 0, first.stderr
    run = next((tmp_path / "runs").glob("ident-*"))
    arms = _manifest(run)["arms"]
    notes = arms["notes"]["adapter_identity"]
    assert notes["target"] == "notesmem.memory:Notes"
    assert notes["distribution"] is None and notes["source_files"] == 2
    assert "PyYAML" in notes["libraries"]
    fts = arms["fts"]["adapter_identity"]
    assert fts["distribution"] == "lens-memory-eval" and fts["version"]

    # The bundle carries the run's manifest, and with it the identities.
    bundle = tmp_path / "b.tar.gz"
    assert lens("export", str(run), "--out", str(bundle)).returncode == 0
    with tarfile.open(bundle) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("run/manifest.json"))
        packed = json.loads(tar.extractfile(member).read())  # type: ignore[union-attr]
    assert packed["arms"]["notes"]["adapter_identity"] == notes

    shown = lens("compare", str(run))
    assert shown.returncode == 0, shown.stderr
    assert "notes: notesmem.memory:Notes (no installed distribution) (source " \
        f"{notes['source_digest'][:8]}" in shown.stdout
    assert f"fts: lens-memory-eval {fts['version']} (source" in shown.stdout

    # The author edits the adapter: resuming would mix two versions in one arm.
    (tmp_path / "notesmem" / "memory.py").write_text(ADAPTER + "\n# tuned\n", encoding="utf-8")
    refused = lens("run", str(cfg), "--quiet", "--resume", str(run))
    assert refused.returncode == 2
    assert "the adapter of 1 arm(s) changed" in refused.stderr
    assert "notes: source files changed" in refused.stderr
    assert "--accept-adapter-change" in refused.stderr and "Traceback" not in refused.stderr
    assert _manifest(run)["arms"]["notes"]["adapter_identity"] == notes  # nothing written

    accepted = lens("run", str(cfg), "--quiet", "--resume", str(run), "--accept-adapter-change")
    assert accepted.returncode == 0, accepted.stderr
    events = [json.loads(line) for line in
              (run / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    change = [e for e in events if e.get("kind") == "adapter_change_accepted"]
    assert len(change) == 1 and change[0]["arm"] == "notes", change
    assert any("source files changed" in c for c in change[0]["changes"])
    now = _manifest(run)["arms"]["notes"]
    assert now["adapter_identity"]["source_digest"] != notes["source_digest"]
    assert now["adapter_identity_before"] == [notes]
    # Resumed again with no change: nothing to accept.
    again = lens("run", str(cfg), "--quiet", "--resume", str(run))
    assert again.returncode == 0, again.stderr
