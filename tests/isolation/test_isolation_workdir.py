"""An isolated adapter's process imports the lens its driver imports, whatever the working
directory holds: a folder named ``lens`` (a clone, a project of that name) beside the config
must not shadow lens in the worker, and a third-party adapter found through PYTHONPATH must
still load there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from tests.core.helpers import make_dataset, write_json

ROOT = Path(__file__).resolve().parents[2]

ADAPTER = '''
from lens import CapabilityManifest, Document, MemoryAdapter, SearchResult


class RecentMemory(MemoryAdapter):
    def __init__(self):
        self.eps = []

    async def reset(self, scope_id):
        self.eps.clear()

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


def _lens_command() -> list[str]:
    # The installed console script when there is one (how a user starts lens), else the
    # interpreter with -P: either way the driver itself does not import from the current folder.
    script = Path(sys.executable).parent / "lens"
    return [str(script)] if script.is_file() else [sys.executable, "-P", "-m", "lens"]


def test_isolated_adapter_runs_from_a_folder_holding_lens_and_datasets(tmp_path: Path) -> None:
    work = tmp_path / "project"
    (work / "lens").mkdir(parents=True)
    # A regular package of that name: what `python -m` in the worker would import first.
    (work / "lens" / "__init__.py").write_text("# not lens\n", encoding="utf-8")
    (work / "datasets").mkdir()
    write_json(work / "datasets" / "ds.json",
               make_dataset(n_episodes=4, checkpoints=(2, 4), questions_per_checkpoint=1))
    third = tmp_path / "site"
    third.mkdir()
    (third / "recent_memory.py").write_text(ADAPTER, encoding="utf-8")
    (work / "run.yaml").write_text(yaml.safe_dump({
        "name": "shadow", "dataset": {"path": "datasets/ds.json"},
        "adapters": [{"name": "recent_memory:RecentMemory", "label": "recent"}],
        "agent": {"model": "scripted/policy"}, "out_dir": "runs",
        "cache": {"enabled": False},
    }), encoding="utf-8")
    env = {**os.environ, "LENS_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(third)])}
    proc = subprocess.run([*_lens_command(), "run", "run.yaml", "--quiet"], cwd=work,
                          capture_output=True, text=True, env=env, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 answered now, 0 empty, 0 errored" in proc.stdout, proc.stdout
    (run,) = (work / "runs").iterdir()
    records = [json.loads(line) for line in
               (run / "records.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["status"] for r in records] == ["answered", "answered"]
    assert all(r["retrieved_refs"] for r in records)
    started = [json.loads(line) for line in
               (run / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    assert not [e for e in started if e["kind"] == "unit_error"]


def test_a_module_adapter_in_the_current_folder_loads_from_the_script_too(tmp_path: Path
                                                                           ) -> None:
    """docs/writing-an-adapter.md: a ``module:Class`` adapter may live in the folder lens runs
    from. The console script, unlike ``python -m``, does not put that folder on the path; lens
    adds it (last, so the ``lens`` folder beside it still cannot shadow lens), and the isolated
    worker inherits it."""
    work = tmp_path / "project"
    (work / "lens").mkdir(parents=True)
    (work / "lens" / "__init__.py").write_text("# not lens\n", encoding="utf-8")
    (work / "recent_memory.py").write_text(ADAPTER, encoding="utf-8")
    write_json(work / "ds.json",
               make_dataset(n_episodes=4, checkpoints=(2, 4), questions_per_checkpoint=1))
    (work / "run.yaml").write_text(yaml.safe_dump({
        "name": "here", "dataset": {"path": "ds.json"},
        "adapters": [{"name": "recent_memory:RecentMemory", "label": "recent"}],
        "agent": {"model": "scripted/policy"}, "out_dir": "runs",
        "cache": {"enabled": False},
    }), encoding="utf-8")
    env = {**os.environ, "LENS_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([*_lens_command(), "run", "run.yaml", "--quiet"], cwd=work,
                          capture_output=True, text=True, env=env, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 answered now, 0 empty, 0 errored" in proc.stdout, proc.stdout
