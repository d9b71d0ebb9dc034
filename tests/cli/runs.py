"""Real runs for the command-line tests: ``lens run`` of the scripted policy (no model) over the
shipped quickstart dataset, several arms per run, under one condition."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from lens.commands.cli import main

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "datasets" / "quickstart.json"


def write_config(folder: Path, name: str, adapters: Sequence[str], **extra: object) -> Path:
    """A run config of the scripted policy over the quickstart dataset (JSON is YAML)."""
    folder.mkdir(parents=True, exist_ok=True)
    cfg = folder / f"{name}.yaml"
    cfg.write_text(json.dumps({
        "name": name, "dataset": {"path": str(QUICKSTART)},
        "adapters": [{"name": a} for a in adapters],
        "agent": {"model": "scripted/policy", "budget": {"max_turns": 6, "max_tool_calls": 8}},
        "out_dir": str(folder / "runs"), **extra}))
    return cfg


def run_dir_of(folder: Path, name: str) -> Path:
    return next(p for p in sorted((folder / "runs").iterdir()) if p.name.startswith(name))


def real_run(folder: Path, name: str, adapters: Sequence[str], *args: str,
             **extra: object) -> Path:
    """The run directory of ``lens run CONFIG --quiet ARGS`` (which must succeed)."""
    cfg = write_config(folder, name, adapters, **extra)
    code = main(["run", str(cfg), "--quiet", *args])
    assert code == 0, f"lens run {name} exited {code}"
    return run_dir_of(folder, name)
