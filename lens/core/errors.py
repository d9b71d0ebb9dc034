"""Errors that lens reports to its user.

A ``UserError`` is the user's to fix (bad config, bad dataset, unknown adapter): the CLI prints its
message without a traceback and exits with status 2. Everything else is a bug or an outage and is
reported as such.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lens.core.visible import visible

# A message may quote its input (an id, a value): a hostile file must not turn one error into
# megabytes of output.
MAX_MESSAGE_CHARS = 2_000
MAX_PROBLEMS_SHOWN = 50


def bounded(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text``, cut in the middle with a note when it is longer than ``limit`` characters."""
    if len(text) <= limit:
        return text
    keep = limit // 2
    return f"{text[:keep]} … [{len(text) - 2 * keep} characters cut] … {text[-keep:]}"


def did_you_mean(name: object, valid: Iterable[str], kind: str = "option") -> str:
    """The close spelling of ``name`` among ``valid`` (when there is one) and every valid
    choice: ``did you mean 'max_results'? valid options: max_results, k``."""
    choices = sorted(set(valid))
    if not choices:
        return f"this takes no {kind}s"
    close = difflib.get_close_matches(str(name), choices, n=1, cutoff=0.6)
    listed = f"valid {kind}s: {', '.join(choices)}"
    return f"did you mean {close[0]!r}? {listed}" if close else listed


def unknown_options(unknown: Iterable[str], valid: Iterable[str]) -> str:
    """Every unknown option, each with its close spelling, then the valid options."""
    choices = sorted(set(valid))
    parts = []
    for name in sorted(unknown):
        close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
        parts.append(f"unknown option {name!r}" + (f" (did you mean {close[0]!r}?)"
                                                   if close else ""))
    return f"{'; '.join(parts)}; valid options: {', '.join(choices)}"


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input file, located precisely enough to fix."""

    file: str
    location: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.location}" if self.location else self.file
        return visible(bounded(f"{where}: {self.message}"))


class UserError(Exception):
    """An error in what the user gave lens; the message says what, where and how to fix it.

    A message of several lines is given as a sequence of lines: the line breaks are lens's own
    and print as line breaks, while a newline inside a line (quoted from a file, a run, a
    model) is shown as ␊ like every other control character."""

    def __init__(self, message: str | Sequence[str],
                 problems: list[Problem] | None = None) -> None:
        lines = [message] if isinstance(message, str) else [str(x) for x in message]
        super().__init__("\n".join(lines))
        self.lines = lines
        self.problems = problems or []

    def render(self) -> str:
        lines = [visible(bounded(line)) for line in self.lines]
        lines.extend(f"  - {p}" for p in self.problems[:MAX_PROBLEMS_SHOWN])
        if len(self.problems) > MAX_PROBLEMS_SHOWN:
            hidden = len(self.problems) - MAX_PROBLEMS_SHOWN
            lines.append(f"  ... and {hidden} more problem(s) not shown; fix these and run "
                         "again to see them")
        return "\n".join(lines)


class ConfigError(UserError):
    """The run configuration is invalid."""


class DatasetError(UserError):
    """A dataset file is invalid."""


class AdapterNotFound(UserError):
    """No adapter is registered under the requested name."""
