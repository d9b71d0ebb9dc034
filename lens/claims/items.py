"""One publisher's per-question results as lens keeps them: every answer with its question, gold
answer, category as written, the publisher's verdicts (one per judge run) and stored scores."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class ClaimItem:
    # Stable within the file: the declared id field, else the group key and position.
    id: str
    question: str
    gold: str
    answer: str
    # The category exactly as the publisher wrote it ("2", 2 and "temporal" stay apart).
    category: str | None
    # One verdict per judge run as stored: True correct, False wrong, None unreadable.
    verdicts: tuple[bool | None, ...]
    scores: dict[str, float] = field(default_factory=dict)
    group: str = ""


@dataclass(frozen=True)
class InputFile:
    path: str
    sha256: str
    bytes: int


@dataclass(frozen=True)
class ClaimSet:
    """The items of one results file (or of one file and its companions)."""

    reader: str
    items: tuple[ClaimItem, ...]
    inputs: tuple[InputFile, ...]
    benchmark: str = "locomo"
    # What the reader itself noticed and the user should know (never silent).
    notes: tuple[str, ...] = ()
    # The publisher's own label of each category, where their code or README names them.
    labels: dict[str, str] = field(default_factory=dict)
    # The mapping file the items were read with (None for a built-in reader).
    mapping: InputFile | None = None

    @property
    def runs(self) -> int:
        return max((len(i.verdicts) for i in self.items), default=0)


def hash_file(path: Path) -> InputFile:
    data = path.read_bytes()
    return InputFile(str(path), hashlib.sha256(data).hexdigest(), len(data))
