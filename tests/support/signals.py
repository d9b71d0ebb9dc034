"""Subprocesses a test interrupts with SIGINT, started as a terminal starts a command.

A shell starts a background job (``pytest … &``, ``nohup``, a CI script's ``&``) with SIGINT
ignored, and every process it starts inherits that; Python then leaves SIGINT ignored (it
installs its ``KeyboardInterrupt`` handler only over the default disposition), as any program
started that way does. ``lens`` is right to keep it so. A test that sends SIGINT stands for a
person pressing Ctrl-C at a terminal, so its subprocess must start with SIGINT at the default,
whatever the disposition of the test run itself: otherwise the test passes or fails by how the
suite was launched.
"""

from __future__ import annotations

import signal
from typing import Any


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def as_from_a_terminal() -> dict[str, Any]:
    """``subprocess.Popen`` keyword arguments that start the child with SIGINT at the
    default disposition (the child's Python then turns it into ``KeyboardInterrupt``)."""
    return {"preexec_fn": _sigint_default}
