"""Importers from public long-term memory benchmarks into the LENS format."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from lens.importers.locomo import import_locomo
from lens.importers.longmemeval import import_longmemeval

IMPORTERS: dict[str, Callable[[Path], dict[str, Any]]] = {
    "locomo": import_locomo,
    "longmemeval": import_longmemeval,
}

__all__ = ["IMPORTERS", "import_locomo", "import_longmemeval"]
