"""Errors that lens reports to its user.

A ``UserError`` is the user's to fix (bad config, bad dataset, unknown adapter): the CLI prints its
message without a traceback and exits with status 2. Everything else is a bug or an outage and is
reported as such.
"""

from __future__ import annotations

from dataclasses import dataclass

from lens.visible import visible

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
    """An error in what the user gave lens; the message says what, where and how to fix it."""

    def __init__(self, message: str, problems: list[Problem] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or []

    def render(self) -> str:
        lines = [visible(bounded(str(self.args[0])))]
        lines.extend(f"  - {p}" for p in self.problems[:MAX_PROBLEMS_SHOWN])
        if len(self.problems) > MAX_PROBLEMS_SHOWN:
            lines.append(f"  ... and {len(self.problems) - MAX_PROBLEMS_SHOWN} more")
        return "\n".join(lines)


class ConfigError(UserError):
    """The run configuration is invalid."""


class DatasetError(UserError):
    """A dataset file is invalid."""


class AdapterNotFound(UserError):
    """No adapter is registered under the requested name."""
