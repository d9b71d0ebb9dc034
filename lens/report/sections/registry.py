"""Extra report sections contributed by scenarios and other plugins.

Two ways in:

1. A JSON file in the run directory, ``RUN_DIR/sections/<id>.json``, shaped as::

       {"title": "Contradictions",
        "metrics": {"value_acc": 0.82, "cite_f1": {"mean": 0.7, "low": 0.6, "high": 0.8, "n": 120}},
        "tables": [{"title": "by state mode", "columns": ["mode", "acc"], "rows": [["kv", 0.9]]}],
        "notes": ["..."]}

   Every field is optional; the report renders it generically (all text escaped).
2. A provider function ``(RunData) -> Section | None`` registered with
   :func:`register_section_provider` or through the entry-point group ``lens.report_sections``,
   for a section that needs its own computation or layout. A provider that raises becomes a
   visible "section failed" note, never a broken report.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lens.core import plugins
from lens.core.jsonguard import loads_guarded
from lens.report.documents.document import (
    Block,
    Bullets,
    Heading,
    Table,
    e,
    md_text,
    to_html,
    to_markdown,
)
from lens.report.foundations.data import RunData

ENTRY_POINT_GROUP = plugins.REPORT_SECTIONS
SECTIONS_DIR = "sections"


@dataclass(frozen=True)
class Section:
    id: str
    title: str
    markdown: str
    html: str
    data: dict[str, Any] = field(default_factory=dict)


SectionProvider = Callable[[RunData], "Section | None"]
_PROVIDERS: list[SectionProvider] = []


def register_section_provider(provider: SectionProvider) -> SectionProvider:
    """Add a provider (usable as a decorator); registering twice has no effect."""
    if provider not in _PROVIDERS:
        _PROVIDERS.append(provider)
    return provider


def _entry_point_providers() -> list[SectionProvider]:
    found = []
    for name, target in plugins.targets(ENTRY_POINT_GROUP).items():
        try:
            found.append(plugins.load_target(target))
        except Exception as exc:  # a broken plugin must not break every report
            found.append(_failed_provider(name, exc))
    return found


def _failed_provider(name: str, exc: Exception) -> SectionProvider:
    def provider(run: RunData) -> Section:
        raise RuntimeError(f"could not load section plugin {name!r}: {exc}")
    provider.__name__ = name
    return provider


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3f}"
    if v is None:
        return "unknown"
    if isinstance(v, dict | list):
        return json.dumps(v, ensure_ascii=False, sort_keys=True)
    return str(v)


def _metric_text(v: Any) -> str:
    if isinstance(v, dict) and "mean" in v:
        mean = v.get("mean")
        text = _cell(mean) if mean is not None else "unknown"
        if v.get("low") is not None and v.get("high") is not None:
            text += f" [{_cell(v['low'])}, {_cell(v['high'])}]"
        if v.get("n") is not None:
            text += f" (n={v['n']})"
        return text
    return _cell(v)


def _metrics_table(metrics: object) -> list[Block]:
    """The document's metrics as a table of metric and value; none when it has none."""
    if not isinstance(metrics, dict) or not metrics:
        return []
    return [Table(["metric", "value"], [[str(k), _metric_text(v)] for k, v in metrics.items()])]


def _table_blocks(table: dict[str, Any]) -> list[Block]:
    """A table of a section document: its title, and its rows when it names columns."""
    blocks: list[Block] = []
    if table.get("title"):
        blocks.append(Heading(str(table["title"]), level=3))
    cols = [str(c) for c in table.get("columns") or []]
    if cols:
        rows = [r for r in table.get("rows") or [] if isinstance(r, list)]
        blocks.append(Table(cols, [[_cell(c) for c in r] for r in rows]))
    return blocks


def render_json_section(section_id: str, doc: dict[str, Any]) -> Section:
    """Render a section document (the JSON shape above) as markdown and escaped HTML."""
    title = str(doc.get("title") or section_id)
    blocks: list[Block] = [Heading(title)]
    blocks += _metrics_table(doc.get("metrics"))
    for table in doc.get("tables") or []:
        if isinstance(table, dict):
            blocks += _table_blocks(table)
    notes = [str(n) for n in doc.get("notes") or []]
    if notes:
        blocks.append(Bullets(notes, style="note"))
    return Section(id=section_id, title=title, markdown=to_markdown(blocks),
                   html=to_html(blocks), data=doc)


def _json_file_sections(run: RunData) -> list[Section]:
    paths: list[tuple[str, Path]] = []
    folder = run.root / SECTIONS_DIR
    if folder.is_dir():
        paths += [(p.stem, p) for p in sorted(folder.glob("*.json"))]
    out = []
    for sid, path in paths:
        try:
            doc = loads_guarded(path.read_bytes(), what="the section")
            if not isinstance(doc, dict):
                raise ValueError("the top level must be a JSON object")
            out.append(render_json_section(sid, doc))
        except (OSError, ValueError) as exc:
            out.append(_error_section(sid, f"{path.name}: {exc}"))
    return out


def _error_section(sid: str, message: str) -> Section:
    text = f"section {sid!r} failed: {message}"
    return Section(id=sid, title=sid, markdown=f"## {md_text(sid)}\n\n> {md_text(text)}\n",
                   html=f"<h2>{e(sid)}</h2><p class='fail'>{e(text)}</p>",
                   data={"error": message})


def _plain(value: Any) -> Any:
    """JSON-safe copy: summary.json must always serialise (NaN and infinities become None)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, str | int | bool):
        return value
    return str(value)


def collect_sections(run: RunData) -> list[Section]:
    """Every extra section for this run: JSON files first, then registered providers."""
    sections = _json_file_sections(run)
    seen = {s.id for s in sections}
    for provider in [*_PROVIDERS, *_entry_point_providers()]:
        name = getattr(provider, "__name__", "section")
        try:
            section = provider(run)
        except Exception as exc:
            section = _error_section(name, f"{type(exc).__name__}: {exc}")
        if section is not None and section.id not in seen:
            sections.append(dataclasses.replace(section, data=_plain(section.data)))
            seen.add(section.id)
    return sections
