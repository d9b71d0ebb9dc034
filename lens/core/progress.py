"""A rich progress display for runs: units, questions, questions per second, tokens."""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


class RichRunProgress:
    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self._progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[info]}"), TimeElapsedColumn(),
            console=self.console, transient=False,
        )
        self._started = time.monotonic()
        self._tokens = 0
        self._answered = 0
        self._errored = 0
        self._empty = 0
        self._no_memory = 0

    def __enter__(self) -> RichRunProgress:
        self._progress.__enter__()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._progress.__exit__(et, ev, tb)

    def start(self, units: int, questions: int, done: int) -> None:
        self._started = time.monotonic()
        self._units = self._progress.add_task("units", total=units, info="")
        self._questions = self._progress.add_task("questions", total=questions,
                                                  completed=done, info="")

    def question_done(self, status: str, agent_tokens: int) -> None:
        self._tokens += agent_tokens
        if status == "error":
            self._errored += 1
        else:
            self._answered += 1
            if status == "empty_answer":
                self._empty += 1
            if status == "no_memory":
                self._no_memory += 1
        rate = (self._answered + self._errored) / max(time.monotonic() - self._started, 1e-6)
        info = f"{rate:.2f} q/s · {self._tokens:,} tok"
        if self._errored:
            info += f" · {self._errored} errored"
        if self._empty:
            info += f" · {self._empty} empty"
        if self._no_memory:
            info += f" · {self._no_memory} without memory"
        self._progress.update(self._questions, advance=1, info=info)

    def unit_done(self, key: str) -> None:
        self._progress.update(self._units, advance=1)
