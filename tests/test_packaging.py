"""The distribution's metadata in the form current setuptools builds without a deprecation."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_license_is_an_spdx_string_with_its_files() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    # A TOML table here is deprecated: setuptools stops building it after 2027-02-18.
    assert project["project"]["license"] == "MIT"
    files = project["project"]["license-files"]
    assert files and all((ROOT / name).is_file() for name in files)
    assert "MIT License" in (ROOT / "LICENSE").read_text(encoding="utf-8")
    requires = project["build-system"]["requires"]
    assert "setuptools>=77" in requires  # the first setuptools that reads both keys
