"""``lens run CONFIG [--out DIR] [--resume RUN_DIR] [--set FIELD=VALUE] [--arms A,B]
[--limit N]``."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from lens.commands.gating import add_fail_on, exit_status
from lens.core.errors import UserError
from lens.core.progress import RichRunProgress
from lens.core.visible import visible
from lens.data.overrides import Overrides
from lens.flow.pipeline import RunOutcome, execute
from lens.report.arm_selection import parse_names
from lens.report.console import one_line, result_lines
from lens.report.foundations.data import load_run, unknown_usage_of
from lens.report.foundations.shapes import UnknownUsage
from lens.report.sections.write_side_section import console_lines
from lens.runs.store import RunStore


def register(sub: Any) -> None:
    p = sub.add_parser("run", help="run an evaluation from a YAML config")
    p.add_argument("config", help="path of the run config (YAML)")
    p.add_argument("--out", type=Path, help="parent folder of the run directory "
                   "(default: the config's out_dir)")
    p.add_argument("--resume", type=Path, metavar="RUN_DIR",
                   help="continue an interrupted run; only unfinished units run again")
    p.add_argument("--retry-errors", action="store_true",
                   help="with --resume, also re-run questions that ended in an error")
    p.add_argument("--quiet", action="store_true",
                   help="no progress bar, and the result in one line")
    p.add_argument("--continue-past-stop", action="store_true",
                   help="with --resume, answer the units a run's 'stopping' section left "
                        "unstarted once its verdict was settled")
    p.add_argument("--accept-adapter-change", action="store_true",
                   help="with --resume, go on although an arm's adapter (its version, source "
                        "files or libraries) changed since the run started; the run's events "
                        "record the change")
    add_config_changes(p)
    add_fail_on(p)
    p.set_defaults(handler=_run)


def add_config_changes(p: argparse.ArgumentParser) -> None:
    """The flags that change what a config runs: ``lens run`` and ``lens plan CONFIG`` (which
    prices what ``lens run`` with the same flags would run) share them."""
    p.add_argument("--drop-invalid-questions", action="store_true",
                   help="leave out the questions the dataset gets wrong (a required ref streamed "
                        "after the question's checkpoint, a checkpoint out of range) instead of "
                        "refusing the dataset; the checklist lists them with the reason")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", dest="sets",
                   help="change a field of the config for this run (repeatable; dotted path, "
                        "the value read as YAML), e.g. --set agent.budget.max_turns=4; checked "
                        "like the file and recorded in the manifest")
    p.add_argument("--arms", metavar="A,B,...",
                   help="run these adapters instead of the config's: each a label of the "
                        "config's adapters (with its options) or a registered adapter name")
    p.add_argument("--limit", type=int, metavar="N",
                   help="ask a sample of N questions, the same N for the same data (seeded "
                        "by the dataset's content); recorded in the run's condition, so lens "
                        "compare never sets it against a whole run")


def overrides_of(args: argparse.Namespace) -> Overrides:
    """The config changes the command line asks for."""
    if args.limit is not None and args.limit < 1:
        raise UserError(f"--limit {args.limit}: give a number of questions, at least 1")
    return Overrides(sets=tuple(args.sets),
                     arms=tuple(parse_names(args.arms)) if args.arms is not None else None,
                     limit=args.limit)


def _run(args: argparse.Namespace) -> int:
    if args.retry_errors and args.resume is None:
        print("lens: --retry-errors needs --resume RUN_DIR", file=sys.stderr)
        return 2
    if args.continue_past_stop and args.resume is None:
        print("lens: --continue-past-stop needs --resume RUN_DIR (the stopped run)",
              file=sys.stderr)
        return 2
    if args.accept_adapter_change and args.resume is None:
        print("lens: --accept-adapter-change needs --resume RUN_DIR", file=sys.stderr)
        return 2
    run_dir: list[Path] = []
    overrides = overrides_of(args)

    def started(path: Path) -> None:
        # First, before any question: the folder to look in, or to resume, whatever happens.
        run_dir.append(path)
        if not args.quiet:
            print(f"run directory: {path}", flush=True)

    try:
        if args.quiet:
            outcome = execute(args.config, out=args.out, resume=args.resume,
                              retry_errors=args.retry_errors,
                              continue_past_stop=args.continue_past_stop,
                              drop_invalid=args.drop_invalid_questions, on_run_dir=started,
                              overrides=overrides,
                              accept_adapter_change=args.accept_adapter_change)
        else:
            with RichRunProgress() as progress:
                outcome = execute(args.config, out=args.out, resume=args.resume,
                                  retry_errors=args.retry_errors, progress=progress,
                                  continue_past_stop=args.continue_past_stop,
                                  drop_invalid=args.drop_invalid_questions, on_run_dir=started,
                                  stages=progress, overrides=overrides,
                                  accept_adapter_change=args.accept_adapter_change)
    except KeyboardInterrupt:
        if not run_dir:
            raise
        print(f"lens: interrupted; the answers so far are kept in {run_dir[0]}; resume with: "
              f"{resume_command(args.config, run_dir[0], overrides)}", file=sys.stderr)
        return 130
    for line in (_quiet_line(outcome) if args.quiet else _result(outcome)):
        print(line)
    for failure in outcome.summary.failures:
        print(f"unit failed: {visible(failure)}", file=sys.stderr)
    errored = errored_questions(outcome.run_dir)
    if errored and not args.retry_errors:
        # --resume alone keeps errored questions as they are: say how to ask them again.
        print(f"lens: {errored} question(s) of this run ended in an error and are kept as they "
              "are; after fixing the cause, ask them again with: "
              f"{resume_command(args.config, outcome.run_dir, overrides)} --retry-errors",
              file=sys.stderr)
    checklist = outcome.reports.summary_data.checklist if outcome.reports else None
    return exit_status(outcome.run_dir, args.fail_on, checklist=checklist,
                       units_failed=outcome.summary.units_failed)


def errored_questions(run_dir: Path) -> int:
    """The questions of the run whose newest record is an error."""
    store = RunStore.open(run_dir)
    try:
        return sum(1 for s in store.committed_questions().values() if s == "error")
    finally:
        store.close()


def resume_command(config: str, run_dir: Path, overrides: Overrides | None = None) -> str:
    """The command that continues ``run_dir`` (its unfinished units only), with the same
    command-line changes to the config."""
    extra = "".join(f" {shlex.quote(a)}" for a in (overrides.as_args() if overrides else ()))
    return f"lens run {shlex.quote(str(config))}{extra} --resume {shlex.quote(str(run_dir))}"


def unknown_usage(run_dir: Path) -> UnknownUsage | None:
    """The run's model calls whose usage was unreadable, from its manifest."""
    return unknown_usage_of(RunStore(run_dir).manifest_data())


def _counts(outcome: RunOutcome) -> str:
    s = outcome.summary
    unconsulted = f"{s.no_memory} without memory, " if s.no_memory else ""
    tools = f", {s.tool_errors} failed tool calls" if s.tool_errors else ""
    odd = unknown_usage(outcome.run_dir)
    usage = (f", {odd.calls} model call(s) of unknown usage (budgeted at their limit)"
             if odd else "")
    return (f"questions: {s.questions} ({s.answered} answered now, {s.empty} empty, "
            f"{unconsulted}{s.errored} errored, {s.skipped} done before){tools}{usage}")


def _result(outcome: RunOutcome) -> list[str]:
    s = outcome.summary
    done = s.answered + s.empty + s.no_memory + s.errored
    rate = done / s.wall_s if s.wall_s else 0.0
    # The run directory was printed when the run started.
    lines = [f"{_counts(outcome)} in {s.wall_s:.1f} s, {rate:.2f} questions/s"]
    if s.stopped:
        lines.append(f"stopped early: every pair's verdict was settled; {s.units_not_started} "
                     "unit(s) not started (answer them with --resume RUN_DIR "
                     "--continue-past-stop)")
    if outcome.reports is None:
        # Without a report there is no checklist row to say it: the terminal says it whole.
        odd = unknown_usage(outcome.run_dir)
        if odd:
            lines.append(f"model usage: {odd.text()}")
        return [*lines, f"no report written (the config turns reports or scoring off); "
                        f"write one with: lens score {outcome.run_dir} && "
                        f"lens report {outcome.run_dir}"]
    return [*lines, *result_lines(outcome.reports.summary_data, outcome.reports.html),
            *console_lines(load_run(outcome.run_dir))]


def _quiet_line(outcome: RunOutcome) -> list[str]:
    if outcome.reports is None:
        return [f"{_counts(outcome)} · run directory: {outcome.run_dir}"]
    return [f"{_counts(outcome)} · {one_line(outcome.reports.summary_data, outcome.reports.html)}"]
