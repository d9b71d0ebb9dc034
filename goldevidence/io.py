"""Reading and writing rows and predictions as JSONL; every problem names the file and line."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, cast

from goldevidence.rows import Row
from lens import DatasetError, UserError

REQUIRED_ROW_FIELDS = ("id", "question", "gold", "meta")


def _read_jsonl(path: Path, what: str) -> list[tuple[int, dict[str, Any]]]:
    if not path.is_file():
        raise UserError(f"{path}: {what} file not found")
    out = []
    with open(path, encoding="utf-8-sig") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{path}: line {n}: invalid JSON: {exc.msg}") from None
            if not isinstance(obj, dict):
                raise DatasetError(f"{path}: line {n}: each line must be a JSON object")
            out.append((n, obj))
    return out


def read_rows(path: str | Path, *, defaults: bool = True) -> list[Row]:
    """Rows in GoldEvidenceBench format (ours or the original tool's); without ``defaults``,
    as written (a missing ``meta.state_mode`` is not filled in from the row)."""
    p = Path(path)
    rows: list[Row] = []
    seen: set[str] = set()
    for n, row in _read_jsonl(p, "data"):
        missing = [f for f in REQUIRED_ROW_FIELDS if f not in row]
        if missing:
            raise DatasetError(f"{p}: line {n}: row is missing field(s) {missing}")
        if not row.get("document") and not row.get("book"):
            raise DatasetError(f"{p}: line {n}: row has neither 'document' nor 'book'")
        if not isinstance(row["gold"], dict) or "value" not in row["gold"]:
            raise DatasetError(f"{p}: line {n}: field 'gold' must be an object with 'value'")
        if row["id"] in seen:
            raise DatasetError(f"{p}: line {n}: duplicate row id {row['id']!r}")
        seen.add(row["id"])
        meta = row["meta"]
        if not isinstance(meta, dict) or "key" not in meta:
            raise DatasetError(f"{p}: line {n}: field 'meta' must be an object with 'key'")
        if defaults:
            meta.setdefault("state_mode", row.get("state_mode", "kv"))
        rows.append(cast(Row, row))  # its required fields are checked above
    if not rows:
        raise DatasetError(f"{p}: no rows")
    return rows


def read_jsonl_objects(path: str | Path, what: str) -> list[dict[str, Any]]:
    """Every object of a JSONL file as written, in file order (no checks beyond JSON)."""
    return [obj for _, obj in _read_jsonl(Path(path), what)]


def read_predictions(path: str | Path) -> dict[str, dict[str, Any]]:
    """Predictions keyed by row id; a line without an id is an error of the file."""
    p = Path(path)
    out: dict[str, dict[str, Any]] = {}
    for n, pred in _read_jsonl(p, "predictions"):
        rid = pred.get("id")
        if rid is None:
            raise DatasetError(f"{p}: line {n}: prediction has no 'id'")
        out[str(rid)] = pred
    return out


def write_jsonl(path: str | Path, items: Iterable[Mapping[str, object]]) -> int:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp")
    n = 0
    with open(tmp, "w", encoding="utf-8") as fh:
        for item in items:
            fh.write(json.dumps(item, ensure_ascii=False) + "\n")
            n += 1
    tmp.replace(p)
    return n
