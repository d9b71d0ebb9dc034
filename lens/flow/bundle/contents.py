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


class BundleManifest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: str = FORMAT
    run_id: str
    created_at: str
    lens_version: str
    # The dataset file inside the bundle and the content hash the run's condition records.
    dataset_file: str
    dataset_hash: str | None
    judges: list[str]
    files: dict[str, FileEntry]
    digest: str


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def files_digest(files: dict[str, FileEntry]) -> str:
    """sha256 over the sorted ``path sha256 size`` lines: changes when any file does."""
    lines = "".join(f"{p}\t{e.sha256}\t{e.bytes}\n" for p, e in sorted(files.items()))
    return sha256(lines.encode("utf-8"))


def dumps(obj: Any) -> bytes:
    return (json.dumps(obj, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
