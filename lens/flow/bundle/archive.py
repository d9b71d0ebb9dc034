"""A results bundle's archive: one tar.gz or zip file, written and read with the standard
library. Members carry fixed times and owners, in sorted order, so the same content gives the
same bytes."""

from __future__ import annotations

import gzip
import io
import tarfile
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath

from lens.core.errors import UserError


def archive_format(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(".zip"):
        return "zip"
    if name.endswith((".tar.gz", ".tgz")):
        return "tar.gz"
    raise UserError(f"{path}: a bundle is a .tar.gz, .tgz or .zip file (name the format by "
                    "the file's extension)")


def write_archive(path: Path, members: Mapping[str, bytes]) -> None:
    """Write ``members`` (archive path -> bytes) to ``path``, all or nothing."""
    fmt = archive_format(path)
    tmp = path.with_name(path.name + ".part")
    try:
        if fmt == "zip":
            with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
                for name in sorted(members):
                    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
                    info.compress_type = zipfile.ZIP_DEFLATED
                    info.external_attr = 0o644 << 16
                    zf.writestr(info, members[name])
        else:
            with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz, \
                    tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
                for name in sorted(members):
                    data = members[name]
                    info = tarfile.TarInfo(name)
                    info.size = len(data)
                    info.mode = 0o644
                    tar.addfile(info, io.BytesIO(data))
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


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
    with tarfile.open(path, mode="r:gz") as tar:
        for info in tar:
            if info.isfile():
                f = tar.extractfile(info)
                yield info.name, f.read() if f else b"", "file"
            elif info.isdir():
                yield info.name, b"", "dir"
            else:
                yield info.name, b"", "link" if info.issym() or info.islnk() else "special entry"


def _zip_entries(path: Path) -> Iterator[tuple[str, bytes, str]]:
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            if info.is_dir():
                yield info.filename, b"", "dir"
            else:
                yield info.filename, zf.read(info), "file"
