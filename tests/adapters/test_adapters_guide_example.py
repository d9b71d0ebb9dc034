"""The worked example of docs/writing-an-adapter.md, built as the guide says: a separate package
in a temporary folder, pip-installed into this interpreter, listed by ``lens adapters`` and
passing ``lens adapters check``. The code is taken from the guide itself, so the guide cannot
drift from what works."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "writing-an-adapter.md"
DIST = "lens-dbm-memory"


def guide_files() -> dict[str, str]:
    """Fenced blocks whose first line is a comment naming a file: ``# name.ext``."""
    files = {}
    for body in re.findall(r"```(?:python|toml|yaml)\n(.*?)```", GUIDE.read_text(), re.S):
        first = body.partition("\n")[0]
        m = re.fullmatch(r"# ([\w.-]+\.(?:py|toml|yaml))", first.strip())
        if m:
            files[m.group(1)] = body
    return files


def _pip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
                          capture_output=True, text=True, timeout=300, check=False)


def _lens(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lens", *args], capture_output=True, text=True,
                          timeout=600, check=False, cwd=cwd)


@pytest.mark.slow
def test_guide_example_installs_lists_and_passes(tmp_path: Path) -> None:
    files = guide_files()
    assert {"dbm_memory.py", "pyproject.toml", "test_dbm_memory.py"} <= set(files)
    code_lines = [ln for ln in files["dbm_memory.py"].splitlines() if ln.strip()]
    assert len(code_lines) <= 70, f"the worked example grew to {len(code_lines)} lines"
    project = tmp_path / "lens-dbm-memory"
    project.mkdir()
    for name in ("dbm_memory.py", "pyproject.toml", "test_dbm_memory.py"):
        (project / name).write_text(files[name])
    elsewhere = tmp_path / "elsewhere"  # run lens where the module is not importable by path
    elsewhere.mkdir()
    installed = _pip("install", "--no-build-isolation", "--no-deps", "--quiet", str(project))
    assert installed.returncode == 0, installed.stderr
    try:
        listing = _lens("adapters", cwd=elsewhere)
        assert listing.returncode == 0, listing.stderr
        assert "dbm_memory  [entry point dbm_memory:DbmMemory]" in listing.stdout
        assert "dbm key-value file, word-overlap ranking" in listing.stdout
        check = _lens("adapters", "check", "dbm_memory", cwd=elsewhere)
        assert check.returncode == 0, check.stdout + check.stderr
        assert "10 passed, 0 failed, 3 skipped" in check.stdout
        assert re.search(r"SKIP\s+declared_filters_work", check.stdout)
        # The guide's pytest module runs the same suite under pytest.
        tests = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             str(project / "test_dbm_memory.py")],
            capture_output=True, text=True, timeout=600, check=False, cwd=elsewhere)
        assert tests.returncode == 0, tests.stdout + tests.stderr
        assert "10 passed, 3 skipped" in tests.stdout
    finally:
        removed = _pip("uninstall", "--yes", "--quiet", DIST)
        assert removed.returncode == 0, removed.stderr
    after = _lens("adapters", cwd=elsewhere)
    assert "dbm_memory" not in after.stdout
