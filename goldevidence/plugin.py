"""GoldEvidenceBench's hooks into lens, declared in the ``lens.scenarios`` entry-point group."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from goldevidence.lensrun import grade_run, is_goldevidence_run


class GoldEvidenceScenario:
    """Grades a scored GoldEvidence run into ``RUN_DIR/goldevidence/`` (grades, summary.csv)."""

    def applies(self, manifest: dict[str, Any]) -> bool:
        return is_goldevidence_run(manifest)

    def after_scoring(self, run_dir: Path) -> None:
        grade_run(run_dir)

    def config_command(self, data: Mapping[str, Any], file: str) -> str | None:
        """A sweep config given to ``lens run``: which command runs it."""
        from goldevidence.sweep import SweepSpec

        keys = set(data)
        own = set(SweepSpec.model_fields) - {"name", "agent", "concurrency"}
        if "dataset" in keys or "adapters" in keys or not keys & own:
            return None
        if not keys <= set(SweepSpec.model_fields):
            return None
        return (f"it is a GoldEvidenceBench sweep config; run it with "
                f"`python -m goldevidence sweep --config {file}`")


SCENARIO = GoldEvidenceScenario()
