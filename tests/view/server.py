"""``lens view`` as a user starts it: ``python -m lens view DIR --port 0`` in a subprocess, on
loopback, stopped at the end."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT


def require_view_extra() -> None:
    missing = [m for m in ("starlette", "uvicorn") if importlib.util.find_spec(m) is None]
    if missing:
        reason = f"the view extra is not installed ({', '.join(missing)}): pip install -e '.[view]'"
        if os.environ.get("CI"):
            pytest.fail(f"lens view cannot be tested in CI: {reason}")
        pytest.skip(reason)


@contextlib.contextmanager
def lens_view(runs_dir: Path, timeout: float = 60.0) -> Iterator[str]:
    """The viewer's base URL while it serves ``runs_dir``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "lens", "view", str(runs_dir), "--port", "0"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        found = re.search(r"(http://127\.0\.0\.1:\d+)/", line)
        if not found:
            proc.kill()
            raise AssertionError(f"lens view did not start: {line!r} "
                                 f"{proc.stderr.read() if proc.stderr else ''!r}")
        base = found.group(1)
        deadline = time.monotonic() + timeout
        while True:  # the report's worker process is spawned at start: wait until it answers
            try:
                get(base + "/api/runs")
                break
            except (urllib.error.URLError, OSError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)


def get(url: str) -> tuple[int, dict[str, str], str]:
    """(status, headers, body) of a GET; an HTTP error status is returned, not raised."""
    try:
        with urllib.request.urlopen(url, timeout=60) as resp:
            return resp.status, dict(resp.headers), resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read().decode()


def wait_ready(url: str, job_marker: str = "data-empty='1'", timeout: float = 90.0) -> str:
    """The page once its computed content (report, verdicts) is in."""
    deadline = time.monotonic() + timeout
    while True:
        status, _, body = get(url)
        assert status == 200, body[:2000]
        if job_marker not in body:
            return body
        if time.monotonic() > deadline:
            raise AssertionError(f"{url}: still computing after {timeout} s")
        time.sleep(0.3)
