"""A report section document, ``RUN_DIR/sections/<id>.json``, as the code that writes one builds
it: a title, figures, tables and notes (``lens.report.sections.registry`` renders it)."""

from __future__ import annotations

from typing import NotRequired, Required, TypedDict

# A cell of a section's table or one of its figures: the report shows None as "unknown".
Cell = str | int | float | bool | None


class SectionTable(TypedDict):
    title: NotRequired[str]
    columns: list[str]
    rows: list[list[Cell]]


class SectionDoc(TypedDict, total=False):
    title: Required[str]
    metrics: dict[str, Cell]
    tables: list[SectionTable]
    notes: list[str]
