"""Hostile inputs get what the README's failure table promises, through the CLI: JSON nested
100,000 deep (objects and arrays), a base_url that is not http(s) and weights that leave the
composite nothing lens can compute are refused with exit 2 and one message before any work; a
provider's Retry-After of a day fails the call at once with a clear error instead of stalling
the run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from lens.models.limits import MAX_PAUSE_S
from lens.scoring.metrics import default_weights
from tests.core.helpers import make_dataset, write_json
from tests.support.cli import Lens, cli_runner
from tests.support.fake_openai import FakeOpenAI, RecordedRequest, Reply

DEPTH = 100_000


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def _config(tmp_path: Path, dataset: Path, **over: Any) -> Path:
    cfg = {"name": "hostile", "dataset": {"path": str(dataset)},
           "adapters": [{"name": "sqlite_fts"}], "agent": {"model": "scripted/policy"},
           "out_dir": "runs", "cache": {"enabled": False}, **over}
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def _good(tmp_path: Path) -> Path:
    return write_json(tmp_path / "ds.json", make_dataset(n_episodes=4, checkpoints=(4,)))


@pytest.mark.parametrize("shape", ["arrays", "objects", "meta"])
def test_deeply_nested_json_is_refused_before_any_work(tmp_path: Path, lens: Lens,
                                                       shape: str) -> None:
    deep = {"arrays": "[" * DEPTH + "]" * DEPTH,
            "objects": '{"a":' * DEPTH + "1" + "}" * DEPTH}
    if shape == "meta":
        # Inside a valid-looking dataset, where the file is read as a stream.
        text = ('{"scopes": [{"scope_id": "s", "episodes": [], "meta": '
                + deep["objects"] + '}], "questions": []}')
    else:
        text = '{"scopes": [], "questions": ' + deep[shape] + "}"
    ds = tmp_path / "deep.json"
    ds.write_text(text, encoding="utf-8")
    res = lens("run", str(_config(tmp_path, ds)))
    assert res.returncode == 2
    assert "nested more than 64 levels deep" in res.stderr
    assert "Traceback" not in res.stderr and "MemoryError" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("url", ["ftp://localhost:8080/v1", "localhost:8080/v1",
                                 "file:///etc/passwd", "http://"])
def test_base_url_that_is_not_http_is_refused_at_config_time(tmp_path: Path, lens: Lens,
                                                             url: str) -> None:
    cfg = _config(tmp_path, _good(tmp_path), agent={"model": "openai/x", "base_url": url})
    res = lens("run", str(cfg))
    assert res.returncode == 2
    assert "field 'agent.base_url': must be an http:// or https:// URL" in res.stderr
    assert not (tmp_path / "runs").exists()


def test_weights_that_leave_the_composite_nothing_are_refused(tmp_path: Path,
                                                              lens: Lens) -> None:
    zero = {k: 0 for k in default_weights()}
    cfg = _config(tmp_path, _good(tmp_path), scoring={"weights": zero})
    res = lens("run", str(cfg))
    assert res.returncode == 2 and "at least one weight must be above 0" in res.stderr
    # All the weight on a metric only a judge grades, and no judge: always unknown.
    cfg = _config(tmp_path, _good(tmp_path),
                  scoring={"weights": {**zero, "answer_quality": 1.0}})
    res = lens("run", str(cfg))
    assert res.returncode == 2
    assert "field 'scoring.weights'" in res.stderr and "no judge" in res.stderr
    assert not (tmp_path / "runs").exists()


def test_a_retry_after_of_a_day_fails_the_call_at_once(tmp_path: Path, lens: Lens) -> None:
    def respond(req: RecordedRequest) -> Reply:
        return Reply.error(429, "slow down", retry_after=86_400)

    with FakeOpenAI(respond) as server:
        cfg = _config(tmp_path, _good(tmp_path),
                      agent={"model": "openai/x", "base_url": server.base_url})
        res = lens("run", str(cfg), "--quiet")
        asked = server.count
        first, second = server.requests[:2]
    # Each question's call fails once, at once: no retry, and no pause of the endpoint. The
    # first request probes the endpoint alone, so the second follows the first's 429; a pause
    # would hold it MAX_PAUSE_S (60 s), against milliseconds without one, so half of that is
    # far from both.
    assert asked == 2
    assert first.ended is not None
    assert 0 <= second.started - first.ended < MAX_PAUSE_S / 2, (first, second)
    assert res.returncode == 1  # every question errored: the run failed its purpose
    assert "2 errored" in res.stdout
    run_dir = next((tmp_path / "runs").iterdir())
    errors = [json.loads(line)["error"] for line in
              (run_dir / "records.jsonl").read_text(encoding="utf-8").splitlines()]
    assert all("asked to wait 86400 s before retrying (Retry-After), over the 120 s lens "
               "waits for one call" in e for e in errors), errors
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    row = next(c for c in summary["checklist"] if c["id"] == "failures")
    assert row["status"] == "fail"
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    assert any("**FAIL**" in line and "failed or errored questions" in line
               for line in md.splitlines())
    assert "exit status 1" in res.stderr


@pytest.mark.parametrize("fmt", ["locomo", "longmemeval"])
def test_deeply_nested_source_is_refused_by_the_importers(tmp_path: Path, lens: Lens,
                                                          fmt: str) -> None:
    src = tmp_path / "src.json"
    src.write_text("[" + '{"a":' * DEPTH + "1" + "}" * DEPTH + "]", encoding="utf-8")
    res = lens("datasets", "import", "--format", fmt, str(src), "--out", "out.json")
    assert res.returncode == 2
    assert "nested" in res.stderr and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out.json").exists()
