"""Importers from public long-term memory benchmarks into the LENS format."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from lens.data.importers.beam import write_beam
from lens.data.importers.lens_published import import_lens
from lens.data.importers.locomo import import_locomo
from lens.data.importers.longmemeval import import_longmemeval, write_longmemeval
from lens.data.importers.longmemeval_v2 import write_longmemeval_v2
from lens.data.importers.memoryagentbench import write_memoryagentbench
from lens.data.importers.records import DatasetJson

IMPORTERS: dict[str, Callable[[Path], DatasetJson]] = {
    "lens": import_lens,
    "locomo": import_locomo,
    "longmemeval": import_longmemeval,
}

# Formats whose files run to gigabytes: imported straight to the output file, one item at a time.
STREAMING_IMPORTERS: dict[str, Callable[[Path, Path], dict[str, Any]]] = {
    "longmemeval": write_longmemeval,
    "beam": write_beam,
    "memoryagentbench": write_memoryagentbench,
    "longmemeval-v2": write_longmemeval_v2,
}

__all__ = ["IMPORTERS", "STREAMING_IMPORTERS", "import_lens", "import_locomo",
           "import_longmemeval", "write_beam", "write_longmemeval", "write_longmemeval_v2",
           "write_memoryagentbench"]
