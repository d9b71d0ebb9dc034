"""Data kept beside the checkout (``../shared/...``, ``../thirdparty/...``), found without
environment variables: beside this checkout, or beside the main checkout when this one is a git
worktree kept one folder deeper (``<root>/wt/<name>``)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def beside(*parts: str) -> Path:
    """The first of ``../<parts>`` and ``../../<parts>`` that exists (the first when neither)."""
    candidates = [ROOT.parent.joinpath(*parts), ROOT.parent.parent.joinpath(*parts)]
    return next((p for p in candidates if p.exists()), candidates[0])


def require_beside(*parts: str, what: str) -> Path:
    path = beside(*parts)
    if not path.exists():
        pytest.skip(f"{what} is not beside the project ({path})")
    return path
