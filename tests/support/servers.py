"""Real servers on loopback for tests: a free port, and a server process started, awaited until
it answers and stopped however the test ends."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(command: list[str], ready_url: str, log: Path, name: str,
            timeout_s: float) -> Iterator[None]:
    """Run ``command`` until the block ends; enter the block once ``ready_url`` answers 200.
    The server's output goes to ``log``, a file rather than a pipe: a model server logs enough
    while loading to fill a pipe and stall. A server that exits or does not answer in time fails
    the test with the end of its log."""
    with log.open("w") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                pytest.fail(f"{name} exited: {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(ready_url, timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"{name} did not start within {timeout_s:.0f} s: "
                            f"{log.read_text()[-2000:]}")
            time.sleep(0.5)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
