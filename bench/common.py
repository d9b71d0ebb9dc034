"""What every benchmark shares: the machine line, repetition statistics, the fake server process."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import statistics
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def beside(*parts: str) -> Path:
    """Data kept beside the project: ``../<parts>`` beside this checkout, or beside the main
    checkout when this one is a git worktree one folder deeper (the first when neither exists)."""
    found = [p.joinpath(*parts) for p in (ROOT.parent, ROOT.parent.parent)]
    return next((p for p in found if p.exists()), found[0])


PACKAGES = ("lens-memory-eval", "anyio", "aiohttp", "uvloop", "openai", "httpx", "pydantic",
            "tenacity", "llama_cpp_python")


def machine_line(extra: Sequence[str] = ()) -> str:
    versions = []
    for name in (*PACKAGES, *extra):
        try:
            versions.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"machine: {os.cpu_count()} cores, {platform.machine()}, "
            f"Python {platform.python_version()}, load(1m) {load:.2f}; " + ", ".join(versions))


@dataclass(frozen=True)
class Spread:
    median: float
    low: float
    high: float
    n: int

    def fmt(self, digits: int = 3, unit: str = "") -> str:
        if self.n == 1:
            return f"{self.median:.{digits}f}{unit} (n=1)"
        return (f"{self.median:.{digits}f}{unit} "
                f"[{self.low:.{digits}f}–{self.high:.{digits}f}, n={self.n}]")


def spread(values: Sequence[float]) -> Spread:
    """Median with the min–max range: with a handful of repetitions that is the honest spread."""
    vals = list(values)
    return Spread(statistics.median(vals), min(vals), max(vals), len(vals))


class FakeServer:
    def __init__(self, proc: subprocess.Popen[str], port: int) -> None:
        self.proc = proc
        self.port = port
        # What the server said when it stopped: SERVED, PEAK_CONNECTIONS, PEAK_IN_FLIGHT, and
        # with limits RATE_LIMITED, ADMITTED, BOOKED_TOKENS, ADMIT_SPAN_MS.
        self.final: dict[str, int] = {}

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


@contextmanager
def fake_server(latency_ms: float, pattern: str = "agent",
                loop: str = "auto", extra_args: Sequence[str] = ()) -> Iterator[FakeServer]:
    """Start ``bench.fakeserver`` in its own process (``extra_args``: its realistic-provider
    options); stop it on exit."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.fakeserver", "--latency-ms", str(latency_ms),
         "--pattern", pattern, "--loop", loop, *extra_args],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().split()
        if len(line) != 2 or line[0] != "PORT":
            raise RuntimeError(f"fake server did not start (said {line!r})")
        server = FakeServer(proc, int(line[1]))
        yield server
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            rest = proc.stdout.read() if proc.stdout is not None else ""
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            rest = ""
    words = rest.split()
    server.final = {words[i]: int(words[i + 1]) for i in range(0, len(words) - 1, 2)
                    if words[i].isupper() and words[i + 1].isdigit()}


def md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)
