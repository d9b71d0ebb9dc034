"""Environment variables set for the duration of one block (a third-party import that reads its
settings from the environment), then restored exactly: lens leaves the process environment as
it found it."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# Imports run under the import lock per module, not globally: two threads importing different
# libraries under different settings must not interleave their changes.
_LOCK = threading.Lock()


@contextmanager
def environment(**values: str) -> Iterator[None]:
    """Set ``values`` (variables already set keep the user's value) until the block ends."""
    with _LOCK:
        added = [name for name in values if name not in os.environ]
        for name in added:
            os.environ[name] = values[name]
        try:
            yield
        finally:
            for name in added:
                os.environ.pop(name, None)


def keep_for_process(**values: str) -> None:
    """Set ``values`` for the rest of the process (variables already set keep the user's value).

    Only for an adapter that runs in a process of its own (``OWN_PROCESS``) and whose library
    reads a setting from the environment at every call, not once at import: restoring it after
    a block would switch the setting off again mid-run.
    """
    with _LOCK:
        for name, value in values.items():
            os.environ.setdefault(name, value)
