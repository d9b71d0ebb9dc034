"""``--fail-on``, shared by ``lens run`` and ``lens score``, and the exit status it leads to."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from lens.report.checks.gate import DEFAULT_FAIL_ON, FAIL_ON, Gate, gate_run, run_gate
from lens.report.foundations.data import RunData, scored_run
from lens.report.foundations.shapes import Check
from lens.runs.manifest import RunManifest
from lens.scoring.scorer import ScoringResult


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
    return _said(run_gate(run_dir, fail_on, checklist=checklist, units_failed=units_failed))


def scored_exit_status(run_dir: Path, manifest: RunManifest, result: ScoringResult,
                       fail_on: str) -> int:
    """:func:`exit_status` of a run just scored, from its scores as the scorer returned them
    and the manifest already read (neither is read again)."""
    return _said(gate_run(scored_run_data(run_dir, manifest, result), fail_on))


def scored_run_data(run_dir: Path, manifest: RunManifest, result: ScoringResult) -> RunData:
    """The run as its exit status reads it: the scores in hand, the question records read one
    at a time and kept as the report keeps them (measured, then cut short: the scorer holds
    none of them once it is done), and the events the run had before the scoring added its
    own."""
    read = result.read
    if read is None:
        raise ValueError("the scoring result does not carry the run it read")
    return scored_run(run_dir, manifest.as_dict(), result.scores, read.events)


def _said(verdict: Gate) -> int:
    for line in verdict.lines():
        print(line, file=sys.stderr)
    return verdict.code
