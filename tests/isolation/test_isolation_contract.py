"""A result that breaks the adapter contract (a dict where a ``Document`` belongs, and the like)
is the same failed call, with the same message and the same exit status, whether the adapter
runs in a process of its own or in lens's: through ``lens run`` in both isolations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.core.helpers import make_dataset, write_json
from tests.support.cli import Lens, cli_runner

BREAKS = "tests.isolation.hostile_adapters:BreaksContract"


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def _run(lens: Lens, tmp_path: Path, method: str, isolation: str) -> tuple[int, str, list[str]]:
    """The exit status, stderr, and every failure the run recorded (tool calls' errors, the
    questions' and the units' errors, the memory listing's errors without the name of their
    traceback file), in order."""
    ds = write_json(tmp_path / "ds.json", make_dataset(n_episodes=4, checkpoints=(2, 4),
                                                       questions_per_checkpoint=2))
    cfg = tmp_path / f"{isolation}.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": isolation, "dataset": {"path": str(ds)},
        "adapters": [{"name": BREAKS, "label": "breaks", "isolation": isolation,
                      "options": {"breaks": method}}],
        "agent": {"model": "scripted/policy"}, "out_dir": str(tmp_path / "runs"),
        "cache": {"enabled": False},
    }), encoding="utf-8")
    done = lens("run", str(cfg), "--quiet")
    run = next((tmp_path / "runs").glob(f"{isolation}-*"))
    failures: list[str] = []
    for line in (run / "records.jsonl").read_text(encoding="utf-8").splitlines():
        rec: dict[str, Any] = json.loads(line)
        failures += [str(c["error"]) for c in rec["tool_calls"] if c.get("error")]
        if rec.get("error"):
            failures.append(str(rec["error"]))
    for line in (run / "events.jsonl").read_text(encoding="utf-8").splitlines():
        event: dict[str, Any] = json.loads(line)
        if event.get("kind") == "memory_state" and event.get("phase") == "error":
            failures.append(str(event["error"]).rsplit(" (see errors/", 1)[0])
    return done.returncode, done.stderr, sorted(failures)


@pytest.mark.parametrize("method", ["search", "retrieve", "get_capabilities",
                                    "standing_context", "list_memory"])
def test_a_breach_fails_the_same_way_in_every_isolation(lens: Lens, tmp_path: Path,
                                                        method: str) -> None:
    own = _run(lens, tmp_path, method, "process")
    inside = _run(lens, tmp_path, method, "none")
    assert own[2], f"{method}: the breach was not counted as a failure"
    assert own[2] == inside[2], method
    assert any(f"{method} " in f or f"{method}'s" in f for f in own[2]), own[2]
    assert own[0] == inside[0] != 0, (own, inside)
