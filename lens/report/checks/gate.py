"""Whether a run did what it was for, as the exit status of ``lens run`` and ``lens score``.

Two kinds of failure, read from the run's checklist so that the exit status, the terminal and
the report never disagree:

- the run failed its purpose (exit 1): an arm broke the adapter contract (most of its calls to
  the memory system failed, it handed out refs that name no episode, or episodes from past its
  checkpoint), a unit failed or its adapter's process was lost, or an arm has more errored
  questions, or more answers given without consulting memory, than the checklist's threshold
  (5%). Such a run measured less than it was asked to, whatever ``--fail-on`` says: the rows of
  :data:`RUN_FAILURE_CHECKS` decide, and only they.
- a checklist row at or above the ``--fail-on`` level (exit 3). The default is ``never``: the
  sample-size rows fail on any smoke-sized dataset, so gating on them by default would fail
  every CI smoke job and teach its owners to ignore the status; a release job passes
  ``--fail-on fail`` (or ``warn``) to gate on the verdict too. A CI job that runs a small
  dataset gates on the contract with the default alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lens.core.visible import visible
from lens.report.checks.checklist import run_checklist, run_failure_checks
from lens.report.foundations.data import RunData, load_run
from lens.report.foundations.shapes import Check

EXIT_OK = 0
EXIT_RUN_FAILED = 1
EXIT_CHECKLIST = 3
FAIL_ON: tuple[str, ...] = ("fail", "warn", "never")
DEFAULT_FAIL_ON = "never"
# The checklist rows whose FAIL means the run itself failed (exit 1 whatever --fail-on says):
# the adapter contract (memory_calls, unknown_refs, future_leak) and lost or unanswered work.
RUN_FAILURE_CHECKS = frozenset({"failures", "adapter_lost", "no_memory", "memory_calls",
                                "unknown_refs", "future_leak", "memory_state"})
_LEVELS = {"fail": ("fail",), "warn": ("fail", "warn"), "never": ()}


@dataclass
class Gate:
    code: int = EXIT_OK
    reasons: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """What the terminal says when the status is not 0 (one line a reason)."""
        if self.code == EXIT_OK:
            return []
        head = {EXIT_RUN_FAILED: "the run failed its purpose",
                EXIT_CHECKLIST: "the checklist fails the run (--fail-on)"}[self.code]
        return [f"lens: exit status {self.code}: {head}",
                *(f"  {visible(r)}" for r in self.reasons)]


def _row(check: Check) -> str:
    return f"{check.status.upper()}  {check.title}: {check.value}"


def gate(checklist: Sequence[Check], fail_on: str = DEFAULT_FAIL_ON,
         units_failed: int = 0) -> Gate:
    """The exit status of a run with this checklist; ``units_failed`` comes from the run
    itself, for a run whose checklist could not be written."""
    if fail_on not in _LEVELS:
        raise ValueError(f"fail_on must be one of {', '.join(FAIL_ON)} (got {fail_on!r})")
    failed = [c for c in checklist if c.id in RUN_FAILURE_CHECKS and c.status == "fail"]
    if failed or units_failed:
        reasons = [_row(c) for c in failed]
        if units_failed and not any(c.id == "failures" for c in failed):
            reasons.append(f"{units_failed} unit(s) failed (see errors/ in the run directory)")
        return Gate(EXIT_RUN_FAILED, reasons)
    flagged = [c for c in checklist if c.status in _LEVELS[fail_on]]
    if flagged:
        return Gate(EXIT_CHECKLIST, [_row(c) for c in flagged])
    return Gate()


def run_gate(run_dir: Path, fail_on: str = DEFAULT_FAIL_ON, *,
             checklist: Sequence[Check] | None = None, units_failed: int = 0) -> Gate:
    """:func:`gate` for a run directory; its checklist is computed when not given (a run
    without reports)."""
    if checklist is None:
        return gate_run(load_run(run_dir), fail_on, units_failed)
    return gate(checklist, fail_on, units_failed)


def gate_run(run: RunData, fail_on: str = DEFAULT_FAIL_ON, units_failed: int = 0) -> Gate:
    """:func:`gate` over the rows that can decide under ``fail_on``: under ``never`` only the
    run-failure rows can, so only they are computed; otherwise any row can, and the whole
    checklist is."""
    rows = run_failure_checks(run) if _LEVELS.get(fail_on) == () else run_checklist(run)
    return gate(rows, fail_on, units_failed)
