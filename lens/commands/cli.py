"""The ``lens`` command line. Each subcommand lives in its own module under ``lens.commands``
and exposes ``register(subparsers)``; this module lists them (``COMMANDS``) and maps errors to
exit codes: user errors print one message and exit 2, with no traceback."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from types import ModuleType

from lens.commands import (
    adapters,
    cache,
    claims,
    compare,
    datasets,
    export,
    facts,
    judge,
    leaderboard,
    plan,
    report,
    run,
    score,
    smoke,
    verify,
    view,
)
from lens.core import logs
from lens.core.distribution import version as lens_version
from lens.core.errors import UserError
from lens.core.redact import register_env_secrets, scrub_standard_streams

EXIT_USER_ERROR = 2

# Every subcommand, in the order ``lens --help`` lists them.
COMMANDS: tuple[ModuleType, ...] = (adapters, cache, claims, compare, datasets, export, facts,
                                    judge, leaderboard, plan, report, run, score, smoke, verify,
                                    view)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lens", description="Evaluate AI memory systems over time."
    )
    parser.add_argument("--version", action="version", version=f"lens {lens_version()}")
    parser.add_argument("--log-level", choices=logs.LEVELS, default=logs.DEFAULT_LEVEL,
                        help="which log messages reach stderr (default %(default)s; 'info' "
                             "adds model-call retries)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # Before anything can print: a provider or adapter may echo a key in an error message.
    register_env_secrets()
    scrub_standard_streams()
    parser = build_parser()
    args = parser.parse_args(argv)
    logs.configure(args.log_level)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return EXIT_USER_ERROR
    try:
        return int(handler(args) or 0)
    except UserError as exc:
        print(f"lens: error: {exc.render()}", file=sys.stderr)
        return EXIT_USER_ERROR
    except BrokenPipeError:
        # The reader went away (`lens … | head`): stop quietly, as other command-line tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        print("lens: interrupted; resume with --resume RUN_DIR", file=sys.stderr)
        return 130
