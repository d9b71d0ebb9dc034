"""GoldEvidenceBench's hooks into lens, declared in the ``lens.scenarios`` entry-point group."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from goldevidence.lensrun import grade_run, is_goldevidence_run


class GoldEvidenceScenario:
    """Grades a scored GoldEvidence run into ``RUN_DIR/goldevidence/`` (grades, summary.csv)."""

    def applies(self, manifest: dict[str, Any]) -> bool:
        return is_goldevidence_run(manifest)

    def after_scoring(self, run_dir: Path) -> None:
        grade_run(run_dir)


SCENARIO = GoldEvidenceScenario()
