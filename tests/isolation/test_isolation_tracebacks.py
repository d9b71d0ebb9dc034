"""A failure of an isolated adapter (its own process, the default for adapters outside lens) is
written to ``errors/`` with the adapter's own frames, its file and line, and what it was handling
(the episode it was ingesting, the query it was searching for), as an in-process failure is:
through the real CLI, with an adapter module written in a temporary folder."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.core.helpers import make_dataset, write_json
from tests.support.cli import Lens, cli_runner

MODULE = '''
import time

from lens import CapabilityManifest, MemoryAdapter, SearchResult


class Broken(MemoryAdapter):
    def __init__(self, fail_in="ingest"):
        if fail_in == "start":
            raise RuntimeError("no database configured")  # START LINE
        self.fail_in = fail_in
        self.eps = []

    async def reset(self, scope_id):
        self.eps.clear()

    async def ingest(self, episode):
        if self.fail_in == "ingest" and len(self.eps) == 2:
            raise ValueError("cannot parse the episode")  # INGEST LINE
        self.eps.append(episode)

    async def search(self, query, filters=None, limit=None):
        if self.fail_in == "search":
            raise KeyError("index missing")  # SEARCH LINE
        if self.fail_in == "hang":
            time.sleep(3600)  # HANG LINE
        return [SearchResult(ref_id=e.episode_id, text=e.text) for e in self.eps[-2:]]

    async def retrieve(self, ref_id):
        return None

    async def get_capabilities(self):
        return CapabilityManifest()
'''


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def _line(module: Path, mark: str) -> int:
    lines = module.read_text(encoding="utf-8").splitlines()
    return next(i for i, text in enumerate(lines, 1) if mark in text)


def _run(lens: Lens, tmp_path: Path, fail_in: str, **adapter: object
         ) -> tuple[Path, Path, dict[str, str]]:
    # A module name of its own per test: the CLI runs in this process, which keeps imports.
    module = tmp_path / f"broken_memory_{fail_in}.py"
    module.write_text(MODULE, encoding="utf-8")
    dataset = make_dataset(n_episodes=4, checkpoints=(4,), questions_per_checkpoint=1)
    write_json(tmp_path / "ds.json", dataset)
    (tmp_path / "run.yaml").write_text(yaml.safe_dump({
        "name": "tb", "dataset": {"path": "ds.json"},
        "adapters": [{"name": f"{module.stem}:Broken", "label": "broken",
                      "options": {"fail_in": fail_in}, "isolation": "process", **adapter}],
        "agent": {"model": "scripted/policy"}, "out_dir": "runs", "cache": {"enabled": False},
    }), encoding="utf-8")
    lens("run", "run.yaml", "--quiet")
    (run,) = (tmp_path / "runs").iterdir()
    errors = {p.name: p.read_text(encoding="utf-8") for p in (run / "errors").iterdir()}
    streamed = sorted(dataset["scopes"][0]["episodes"], key=lambda e: e["timestamp"])
    third_episode = streamed[2]["episode_id"]
    return module, run, {"episode": third_episode, **errors}


def test_ingest_failure_names_the_adapters_line_and_the_episode(lens: Lens,
                                                                tmp_path: Path) -> None:
    module, _, found = _run(lens, tmp_path, "ingest")
    episode = found.pop("episode")
    (text,) = found.values()
    assert f'File "{module}", line {_line(module, "INGEST LINE")}, in ingest' in text, text
    assert "ValueError: cannot parse the episode" in text
    assert f"while ingesting episode {episode!r} of scope 's1'" in text
    # lens's own frames follow, after the adapter's.
    assert text.index(str(module)) < text.index("lens/memory/executor/remote.py")


def test_start_failure_names_the_adapters_constructor(lens: Lens, tmp_path: Path) -> None:
    module, _, found = _run(lens, tmp_path, "start")
    found.pop("episode")
    (text,) = found.values()
    assert f'File "{module}", line {_line(module, "START LINE")}, in __init__' in text, text
    assert f"while starting adapter '{module.stem}:Broken'" in text
    assert "RuntimeError: no database configured" in text


def test_search_failure_names_the_adapters_line_and_the_query(lens: Lens,
                                                              tmp_path: Path) -> None:
    module, _, found = _run(lens, tmp_path, "search")
    found.pop("episode")
    assert found, "no tool-call traceback written"
    for name, text in found.items():
        assert ".tool" in name
        assert f'File "{module}", line {_line(module, "SEARCH LINE")}, in search' in text, text
        assert "while searching for " in text


def test_a_hung_call_leaves_the_adapters_stack_and_the_query(lens: Lens, tmp_path: Path) -> None:
    # The search blocks its process for good; at call_timeout_s lens asks the process for its
    # threads' stacks, then stops it: the error file shows where the adapter's code was.
    module, _, found = _run(lens, tmp_path, "hang", call_timeout_s=2)
    found.pop("episode")
    (text,) = found.values()
    assert "did not return within 2 s (call_timeout_s) while searching for " in text, text
    assert "the adapter's threads when the call timed out" in text
    assert f'File "{module}", line {_line(module, "HANG LINE")} in search' in text, text
