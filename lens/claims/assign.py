"""Which category is which column of a published per-category table.

A table's columns carry names ("Single-Hop", "Temporal") that papers assign to a benchmark's
category numbers differently. With each category's question count known, an assignment of the
columns to the categories reproduces a row when the columns, weighted by those counts, give the
row's overall figure (the mean over the questions). The figures may be means over several judge
runs, so they need not be whole counts of a category. Every assignment is tried; the ones that
reproduce every row are the table's own."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lens.claims.arithmetic import LOCOMO_NAMES, Figure, rounds_to
from lens.claims.published import OVERALL, PublishedTable

# LoCoMo's 1,540 judged questions (categories 1-4 of locomo10.json), by category number.
LOCOMO_COUNTS = {"1": 282, "2": 321, "3": 96, "4": 841}


def label_key(label: str) -> str:
    """"Open Domain", "open_domain" and "open-domain" are one label."""
    return "-".join(label.lower().replace("_", " ").replace("-", " ").split())


def row_reproduced(row: Mapping[str, float], assignment: Mapping[str, str],
                   counts: Mapping[str, int], decimals: int) -> bool:
    """Whether the columns, weighted by their categories' question counts, give the row's
    overall figure. Each printed figure is rounded, so the weighted mean may lie half a unit
    of the last place from the overall on either side: a tolerance of one unit in all."""
    cols = [c for c in assignment if c in row]
    if OVERALL not in row or not cols:
        return True
    total = sum(counts[assignment[c]] for c in cols)
    weighted = sum(row[c] * counts[assignment[c]] for c in cols) / total
    return bool(abs(weighted - row[OVERALL]) <= 10 ** -decimals + 1e-9)


@dataclass(frozen=True)
class Assignment:
    # column -> category number as the data writes it
    columns: dict[str, str]
    rows_reproduced: tuple[str, ...]
    # Whether each column's name is the one the benchmark's code gives its category.
    is_benchmarks_own: bool


def assignments(table: PublishedTable, counts: Mapping[str, int] | None = None,
                names: Mapping[str, str] | None = None) -> list[Assignment]:
    """Every assignment of the table's columns to categories, with the rows each reproduces."""
    counts = dict(counts or LOCOMO_COUNTS)
    names = dict(names or LOCOMO_NAMES)
    cats = sorted(counts)
    cols = table.columns
    out = []
    for perm in itertools.permutations(cats, len(cols)):
        assignment = dict(zip(cols, perm, strict=True))
        rows = tuple(name for name, row in table.rows.items()
                     if row_reproduced(row, assignment, counts, table.decimals))
        own = all(label_key(c) == label_key(names.get(k, "")) for c, k in assignment.items())
        out.append(Assignment(assignment, rows, own))
    return out


def reproducing(found: Sequence[Assignment], rows: int) -> list[Assignment]:
    return [a for a in found if len(a.rows_reproduced) == rows]


def columns_of(figure: Figure, row: Mapping[str, float], columns: Sequence[str],
               decimals: int) -> dict[str, list[str]]:
    """For one published row: the categories of the file whose figure prints as each column."""
    return {c: [k for k, s in figure.categories.items()
                if rounds_to(s.percent, row[c], decimals)] for c in columns if c in row}
