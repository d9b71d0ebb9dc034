"""A throwaway PostgreSQL server on loopback for the postgres adapter's tests.

Uses the server binaries of the Debian packages (``postgresql``); as root it runs them as the
``postgres`` system user, since PostgreSQL refuses to run as root. ``start()`` returns None with
the reason when no server can be started, so the tests can skip saying why.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Server:
    dsn: str
    datadir: Path
    bindir: Path
    user: str | None


def _bindir() -> Path | None:
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).parent
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    return Path(dirs[0]) if dirs else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(cmd: list[str], user: str | None, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, user=user, capture_output=True, text=True, check=False,
                          timeout=120, **kw)  # type: ignore[call-overload]


@contextlib.contextmanager
def running() -> Iterator[Server | str]:
    """Yield a started Server, or a string saying why none could be started."""
    bindir = _bindir()
    if bindir is None or not (bindir / "initdb").exists():
        yield "no PostgreSQL server binaries (apt-get install postgresql)"
        return
    user: str | None = None
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            yield "running as root and there is no 'postgres' system user to run the server"
            return
        user = "postgres"
    datadir = Path(tempfile.mkdtemp(prefix="lens-pg-"))
    if user:
        shutil.chown(datadir, user)
    port = _free_port()
    init = _run([str(bindir / "initdb"), "-D", str(datadir / "data"), "-A", "trust",
                 "-U", "postgres", "--no-sync"], user)
    if init.returncode != 0:
        shutil.rmtree(datadir, ignore_errors=True)
        yield f"initdb failed: {init.stderr.strip()[-300:]}"
        return
    opts = f"-p {port} -c listen_addresses=127.0.0.1 -k {datadir} -c fsync=off"
    start = _run([str(bindir / "pg_ctl"), "-D", str(datadir / "data"), "-l",
                  str(datadir / "log"), "-o", opts, "-w", "-t", "60", "start"], user)
    if start.returncode != 0:
        log = (datadir / "log").read_text() if (datadir / "log").exists() else ""
        shutil.rmtree(datadir, ignore_errors=True)
        yield f"pg_ctl start failed: {start.stderr.strip()[-200:]} {log[-300:]}"
        return
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        yield Server(f"postgresql://postgres@127.0.0.1:{port}/postgres", datadir, bindir, user)
    finally:
        _run([str(bindir / "pg_ctl"), "-D", str(datadir / "data"), "-m", "fast", "stop"], user)
        shutil.rmtree(datadir, ignore_errors=True)
