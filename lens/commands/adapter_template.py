"""The files of a new adapter package (``lens adapters new NAME``), as ``string.Template``
texts: ``$name`` (the adapter's name and module), ``$cls`` (its class), ``$project`` (the
distribution's name) and ``$lens`` (lens's distribution name)."""

from __future__ import annotations

from string import Template

MODULE = Template('''\
"""$name: a lens memory adapter.

A complete starting point that passes ``lens adapters check $name``: episodes kept in a dict,
ranked by the words they share with the query, each hit shown as a snippet (the sentences that
match best), and the ``start_date`` / ``end_date`` filters lens's agent may send. Replace the
storage and the ranking with your memory system's; keep the contract (docs/writing-an-adapter.md
in lens).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from lens import CapabilityManifest, Document, Episode, SearchResult, SyncMemoryAdapter

WORDS = re.compile(r"\\w+")
SENTENCES = re.compile(r"(?<=[.!?])\\s+")
DATE_FILTERS = ("start_date", "end_date")


def words(text: str) -> set[str]:
    return {w for w in WORDS.findall(text.lower()) if len(w) > 2}


def filter_date(field: str, value: Any) -> datetime:
    """A date filter's value as lens passes it: the text the agent wrote, such as
    "2024-03-01" or "2024-03-01T09:00:00" (inclusive; a bare end date means that whole day).
    Anything else raises ValueError, whose message the agent reads and can correct."""
    text = str(value).strip()
    try:
        ts = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"filter {field!r}: {value!r} is not an ISO-8601 date such as "
                         "2024-03-01") from None
    if field == "end_date" and len(text) == 10:
        ts = ts.replace(hour=23, minute=59, second=59, microsecond=999_999)
    # Episode timestamps are timezone-aware (UTC when the dataset gives none).
    return ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)


class ${cls}Options(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_results: int = Field(default=10, ge=1)
    snippet_chars: int = Field(default=400, ge=40)


class $cls(SyncMemoryAdapter):
    Options = ${cls}Options

    def __init__(self, max_results: int = 10, snippet_chars: int = 400) -> None:
        self.max_results = max_results
        self.snippet_chars = snippet_chars
        self.episodes: dict[str, Episode] = {}

    def reset(self, scope_id: str) -> None:
        self.episodes = {}

    def ingest(self, episode: Episode) -> None:
        self.episodes[episode.episode_id] = episode

    def _snippet(self, text: str, wanted: set[str]) -> str:
        """The sentences sharing the most words with the query, in their order, cut to
        ``snippet_chars``: the agent reads a passage, and retrieve gives the whole episode."""
        sentences = SENTENCES.split(text)
        ranked = sorted(range(len(sentences)), key=lambda i: -len(wanted & words(sentences[i])))
        keep: list[int] = []
        for i in ranked:
            if sum(len(sentences[j]) + 1 for j in keep) + len(sentences[i]) > self.snippet_chars:
                break
            keep.append(i)
        return " ".join(sentences[i] for i in sorted(keep)) or text[: self.snippet_chars]

    def search(self, query: str, filters: dict[str, Any] | None = None,
               limit: int | None = None) -> list[SearchResult]:
        filters = filters or {}
        unknown = sorted(set(filters) - set(DATE_FILTERS))
        if unknown:
            raise ValueError(f"unknown filter(s) {unknown}; supported: start_date, end_date")
        start, end = (filter_date(f, filters[f]) if f in filters else None
                      for f in DATE_FILTERS)
        wanted = words(query)
        scored = []
        for ref, ep in self.episodes.items():
            if (start is not None and ep.timestamp < start) or (end is not None
                                                               and ep.timestamp > end):
                continue
            if overlap := len(wanted & words(ep.text)):
                scored.append((-overlap, ref, ep))
        k = min(limit or self.max_results, self.max_results)
        return [SearchResult(ref_id=ref, text=self._snippet(ep.text, wanted),
                             score=float(-neg),
                             metadata={"timestamp": ep.timestamp.isoformat()})
                for neg, ref, ep in sorted(scored, key=lambda s: s[:2])[:k]]

    def retrieve(self, ref_id: str) -> Document | None:
        ep = self.episodes.get(ref_id)
        if ep is None:
            return None
        return Document(ref_id=ref_id, text=ep.text,
                        metadata={"timestamp": ep.timestamp.isoformat()})

    def get_capabilities(self) -> CapabilityManifest:
        return CapabilityManifest(search_modes=["keyword"], filter_fields=list(DATE_FILTERS),
                                  max_results=self.max_results,
                                  description="$name: word overlap, snippets, date filters")

    def close(self) -> None:
        self.episodes = {}
''')

PYPROJECT = Template('''\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "$project"
version = "0.1.0"
requires-python = ">=3.11"
# lens's distribution, installed from its checkout first (pip install -e /path/to/lens).
dependencies = ["$lens"]

[project.entry-points."lens.adapters"]
$name = "$name:$cls"

[tool.setuptools]
py-modules = ["$name"]
''')

TEST = Template('''\
"""lens's conformance suite, one test per check (pytest test_$name.py)."""

from lens.testing import AdapterConformance
from $name import $cls


class Test$cls(AdapterConformance):
    def make_adapter(self) -> $cls:
        return $cls()
''')

CONFIG = Template('''\
# A first run: your adapter beside lens's default store, answered by the scripted policy (no
# model). Make the dataset first: lens datasets generate --domain ops --seed 1 --out dataset.json
name: $name-first-run
dataset:
  path: dataset.json
adapters:
  - name: $name
  - name: sqlite_fts
agent:
  model: scripted/policy
''')

README = Template('''\
# $project

A lens memory adapter, `$name` (class `$cls` in `$name.py`).

```console
$$ pip install -e /path/to/lens     # lens from its checkout, once per virtualenv
$$ pip install -e .                 # this package
$$ lens adapters check $name        # the conformance suite (exit 1 when a check fails)
$$ lens datasets generate --domain ops --seed 1 --out dataset.json
$$ lens run first-run.yaml          # $name beside sqlite_fts, no model needed
```

`pytest test_$name.py` runs the same checks as tests. While you work on the adapter,
`isolation: none` under the adapter in the config runs it in lens's own process: full
tracebacks, and a debugger (`breakpoint()`) stops in your code.
''')


def files(name: str, cls: str, project: str, lens_dist: str) -> dict[str, str]:
    """The package's files, by file name."""
    values = {"name": name, "cls": cls, "project": project, "lens": lens_dist}
    return {f"{name}.py": MODULE.substitute(values),
            "pyproject.toml": PYPROJECT.substitute(values),
            f"test_{name}.py": TEST.substitute(values),
            "first-run.yaml": CONFIG.substitute(values),
            "README.md": README.substitute(values)}
