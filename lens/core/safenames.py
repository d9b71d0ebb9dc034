"""The one check for a name that comes from a server or a user and becomes part of a path: a
batch id, a label, a file a command writes. A name that is not one plain file-name component
(a separator, ``..``, an absolute path, a control character, an overlong name) is refused, so
nothing lens writes or reads lands outside the folder it names.

Messages never quote the name raw: it may hold terminal escapes or a secret a server echoed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from lens.core.redact import quoted, shown

# One file-name component: letters, digits, "_", "-" and ".", starting with neither "." (no
# "..", no hidden file) nor "-" (read as an option by tools), at most this many characters (file
# systems allow 255 bytes; a hash suffix and an extension must fit beside it).
MAX_NAME_CHARS = 200
_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


class UnsafeName(ValueError):
    """A name refused as a path component; the message says what it was for."""


def is_plain_name(name: object) -> bool:
    return (isinstance(name, str) and len(name) <= MAX_NAME_CHARS
            and _PLAIN.fullmatch(name) is not None)


def checked_name(name: object, what: str) -> str:
    """``name`` when it is one plain file-name component, else :class:`UnsafeName` naming
    ``what``."""
    if is_plain_name(name):
        assert isinstance(name, str)
        return name
    if not isinstance(name, str):
        raise UnsafeName(f"{what} is not a string ({type(name).__name__})")
    if not name:
        raise UnsafeName(f"{what} is empty")
    if len(name) > MAX_NAME_CHARS:
        raise UnsafeName(f"{what} is {len(name)} characters long, over {MAX_NAME_CHARS}")
    return _refuse(name, what)


def _refuse(name: str, what: str) -> str:
    raise UnsafeName(f"{what} {quoted(name)} is not a plain file name (only letters, digits, "
                     "'_', '-' and '.', not starting with '.' or '-')")


def child(folder: Path, name: object, what: str, suffix: str = "") -> Path:
    """``folder / (name + suffix)`` for a checked ``name``."""
    return folder / f"{checked_name(name, what)}{suffix}"


def new_folder_problems(out: Path, flag: str) -> list[str]:
    """Why ``out`` cannot be made as a new folder: it exists (a dangling link counts), a part
    of it is over 255 bytes, or a folder above it is a file or a dangling link."""
    return _path_problems(out, flag, [
        (lambda p: p.is_symlink() or p.exists(),
         "exists already (a dangling link counts); give a new folder")])


def folder_problems(out: Path, flag: str) -> list[str]:
    """Why files cannot be written into the folder ``out`` (made when missing): it is a file
    or a dangling link, a part of it is over 255 bytes, or a folder above it is a file."""
    return _path_problems(out, flag, [
        (_dangling, "a dangling link; give a folder"),
        (lambda p: p.exists() and not p.is_dir(), "is a file, not a folder; give a folder")])


def file_problems(out: Path, flag: str) -> list[str]:
    """Why a file cannot be written at ``out`` (replacing a file there): it is a folder or a
    dangling link, a part of it is over 255 bytes, or a folder above it is a file."""
    return _path_problems(out, flag, [
        (_dangling, "a dangling link; give a file path"),
        (Path.is_dir, "is a folder; give a file path")])


def _path_problems(out: Path, flag: str,
                   faults: list[tuple[Callable[[Path], bool], str]]) -> list[str]:
    """The first of ``faults`` (a test of the path and what to say when it holds) that ``out``
    has, else what is wrong above it. The length comes first: a file system refuses to look up
    a part over 255 bytes."""
    if any(len(part.encode("utf-8", "surrogateescape")) > 255 for part in out.parts):
        return [f"{flag} {shown(out, 200)}: a part of the path is over 255 bytes; give a "
                "shorter name"]
    for fault, why in faults:
        if fault(out):
            return [f"{flag} {shown(out, 200)}: {why}"]
    return _above(out, flag)


def _dangling(path: Path) -> bool:
    return path.is_symlink() and not path.exists()


def _above(out: Path, flag: str) -> list[str]:
    for parent in out.parents:
        if _dangling(parent):
            return [f"{flag} {shown(out, 200)}: {shown(parent, 200)} is a dangling link"]
        if parent.exists():
            return [] if parent.is_dir() else [
                f"{flag} {shown(out, 200)}: {shown(parent, 200)} is a file, not a folder"]
    return []
