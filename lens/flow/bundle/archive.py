"""A results bundle's archive: one tar.gz or zip file, written and read with the standard
library. Members carry fixed times and owners, in sorted order, so the same content gives the
same bytes."""

from __future__ import annotations

import gzip
import io
import stat
import tarfile
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from lens.core.errors import UserError


def archive_format(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(".zip"):
        return "zip"
    if name.endswith((".tar.gz", ".tgz")):
        return "tar.gz"
    raise UserError(f"{path}: a bundle is a .tar.gz, .tgz or .zip file (name the format by "
                    "the file's extension)")


_CHUNK = 1024 * 1024


@dataclass(frozen=True)
class Streamed:
    """A member written from a stream of chunks, ``size`` bytes in all, instead of held whole;
    ``chunks`` is called once, when the member is written."""

    size: int
    chunks: Callable[[], Iterable[bytes]]


class _Reader(io.RawIOBase):
    """The chunks of a :class:`Streamed` member as a file tarfile reads from."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self._chunk = b""
        self._at = 0  # how far into the current chunk has been read

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        """Up to ``size`` bytes, fewer only at the end (tarfile takes a short read for one)."""
        want = _CHUNK if size is None or size < 0 else size
        parts: list[bytes] = []
        got = 0
        while got < want:
            if self._at >= len(self._chunk):
                chunk = next(self._chunks, None)
                if chunk is None:
                    break
                self._chunk, self._at = chunk, 0
                continue
            part = self._chunk[self._at:self._at + want - got]
            self._at += len(part)
            parts.append(part)
            got += len(part)
        return b"".join(parts)


def _stream(member: bytes | Streamed) -> Streamed:
    if isinstance(member, Streamed):
        return member
    return Streamed(len(member), lambda: (member,))


def write_archive(path: Path, members: Mapping[str, bytes | Streamed]) -> None:
    """Write ``members`` (archive path -> bytes, or a :class:`Streamed` member) to ``path``,
    all or nothing; a streamed member is copied chunk by chunk, never held whole."""
    fmt = archive_format(path)
    tmp = path.with_name(path.name + ".part")
    try:
        if fmt == "zip":
            with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
                for name in sorted(members):
                    member = _stream(members[name])
                    entry = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
                    entry.compress_type = zipfile.ZIP_DEFLATED
                    entry.external_attr = 0o644 << 16
                    # The size known up front decides the zip64 extra, as writestr does.
                    entry.file_size = member.size
                    written = 0
                    with zf.open(entry, "w") as dest:
                        for chunk in member.chunks():
                            written += len(chunk)
                            dest.write(chunk)
                    if written != member.size:
                        raise _changed(name, member.size, written)
        else:
            with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz, \
                    tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
                for name in sorted(members):
                    member = _stream(members[name])
                    info = tarfile.TarInfo(name)
                    info.size = member.size
                    info.mode = 0o644
                    reader = _Reader(member.chunks())
                    try:
                        tar.addfile(info, reader)
                    except OSError as exc:  # tarfile's "unexpected end of data"
                        raise _changed(name, member.size, None) from exc
                    if reader.read(1):
                        raise _changed(name, member.size, None)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def _changed(name: str, size: int, written: int | None) -> UserError:
    got = "a different number of bytes" if written is None else f"{written} bytes"
    return UserError(f"{name}: {got} where {size} were counted: a file changed while the "
                     "bundle was written; write it again once nothing writes to the run")


# What a bundle may unpack to, checked before a member is read and again on the bytes read: a
# bundle is JSON text, which compresses about tenfold; a member claiming more, or bytes past
# what was claimed, is a decompression bomb, refused before memory fills.
MAX_UNPACKED_BYTES = 4 * 1024**3
MAX_RATIO = 200
MIN_BUDGET = 64 * 1024**2


class _Budget:
    """Bytes an archive may still unpack to: the lesser of :data:`MAX_UNPACKED_BYTES` and
    :data:`MAX_RATIO` times its size on disk (at least :data:`MIN_BUDGET`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.left = min(MAX_UNPACKED_BYTES, max(MIN_BUDGET, MAX_RATIO * path.stat().st_size))

    def refuse(self, name: str, size: int) -> UserError:
        return UserError(f"{self.path}: {name}: unpacks to {size} bytes or more, over what a "
                         f"bundle of {self.path.stat().st_size} bytes may hold (at most "
                         f"{MAX_RATIO} times its size, {MAX_UNPACKED_BYTES} bytes in all): "
                         "not a lens bundle (a decompression bomb?); it was not unpacked")

    def read(self, name: str, declared: int, stream: io.IOBase | IO[bytes]) -> bytes:
        if declared > self.left:
            raise self.refuse(name, declared)
        out = bytearray()
        while chunk := stream.read(min(_CHUNK, self.left - len(out) + 1)):
            out += chunk
            if len(out) > self.left:
                raise self.refuse(name, len(out))
        self.left -= len(out)
        return bytes(out)


def _safe(name: str) -> bool:
    p = PurePosixPath(name)
    return bool(name) and not p.is_absolute() and ".." not in p.parts and "\\" not in name


def read_archive(path: Path) -> tuple[dict[str, bytes], list[str]]:
    """Every regular file of the archive by its path, and the problems met reading it (unsafe
    paths, links, entries that are neither files nor folders): those entries are left out."""
    if not path.is_file():
        raise UserError(f"{path}: no such bundle file")
    fmt = archive_format(path)
    members: dict[str, bytes] = {}
    problems: list[str] = []
    try:
        for name, data, kind in (_zip_entries(path) if fmt == "zip" else _tar_entries(path)):
            if not _safe(name):
                problems.append(f"{name}: unsafe path in the archive (absolute or with '..')")
            elif kind == "file":
                if name in members:
                    problems.append(f"{name}: appears twice in the archive")
                members[name] = data
            elif kind != "dir":
                problems.append(f"{name}: a {kind} in the archive (only files belong there)")
    except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError) as exc:
        raise UserError(f"{path}: not a readable {fmt} archive ({exc})") from None
    return members, problems


def _tar_entries(path: Path) -> Iterator[tuple[str, bytes, str]]:
    budget = _Budget(path)
    with tarfile.open(path, mode="r:gz") as tar:
        for info in tar:
            if info.isfile():
                f = tar.extractfile(info)
                yield info.name, budget.read(info.name, info.size, f) if f else b"", "file"
            elif info.isdir():
                yield info.name, b"", "dir"
            else:
                yield info.name, b"", "link" if info.issym() or info.islnk() else "special entry"


def _zip_kind(info: zipfile.ZipInfo) -> str:
    """A zip entry's kind from its Unix mode (the high bits of its external attributes): no
    file-type bits (a zip not made on Unix, or lens's own) is a plain file."""
    mode = info.external_attr >> 16
    if info.is_dir():
        return "dir"
    if not stat.S_IFMT(mode) or stat.S_ISREG(mode):
        return "file"
    return "link" if stat.S_ISLNK(mode) else "special entry"


def _zip_entries(path: Path) -> Iterator[tuple[str, bytes, str]]:
    budget = _Budget(path)
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            kind = _zip_kind(info)
            if kind != "file":
                yield info.filename, b"", kind
                continue
            with zf.open(info) as f:
                yield info.filename, budget.read(info.filename, info.file_size, f), "file"
