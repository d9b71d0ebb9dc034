"""Which questions a list shows: filters and order from the page's query string."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from lens.view.index import Row, RunIndex

PAGE_SIZE = 100
StatusFilter = Literal["", "answered", "empty_answer", "error", "tool_errors"]
STATUS_FILTERS: dict[str, str] = {
    "": "any status", "answered": "answered", "empty_answer": "empty answer",
    "error": "errored", "tool_errors": "with tool errors",
}
FIELD_SORTS = ("checkpoint", "tokens", "tool_calls", "wall_s")


class QueryError(ValueError):
    """A query string the list cannot follow; the message names the parameter."""


class QuestionQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")

    q: str = ""
    adapter: str = ""
    type: str = ""
    checkpoint: int | None = None
    status: StatusFilter = ""
    metric: str = ""
    min: float | None = None
    max: float | None = None
    sort: str = ""
    order: Literal["asc", "desc"] = "asc"
    page: int = Field(default=1, ge=1)

    @field_validator("checkpoint", "min", "max", mode="before")
    @classmethod
    def _blank(cls, v: object) -> object:
        return None if v == "" else v

    @classmethod
    def parse(cls, params: Mapping[str, str]) -> QuestionQuery:
        try:
            return cls.model_validate(dict(params))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}"
                                 for e in exc.errors())
            raise QueryError(f"bad query parameter ({problems})") from None

    def check(self, metrics: list[str]) -> None:
        bad = []
        if self.metric and self.metric not in metrics:
            bad.append(f"metric: {self.metric!r} is not a metric of this run "
                       f"({', '.join(metrics) or 'none: not scored'})")
        if self.sort and self.sort not in metrics and self.sort not in FIELD_SORTS:
            bad.append(f"sort: {self.sort!r} is neither a metric nor one of "
                       f"{', '.join(FIELD_SORTS)}")
        if (self.min is not None or self.max is not None) and not self.metric:
            bad.append("min/max: name the metric they bound (metric=...)")
        if bad:
            raise QueryError("; ".join(bad))


@dataclass(frozen=True)
class Page:
    rows: list[Row]
    total: int
    matched: int
    page: int
    pages: int


def _keep(index: RunIndex, query: QuestionQuery) -> Callable[[Row], bool]:
    needle = query.q.strip().lower()

    def keep(row: Row) -> bool:
        if query.adapter and row.adapter != query.adapter:
            return False
        if query.checkpoint is not None and row.checkpoint != query.checkpoint:
            return False
        if query.status == "tool_errors":
            if row.tool_errors <= 0:
                return False
        elif query.status and row.status != query.status:
            return False
        if query.type and index.question_type(row.key) != query.type:
            return False
        if query.metric and (query.min is not None or query.max is not None):
            s = index.scored(row.key)
            v = s.metric(query.metric) if s else None
            if v is None:
                return False
            if query.min is not None and v < query.min:
                return False
            if query.max is not None and v > query.max:
                return False
        return not needle or needle in row.haystack

    return keep


def _sort_key(index: RunIndex, field: str, desc: bool) -> Callable[[Row], tuple[int, float]]:
    def key(row: Row) -> tuple[int, float]:
        if field in FIELD_SORTS:
            value: float | None = float(getattr(row, field))
        else:
            s = index.scored(row.key)
            value = s.metric(field) if s else None
        # Unknown values go last in either order: they are not small, they are unknown.
        if value is None:
            return (1, 0.0)
        return (0, -value if desc else value)

    return key


def select(index: RunIndex, query: QuestionQuery, rows: Iterable[Row] | None = None) -> Page:
    """The page of questions the query asks for, in the order it asks."""
    all_rows = list(index.rows.values()) if rows is None else list(rows)
    kept = [r for r in all_rows if _keep(index, query)(r)]
    if query.sort:
        kept.sort(key=_sort_key(index, query.sort, query.order == "desc"))
    elif query.order == "desc":
        kept.reverse()
    pages = max(1, -(-len(kept) // PAGE_SIZE))
    page = min(query.page, pages)
    start = (page - 1) * PAGE_SIZE
    return Page(rows=kept[start:start + PAGE_SIZE], total=len(all_rows), matched=len(kept),
                page=page, pages=pages)
