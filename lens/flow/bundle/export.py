"""``lens export``: a run directory into one results bundle (lens.flow.bundle.contents)."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import stat
import tempfile
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import ValidationError

from lens.core.distribution import DISTRIBUTION
from lens.core.distribution import version as lens_version
from lens.core.errors import UserError
from lens.core.redact import (
    register_config_secrets,
    register_env_secrets,
    scrub_bytes,
    scrub_chunks,
)
from lens.core.safenames import UnsafeName, checked_name
from lens.data.dataset import Dataset
from lens.data.dataset_load import load_dataset
from lens.data.dataset_stream import StreamProblem, stream_dataset
from lens.data.prompts import all_templates, prompts_hash
from lens.flow.bundle.archive import Streamed, archive_format, write_archive
from lens.flow.bundle.contents import (
    MANIFEST,
    PACKAGES,
    BundleManifest,
    FileEntry,
    dumps,
    files_digest,
    sha256,
)
from lens.report.foundations.data import RunData, load_run
from lens.runs.certification import certification_path
from lens.runs.store import RunStore, now_iso
from lens.scoring.foundations.types import RunScores
from lens.scoring.judging.judge_panel import load_panel

_CHUNK = 1024 * 1024


def package_versions() -> dict[str, str | None]:
    """Python's version and each package's installed version (None: not installed)."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    # A checkout run from its folder has no installed metadata; its version is still known.
    out[DISTRIBUTION] = lens_version()
    return out


def _dataset_of(run: RunData, dataset_path: Path | None) -> tuple[Path, Dataset]:
    recorded = (run.manifest.get("dataset") or {}).get("path")
    path = dataset_path or (Path(recorded) if recorded else None)
    if path is None or not path.is_file():
        raise UserError(f"{run.root}: the run's dataset {str(path or 'unknown')!r} is not "
                        "there; pass it with --dataset PATH (re-judging needs its ground truth)")
    return path, _questions_of(path)


def _questions_of(path: Path) -> Dataset:
    """The dataset's questions and fields without its scopes (each scope is read and dropped:
    the bundle copies the file, and its answers need only the questions); a file the stream
    cannot read is loaded, which raises the usual :class:`DatasetError`."""
    try:
        return stream_dataset(path, on_scope=lambda scope: None)
    except (OSError, StreamProblem):
        return load_dataset(path)


def dataset_view(ds: Dataset, config: dict[str, Any]) -> Dataset:
    """The dataset as the run saw it (only the scopes its config selected)."""
    scopes = ((config.get("dataset") or {}).get("scopes")) if isinstance(config, dict) else None
    return ds.select_scopes(list(scopes)) if scopes else ds


def _write_answers(store: RunStore, scores: RunScores, ds: Dataset, out: BinaryIO) -> None:
    """One JSON line per question record to ``out``: question, ground truth, answer, context,
    scores; the records are read one at a time, in the order the run committed them."""
    questions = {(q.scope_id, q.question_id): q for q in ds.questions}
    by_key = {q.key: q for q in scores.questions}
    try:
        for r in store.iter_records():
            q = questions.get((r.scope_id, r.question_id))
            row = by_key.get(r.key)
            context = [m.content for m in r.transcript if m.role == "tool"]
            out.write(json.dumps({
                "key": r.key, "adapter": r.adapter, "scope_id": r.scope_id,
                "question_id": r.question_id, "repeat": r.repeat, "status": r.status,
                "question": q.prompt if q else None,
                "ground_truth": q.ground_truth.model_dump(mode="json") if q else None,
                "answer": r.answer, "cited_refs": r.cited_refs,
                "retrieved_refs": r.retrieved_refs, "retrieved_context": context,
                "transcript": [m.model_dump(mode="json") for m in r.transcript],
                "scores": row.metrics if row else None,
                # The memory state the answer came from (lens/runner/memory_state.py).
                "memory_state": r.memory_state,
            }, ensure_ascii=False, sort_keys=True).encode("utf-8") + b"\n")
    except ValidationError as exc:
        raise UserError(f"{store.root}: a question record is invalid: "
                        f"{exc.errors()[0]['msg']}") from None


def _file_chunks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            yield chunk


def _scrubbed(path: Path) -> Iterator[bytes]:
    return scrub_chunks(_file_chunks(path))


def _measure(path: Path) -> FileEntry:
    digest = hashlib.sha256()
    size = 0
    for chunk in _scrubbed(path):
        digest.update(chunk)
        size += len(chunk)
    return FileEntry(sha256=digest.hexdigest(), bytes=size)


def _checked(name: str, path: Path, entry: FileEntry) -> Streamed:
    """The file's scrubbed bytes for the archive, refused at their end unless they are the
    bytes the manifest counted (the file changed between the two reads)."""
    def chunks() -> Iterator[bytes]:
        digest = hashlib.sha256()
        for chunk in _scrubbed(path):
            digest.update(chunk)
            yield chunk
        if digest.hexdigest() != entry.sha256:
            raise UserError(f"{path}: changed while the bundle was written ({name}); write it "
                            "again once nothing writes to the run")
    return Streamed(entry.bytes, chunks)


# A run id names the bundle file and its folder inside the archive: one path component of
# ordinary characters, so neither can land outside its folder.


def bundle_id(run: RunData) -> str:
    try:
        return checked_name(run.run_id, "run_id")
    except UnsafeName as exc:
        raise UserError(f"{run.root / 'manifest.json'}: {exc}; a bundle is named by it, so it "
                        "may not name another folder; repair the manifest") from None


def default_out(run: RunData) -> Path:
    return run.root.parent / f"{bundle_id(run)}.lens-bundle.tar.gz"


def run_files(root: Path) -> list[Path]:
    """The run's regular files, found without following links: a link (to a file or folder
    outside the run or inside it) is never packed, so the bundle holds only the run itself."""
    found: list[Path] = []
    for folder, dirs, names in os.walk(root, followlinks=False):
        base = Path(folder)
        dirs[:] = sorted(d for d in dirs if not (base / d).is_symlink())
        for name in sorted(names):
            path = base / name
            if stat.S_ISREG(path.lstat().st_mode):
                found.append(path)
    return sorted(found)


def _load_head(run_dir: Path) -> RunData:
    """The run's manifest and scores, without its records and events (the bundle streams
    them): what names the bundle and what its answers join."""
    run = load_run(run_dir, records=False)
    if run.scores is None:
        raise UserError(f"{run_dir}: the run is not scored; score it first (lens score "
                        f"{run_dir}) so the bundle carries its scores")
    return run


def export_bundle(run_dir: Path, out: Path | None = None, *, dataset_path: Path | None = None
                  ) -> tuple[Path, BundleManifest]:
    """Write the bundle of ``run_dir`` (default: beside it, ``<run id>.lens-bundle.tar.gz``);
    every byte passes the secret scrubbing first. Files are streamed into the archive (read
    once to count and hash them, once to write them), so it holds about one chunk of a file
    at a time, with the run's scores and the dataset's questions."""
    run = _load_head(run_dir)
    assert run.scores is not None
    top = f"lens-bundle-{bundle_id(run)}"
    target = out or default_out(run)
    archive_format(target)
    if not target.parent.is_dir():
        raise UserError(f"{target}: its folder {target.parent} does not exist; create it or "
                        "name a file in an existing folder with --out FILE")
    if target.is_dir():
        raise UserError(f"{target}: --out names a folder; give a .tar.gz or .zip file path")
    config = run.manifest.get("config") or {}
    register_env_secrets()
    register_config_secrets(config)
    ds_path, full = _dataset_of(run, dataset_path)
    ds = dataset_view(full, config)
    sources: dict[str, Path] = {}
    for path in run_files(run.root):
        rel = path.relative_to(run.root).as_posix()
        if rel.endswith((".lock", ".part", ".tmp")):
            continue
        sources[f"run/{rel}"] = path
    dataset_file = f"dataset/{ds_path.name}"
    sources[dataset_file] = ds_path
    cert = certification_path(ds_path)
    if cert.is_file():
        sources[f"dataset/{cert.name}"] = cert
    errata = (config.get("scoring") or {}).get("errata")
    if errata and Path(errata).is_file():
        sources[f"dataset/errata/{Path(errata).name}"] = Path(errata)
    small = {
        "prompts.json": scrub_bytes(dumps({"prompts_hash": prompts_hash(),
                                           "templates": all_templates()})),
        # "lens": the version that wrote the bundle, which BUNDLE.json's lens_version claims.
        "versions.json": dumps({**package_versions(), "lens": lens_version()}),
    }
    # The answers file is written beside the bundle first (it joins every record with its
    # question and scores: as large as the records), then streamed in like the run's files.
    with tempfile.TemporaryDirectory(prefix=f".{target.name}.", dir=target.parent) as tmp:
        answers = Path(tmp) / "answers.jsonl"
        with answers.open("wb") as fh:
            _write_answers(RunStore(run.root), run.scores, ds, fh)
        sources["answers.jsonl"] = answers
        entries = {p: _measure(path) for p, path in sources.items()}
        entries.update({p: FileEntry(sha256=sha256(b), bytes=len(b)) for p, b in small.items()})
        manifest = BundleManifest(
            run_id=run.run_id, created_at=now_iso(), lens_version=lens_version(),
            dataset_file=dataset_file,
            dataset_hash=(run.manifest.get("dataset") or {}).get("content_hash"),
            judges=load_panel(run.root, run.scores).labels, files=entries,
            digest=files_digest(entries))
        members: dict[str, bytes | Streamed] = {
            f"{top}/{p}": _checked(p, path, entries[p]) for p, path in sources.items()}
        members.update({f"{top}/{p}": b for p, b in small.items()})
        members[f"{top}/{MANIFEST}"] = dumps(manifest.model_dump(mode="json"))
        write_archive(target, members)
    return target, manifest
