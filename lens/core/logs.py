"""lens's one logging setup: every message, lens's own (structlog) and its libraries' (stdlib
logging), goes to stderr through the standard library, at one level. Standard output stays
for what a command prints as its result.

lens's modules log through ``get_logger``: structlog loggers wrapped around stdlib loggers, so
their messages reach stdlib logging even where nobody configured structlog (lens used as a
library), and never structlog's default of printing to stdout."""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

import structlog

LEVELS = ("debug", "info", "warning", "error")
# Retry notices are "info": a run's progress bar and summary already count retries, so they
# show only when asked for (lens --log-level info).
DEFAULT_LEVEL = "warning"

_HANDLER_NAME = "lens-stderr"


# At run time StreamHandler takes no type argument.
class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]  # generic in typeshed only
    """Writes to whatever ``sys.stderr`` is when a message is emitted, not when the handler was
    made: a stream swapped later (a test's capture, a redirect) is followed, and a closed one is
    never written to."""

    # A property over the base's attribute, on purpose.
    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        pass


def _processors() -> list[Any]:
    return [
        structlog.stdlib.filter_by_level,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.dev.ConsoleRenderer(colors=False),
    ]


def get_logger(name: str) -> Any:
    """A structlog logger for ``name`` that writes through stdlib logging."""
    return structlog.wrap_logger(logging.getLogger(name), processors=_processors(),
                                 wrapper_class=structlog.stdlib.BoundLogger)


def configure(level: str = DEFAULT_LEVEL, stream: TextIO | None = None) -> None:
    """Route every log message to ``stream`` (stderr by default) at ``level``; calling it again
    replaces the earlier setup instead of adding a second handler."""
    if level not in LEVELS:
        raise ValueError(f"log level must be one of {', '.join(LEVELS)}, not {level!r}")
    root = logging.getLogger()
    for handler in list(root.handlers):
        if handler.get_name() == _HANDLER_NAME:
            root.removeHandler(handler)
    handler = logging.StreamHandler(stream) if stream is not None else _StderrHandler()
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(logging.Formatter("%(message)s"))
    root.addHandler(handler)
    root.setLevel(level.upper())
    # Loggers other code takes from structlog directly follow the same path.
    structlog.configure(
        processors=_processors(),
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        # Loggers made at import time (before this ran) must follow the setup too.
        cache_logger_on_first_use=False,
    )
