"""A rich progress display for runs: units, questions, questions per second, tokens, the time
left; then the steps after the last question (scoring, the reports), each shown while it runs."""

from __future__ import annotations

import time
from types import TracebackType
from typing import Protocol

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


class StageProgress(Protocol):
    """The steps of a run that are not questions: ``stage("scoring")`` starts one and ends the
    one before; ``stage(None)`` ends the last."""

    def stage(self, name: str | None) -> None: ...


class RichRunProgress:
    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self._progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[info]}"), TimeElapsedColumn(),
            TextColumn("eta"), TimeRemainingColumn(),
            console=self.console, transient=False,
        )
        # A step after the questions: its name, a spinner and the time it has taken so far
        # (scoring has no count to show a fraction of).
        self._steps = Progress(SpinnerColumn(finished_text="✓"), TextColumn("{task.description}"),
                               TimeElapsedColumn(), console=self.console, transient=False)
        self._step: TaskID | None = None
        self._steps_started = False
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
        self.stage(None)
        if self._steps_started:
            self._steps.__exit__(et, ev, tb)
        else:
            self._progress.__exit__(et, ev, tb)

    def stage(self, name: str | None) -> None:
        if self._step is not None:
            self._steps.update(self._step, total=1, completed=1)
            self._step = None
        if name is None:
            return
        if not self._steps_started:
            # One live display at a time: the question bars stop where they are.
            self._progress.__exit__(None, None, None)
            self._steps.__enter__()
            self._steps_started = True
        self._step = self._steps.add_task(name, total=None)

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
