"""The guide's adapter package installs the way the guide says, in a fresh virtualenv: lens from
its checkout (editable), then the package with its dependencies resolved by pip, which finds
``lens-memory-eval`` installed instead of fetching a package of that name from the index. The
package then imports and passes the conformance suite with that environment's ``lens``."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from lens.core.distribution import DISTRIBUTION
from tests.adapters.test_adapters_guide_example import guide_files
from tests.support.venv import editable_lens

pytestmark = pytest.mark.slow


def test_guide_package_depends_on_lens_by_its_distribution_name() -> None:
    declared = tomllib.loads(guide_files()["pyproject.toml"])["project"]["dependencies"]
    assert declared == [DISTRIBUTION]
    root = Path(__file__).resolve().parents[2]
    assert tomllib.loads((root / "pyproject.toml").read_text())["project"]["name"] == DISTRIBUTION


def test_guide_package_installs_imports_and_passes_in_a_fresh_venv(tmp_path: Path) -> None:
    env = editable_lens(tmp_path / "env")
    project = tmp_path / "lens-dbm-memory"
    project.mkdir()
    files = guide_files()
    for name in ("dbm_memory.py", "pyproject.toml"):
        (project / name).write_text(files[name], encoding="utf-8")
    # Dependencies resolved (no --no-deps): pip must find lens installed, not look it up.
    installed = env.pip("install", "--no-build-isolation", "--no-index", str(project))
    assert installed.returncode == 0, installed.stdout + installed.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    imported = subprocess.run([str(env.python), "-c",
                               "import dbm_memory, lens; print(dbm_memory.DbmMemory.__mro__[1])"],
                              cwd=elsewhere, capture_output=True, text=True, timeout=120)
    assert imported.returncode == 0, imported.stderr
    assert re.search(r"lens\.memory\.adapter\.\w*MemoryAdapter", imported.stdout)
    check = subprocess.run([str(env.lens), "adapters", "check", "dbm_memory"], cwd=elsewhere,
                           capture_output=True, text=True, timeout=600)
    assert check.returncode == 0, check.stdout + check.stderr
