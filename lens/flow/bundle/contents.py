"""What a results bundle holds and how its manifest of content hashes reads.

Inside the archive, under one folder ``lens-bundle-<run id>/``:

- ``BUNDLE.json``: this manifest: the run id, the dataset's content hash, and the sha256 and
  size of every other file; its ``digest`` is the sha256 of that file list, the one number to
  publish beside a result;
- ``run/``: the run directory as lens wrote it (manifest with the condition, records with every
  answer, transcript and retrieved text, events with every judge verdict, scores, reports);
- ``dataset/``: the dataset file (questions and ground truth, needed to re-judge), and its
  certification and gold errata when the run used them;
- ``answers.jsonl``: one line per question record joining the question, its ground truth, the
  answer, the retrieved context and the scores (for reading without lens);
- ``prompts.json``: every prompt template and their hash; ``versions.json``: the versions of
  Python, lens and its main dependencies.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict

from lens.core.distribution import DISTRIBUTION

FORMAT = "lens.bundle/1"
MANIFEST = "BUNDLE.json"
# Files every bundle has (paths inside the bundle folder).
REQUIRED = ("run/manifest.json", "run/records.jsonl", "run/events.jsonl", "run/scores.json",
            "answers.jsonl", "prompts.json", "versions.json")
# lens and the libraries its numbers depend on (pyproject's dependencies).
PACKAGES = (DISTRIBUTION, "anyio", "aiohttp", "openai", "pydantic", "tenacity", "structlog",
            "pyyaml", "rich", "numpy", "scipy", "nltk", "ijson", "llama-cpp-python", "litellm")


class FileEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sha256: str
    bytes: int


class ArchiveManifest(BaseModel):
    """What the ``BUNDLE.json`` of every bundle (a run's, a claims check's) holds: when and by
    which lens it was made, the sha256 and size of every other file, and ``digest`` over that
    list."""

    model_config = ConfigDict(extra="forbid")

    created_at: str
    lens_version: str
    files: dict[str, FileEntry]
    digest: str


class BundleManifest(ArchiveManifest):
    format: str = FORMAT
    run_id: str
    # The dataset file inside the bundle and the content hash the run's condition records.
    dataset_file: str
    dataset_hash: str | None
    judges: list[str]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def files_digest(files: dict[str, FileEntry]) -> str:
    """sha256 over the sorted ``path sha256 size`` lines: changes when any file does."""
    lines = "".join(f"{p}\t{e.sha256}\t{e.bytes}\n" for p, e in sorted(files.items()))
    return sha256(lines.encode("utf-8"))


def check_files(manifest: ArchiveManifest, files: dict[str, bytes], required: Iterable[str],
                kind: str, problems: list[str]) -> None:
    """Every file of the archive against ``manifest``'s list (missing, changed, added), the
    ``required`` files that a ``kind`` of bundle must list, and the digest of the list."""
    for path, entry in sorted(manifest.files.items()):
        data = files.get(path)
        if data is None:
            problems.append(f"{path}: listed in {MANIFEST} but missing from the archive")
        elif len(data) != entry.bytes or sha256(data) != entry.sha256:
            problems.append(f"{path}: its content differs from {MANIFEST} (sha256 "
                            f"{sha256(data)[:16]}…, expected {entry.sha256[:16]}…): changed "
                            "after export")
    for path in sorted(set(files) - set(manifest.files) - {MANIFEST}):
        problems.append(f"{path}: in the archive but not listed in {MANIFEST}: added after "
                        "export")
    for path in required:
        if path not in manifest.files:
            problems.append(f"{path}: {kind} must hold it, and {MANIFEST} does not list it")
    if files_digest(manifest.files) != manifest.digest:
        problems.append(f"{MANIFEST}: its digest does not match its file list: edited after "
                        "export")


def check_digest(manifest: ArchiveManifest, digest: str | None, problems: list[str]) -> None:
    """The manifest's digest against ``digest``, the one published with the result (if given):
    a bundle edited together with its manifest passes :func:`check_files`, not this."""
    if digest is not None and digest.strip().lower() != manifest.digest:
        problems.append(f"{MANIFEST}: digest {manifest.digest} is not the published one "
                        f"({digest.strip()})")


def dumps(obj: Any) -> bytes:
    return (json.dumps(obj, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
