"""``--fail-on``, shared by ``lens run`` and ``lens score``, and the exit status it leads to."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from lens.report.gate import DEFAULT_FAIL_ON, FAIL_ON, run_gate
from lens.report.shapes import Check


def add_fail_on(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fail-on", choices=FAIL_ON, default=DEFAULT_FAIL_ON,
                   help="exit with status 3 when a checklist row is at this level or worse "
                        f"(default {DEFAULT_FAIL_ON}); an arm that broke the adapter contract "
                        "(most memory calls failed, refs that name no episode, refs from past "
                        "its checkpoint), lost units and arms with too many errored questions "
                        "exit with status 1 whatever this says")


def exit_status(run_dir: Path, fail_on: str, *, checklist: Sequence[Check] | None = None,
                units_failed: int = 0) -> int:
    """The run's exit status, with its reasons on stderr when it is not 0."""
    verdict = run_gate(run_dir, fail_on, checklist=checklist, units_failed=units_failed)
    for line in verdict.lines():
        print(line, file=sys.stderr)
    return verdict.code
