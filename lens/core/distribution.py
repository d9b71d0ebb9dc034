"""lens as an installed distribution: its name on the package index, its version, and the
command that installs one of its extras.

lens is not published on the package index; it is installed from a checkout
(``pip install -e /path/to/lens``). An install hint therefore names that checkout when lens runs
from one, and the distribution name otherwise, never a bare name that the index would resolve to
somebody else's package.
"""

from __future__ import annotations

import json
import tomllib
from functools import cache
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

DISTRIBUTION = "lens-memory-eval"
# The folder holding the ``lens`` package (a checkout when lens runs from one).
_SOURCE_ROOT = Path(__file__).resolve().parents[2]


@cache
def _checkout_pyproject() -> dict[str, Any] | None:
    """The pyproject of the checkout lens is imported from, when it is lens's own."""
    try:
        data = tomllib.loads((_SOURCE_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return None
    project = data.get("project") or {}
    return project if project.get("name") == DISTRIBUTION else None


@cache
def version() -> str:
    """The installed distribution's version; a checkout run without installing (PYTHONPATH)
    reads its own pyproject.toml, which is where the version is written."""
    try:
        return distribution(DISTRIBUTION).version
    except PackageNotFoundError:
        project = _checkout_pyproject()
        return str(project.get("version", "0+unknown")) if project else "0+unknown"


@cache
def _installed_from() -> Path | None:
    """The local folder lens was installed from (PEP 610's direct_url.json), if any."""
    try:
        text = distribution(DISTRIBUTION).read_text("direct_url.json")
    except PackageNotFoundError:
        return None
    if not text:
        return None
    url = str(json.loads(text).get("url", ""))
    parsed = urlparse(url)
    return Path(unquote(parsed.path)) if parsed.scheme == "file" else None


def install_target() -> str:
    """What ``pip install`` is given to install lens as it is installed here: the checkout it
    runs from, the folder it was installed from, or (a wheel from elsewhere) its name."""
    if _checkout_pyproject() is not None:
        return str(_SOURCE_ROOT)
    source = _installed_from()
    if source is not None and source.is_dir():
        return str(source)
    return DISTRIBUTION


def install_hint(extra: str) -> str:
    """``pip install -e '/path/to/lens[extra]'``: the command that adds one of lens's extras."""
    editable = "-e " if _checkout_pyproject() is not None else ""
    return f"pip install {editable}'{install_target()}[{extra}]'"
