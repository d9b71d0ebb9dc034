"""The standing-context example of docs/writing-an-adapter.md works as the guide says: it is
taken from the guide itself and passes the conformance suite, standing-context check included."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import anyio

from lens.testing.conformance import CHECKS, run_check
from tests.adapters.test_adapters_guide_example import guide_files


def test_guide_standing_context_example(tmp_path: Path) -> None:
    source = guide_files()["notes_memory.py"]
    path = tmp_path / "notes_memory.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("notes_memory", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["notes_memory"] = module
    try:
        spec.loader.exec_module(module)
        results = {name: anyio.run(run_check, name, module.NotesMemory) for name in CHECKS}
    finally:
        sys.modules.pop("notes_memory", None)
    assert results["standing_context_well_formed"].status == "passed", results
    failed = {n: r.detail for n, r in results.items() if r.status == "failed"}
    assert not failed
