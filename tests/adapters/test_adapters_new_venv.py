"""``lens adapters new NAME`` as an adapter author uses it, in a fresh virtualenv with lens
installed editable: the package it writes installs with pip (its dependency on lens met by the
installed distribution), is found by its entry point, passes ``lens adapters check`` and runs
its first config."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.venv import editable_lens

pytestmark = pytest.mark.slow


def test_new_package_installs_checks_and_runs_in_a_fresh_venv(tmp_path: Path) -> None:
    env = editable_lens(tmp_path / "env")
    work = tmp_path / "work"
    work.mkdir()

    def lens(*args: str, cwd: Path = work) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(env.lens), *args], cwd=cwd, capture_output=True, text=True,
                              timeout=900, env={"PATH": str(env.root / "bin"),
                                                "LENS_CACHE_DIR": str(tmp_path / "cache"),
                                                "HOME": str(tmp_path)})

    made = lens("adapters", "new", "reef_memory")
    assert made.returncode == 0, made.stderr
    pkg = work / "lens-reef-memory"
    installed = env.pip("install", "--no-build-isolation", "--no-index", "-e", str(pkg))
    assert installed.returncode == 0, installed.stdout + installed.stderr
    listed = lens("adapters")
    assert "reef_memory  [entry point reef_memory:ReefMemory]" in listed.stdout
    check = lens("adapters", "check", "reef_memory")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "0 failed" in check.stdout
    assert lens("datasets", "generate", "--domain", "ops", "--seed", "1", "--episodes", "20",
                "--plan", "compact", "--out", "dataset.json", cwd=pkg).returncode == 0
    ran = lens("run", "first-run.yaml", "--quiet", "--limit", "4", cwd=pkg)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    run = next((pkg / "runs").iterdir())
    adapters = {json.loads(x)["adapter"] for x in
                (run / "records.jsonl").read_text().splitlines() if x}
    assert adapters == {"reef_memory", "sqlite_fts"}
