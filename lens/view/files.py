"""How the viewer reads a run's files: only regular files inside the run directory, never
blocking, bounded in size and in JSON nesting.

A run folder is untrusted input: an event may name any path, a file may be a link out of the
folder, a FIFO (an open that never returns), a device (a read that never ends) or a sparse file
of gigabytes. Every read goes through here, and each of those is refused with the reason, which
the viewer shows as the run's problem.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

from lens.core.jsonguard import JsonRefused, loads_guarded

# The largest file the viewer reads whole (manifest.json, scores.json, one record): a
# scores.json of 100,000 questions is tens of megabytes.
MAX_FILE_BYTES = 512 * 1024 * 1024


class Unreadable(Exception):
    """A file of the run the viewer will not read; the message says why."""


def inside(root: Path, name: str) -> Path:
    """The file ``name`` of the run ``root``, refused unless it resolves (links followed) to a
    path inside ``root``: an event naming an absolute path or a link out reads nothing."""
    real_root = root.resolve()
    path = (root / name).resolve()
    if not name or not path.is_relative_to(real_root) or path == real_root:
        raise Unreadable(f"{name!r} is outside the run directory; the viewer reads only files "
                         "inside it")
    return path


def open_regular(path: Path) -> BinaryIO:
    """``path`` opened for reading, if it is a regular file. The open never blocks (a FIFO
    would wait for a writer for ever) and the check is on the file opened, not on its name."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise Unreadable(f"{path.name}: cannot be opened ({exc.strerror})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode)
                or stat.S_ISBLK(mode) else "a folder" if stat.S_ISDIR(mode) else "a socket")
        raise Unreadable(f"{path.name}: not a regular file ({kind}); a run's files are "
                         "regular files")
    return os.fdopen(fd, "rb")


def read_bytes(path: Path, offset: int = 0, length: int | None = None) -> bytes:
    """``length`` bytes of ``path`` from ``offset`` (to its end when None), refused over
    :data:`MAX_FILE_BYTES`."""
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        want = max(0, size - offset) if length is None else length
        if want > MAX_FILE_BYTES:
            raise Unreadable(f"{path.name}: {want} bytes to read, over the viewer's limit of "
                             f"{MAX_FILE_BYTES} bytes")
        fh.seek(offset)
        return fh.read(want)


def parse_json(raw: bytes | str, what: str) -> Any:
    """JSON of a run's file through lens's one guard for untrusted JSON
    (:func:`lens.core.jsonguard.loads_guarded`): refused when invalid or nested deeper than
    :data:`~lens.core.jsonguard.MAX_JSON_DEPTH`, since the pages render nested values
    recursively."""
    try:
        return loads_guarded(raw, what=what)
    except JsonRefused as exc:
        text = str(exc)
        raise Unreadable(text if text.startswith(what) else f"{what}: {text}") from None


def read_json(path: Path) -> Any:
    """A whole JSON file of the run (manifest.json, scores.json)."""
    return parse_json(read_bytes(path), path.name)
