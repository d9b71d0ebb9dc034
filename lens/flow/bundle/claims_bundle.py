"""The bundle of a claims check (``lens claims check --bundle``), and its verification by
``lens verify``.

Inside the archive, under one folder ``lens-claims-<id>/``: ``BUNDLE.json`` (the manifest: the
sha256 and size of every other file, and its ``digest`` over that list), ``claims.json``,
``report.md`` and ``report.html`` as the check wrote them, the publisher's files under
``inputs/`` (numbered in the order the reader takes them) and the mapping file under
``mapping/`` when one was used. ``lens verify`` checks the hashes, that the inputs are the files
``claims.json`` names, and recomputes the reproduced figure from them under the arithmetic
``claims.json`` records."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from lens.claims.arithmetic import Arithmetic, compute
from lens.claims.check import CheckResult, read_claims
from lens.core.distribution import version as lens_version
from lens.core.errors import UserError
from lens.core.jsonguard import JsonRefused, loads_guarded
from lens.flow.bundle.archive import read_archive, write_archive
from lens.flow.bundle.contents import (
    MANIFEST,
    ArchiveManifest,
    FileEntry,
    check_digest,
    check_files,
    dumps,
    files_digest,
    sha256,
)

FORMAT = "lens.claims-bundle/1"
REQUIRED = ("claims.json", "report.md", "report.html")


class ClaimsBundleManifest(ArchiveManifest):
    format: str = FORMAT
    reader: str


def export_claims(result: CheckResult, out_dir: Path) -> Path:
    """``out_dir``'s report files and the check's inputs as one archive in ``out_dir``."""
    files: dict[str, bytes] = {name: (out_dir / name).read_bytes() for name in REQUIRED}
    for n, f in enumerate(result.claims.inputs):
        files[f"inputs/{n}-{Path(f.path).name}"] = Path(f.path).read_bytes()
    if result.claims.mapping is not None:
        files[f"mapping/{Path(result.claims.mapping.path).name}"] = \
            Path(result.claims.mapping.path).read_bytes()
    entries = {p: FileEntry(sha256=sha256(b), bytes=len(b)) for p, b in files.items()}
    digest = files_digest(entries)
    manifest = ClaimsBundleManifest(created_at=datetime.now(UTC).isoformat(timespec="seconds"),
                                    lens_version=lens_version(), reader=result.claims.reader,
                                    files=entries, digest=digest)
    top = f"lens-claims-{digest[:12]}"
    members = {f"{top}/{p}": b for p, b in files.items()}
    members[f"{top}/{MANIFEST}"] = dumps(manifest.model_dump())
    target = out_dir / "claims-bundle.tar.gz"
    write_archive(target, members)
    return target


@dataclass
class ClaimsVerification:
    manifest: ClaimsBundleManifest | None
    problems: list[str] = field(default_factory=list)
    # What the recomputation found: "1157 of 1540" beside the recorded figure.
    recomputed: str = ""

    @property
    def ok(self) -> bool:
        return not self.problems


def claims_manifest(raw: bytes) -> bool:
    """Whether a BUNDLE.json is a claims bundle's (read before the run bundle's checks)."""
    try:
        data = loads_guarded(raw, what=MANIFEST)
    except JsonRefused:
        return False
    return isinstance(data, dict) and str(data.get("format", "")).startswith("lens.claims")


def verify_claims_bundle(path: Path, digest: str | None = None) -> ClaimsVerification | None:
    """The verification of a claims bundle; None when ``path`` is not one."""
    members, problems = read_archive(path)
    tops = sorted({n.split("/", 1)[0] for n in members})
    if len(tops) != 1:
        return None
    files = {n.split("/", 1)[1]: b for n, b in members.items() if "/" in n}
    raw = files.get(MANIFEST)
    if raw is None or not claims_manifest(raw):
        return None
    try:
        manifest = ClaimsBundleManifest.model_validate_json(raw)
    except ValidationError as exc:
        return ClaimsVerification(None, [*problems, f"{MANIFEST}: not a valid claims bundle "
                                         f"manifest ({exc.errors()[0]['msg']})"])
    check_files(manifest, files, REQUIRED, "a claims bundle", problems)
    out = ClaimsVerification(manifest, problems)
    check_digest(manifest, digest, problems)
    if not problems:
        _recompute(files, out)
    return out


def _recompute(files: dict[str, bytes], out: ClaimsVerification) -> None:
    """The inputs are the files claims.json names, and give the figure it records."""
    try:
        claims: dict[str, Any] = loads_guarded(files["claims.json"], what="claims.json")
    except JsonRefused as exc:
        out.problems.append(f"claims.json: not readable ({exc})")
        return
    inputs = sorted((p for p in files if p.startswith("inputs/")),
                    key=lambda p: int(p.split("/", 1)[1].split("-", 1)[0]))
    recorded = [i.get("sha256") for i in claims.get("inputs", [])]
    if [sha256(files[p]) for p in inputs] != recorded:
        out.problems.append("inputs/: the bundled files are not the ones claims.json names "
                            "(their sha256 differ)")
        return
    mappings = [p for p in files if p.startswith("mapping/")]
    reproduced = claims.get("reproduced") or {}
    with tempfile.TemporaryDirectory(prefix="lens-verify-claims-") as tmp:
        paths = []
        for p in [*inputs, *mappings]:
            target = Path(tmp) / p
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(files[p])
            paths.append(target)
        try:
            read = read_claims(paths[:len(inputs)],
                               None if mappings else str(claims.get("reader")),
                               paths[len(inputs)] if mappings else None)
            arithmetic = Arithmetic(**reproduced.get("arithmetic", {}))
        except (UserError, TypeError) as exc:
            out.problems.append(f"inputs/: lens cannot read them again ({exc})")
            return
    figure = compute(read, arithmetic)
    want = reproduced.get("overall") or {}
    got = figure.overall
    out.recomputed = f"{got.correct:g} of {got.n}"
    if (got.correct, got.n) != (want.get("correct"), want.get("n")):
        out.problems.append(f"claims.json: reproduced {want.get('correct')} of {want.get('n')}, "
                            f"but its inputs give {out.recomputed}")
    for cat, s in figure.categories.items():
        rec = (reproduced.get("categories") or {}).get(cat) or {}
        if (s.correct, s.n) != (rec.get("correct"), rec.get("n")):
            out.problems.append(f"claims.json: category {cat} records {rec.get('correct')} of "
                                f"{rec.get('n')}, its inputs give {s.correct:g} of {s.n}")
