"""Errors that lens reports to its user.

A ``UserError`` is the user's to fix (bad config, bad dataset, unknown adapter): the CLI prints its
message without a traceback and exits with status 2. Everything else is a bug or an outage and is
reported as such.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input file, located precisely enough to fix."""

    file: str
    location: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.location}" if self.location else self.file
        return f"{where}: {self.message}"


class UserError(Exception):
    """An error in what the user gave lens; the message says what, where and how to fix it."""

    def __init__(self, message: str, problems: list[Problem] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or []

    def render(self) -> str:
        lines = [str(self.args[0])]
        lines.extend(f"  - {p}" for p in self.problems)
        return "\n".join(lines)


class ConfigError(UserError):
    """The run configuration is invalid."""


class DatasetError(UserError):
    """A dataset file is invalid."""


class AdapterNotFound(UserError):
    """No adapter is registered under the requested name."""
