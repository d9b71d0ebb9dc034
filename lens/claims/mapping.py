"""A declared mapping: which field of a JSON, JSON-lines or CSV results file holds what, written in
a small YAML or JSON file a user can share, so a format lens has no reader for needs no code.

    format: json              # json | jsonl | csv (default: the results file's extension)
    items: "*"                # where the list of items sits: a dotted path; "*" takes every
                              # value of a mapping (its key becomes the item's group) or list
    fields:
      id: question_id         # optional: default group and position
      question: question
      gold: answer
      answer: response
      category: category      # optional
      verdicts: [llm_score]   # one field per judge run (dotted paths: autoeval_label.label)
      scores: [f1_score, bleu_score]
    categories: {"1": single-hop}   # optional: the publisher's label of each category
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lens.claims.items import ClaimItem, ClaimSet, hash_file
from lens.core.errors import Problem, UserError
from lens.core.jsonguard import JsonRefused, loads_guarded
from lens.core.yamlguard import YamlRefused, load_yaml

# A results file larger than this is refused before it is parsed.
MAX_RESULTS_BYTES = 512 * 1024 * 1024
MAX_MAPPING_BYTES = 1024 * 1024
# Verdicts as publishers store them; anything else is unreadable (None), never wrong.
TRUE_WORDS = frozenset({"true", "1", "1.0", "correct", "yes", "right"})
FALSE_WORDS = frozenset({"false", "0", "0.0", "wrong", "no", "incorrect"})


class Fields(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str | None = None
    question: str
    gold: str
    answer: str
    category: str | None = None
    verdicts: list[str] = Field(default_factory=list)
    scores: list[str] = Field(default_factory=list)


class Mapping(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: Literal["json", "jsonl", "csv"] | None = None
    items: str = ""
    fields: Fields
    categories: dict[str, str] = Field(default_factory=dict)
    benchmark: str = "locomo"


def load_mapping(path: Path) -> Mapping:
    """The mapping file, validated; every problem named with its field and fix (exit 2)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UserError(f"{path}: cannot read the mapping file ({exc.strerror}); give the path "
                        "of a YAML or JSON mapping") from None
    if len(raw) > MAX_MAPPING_BYTES:
        raise UserError(f"{path}: a mapping file is a few lines; this one is {len(raw)} bytes")
    try:
        data = (loads_guarded(raw, what=str(path)) if path.suffix == ".json"
                else load_yaml(raw.decode("utf-8")))
    except (JsonRefused, YamlRefused, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: not a readable mapping: {str(exc).splitlines()[0]}; write it "
                        "as YAML or JSON (see docs/claims.md, 'A mapping file')") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: a mapping is an object with 'items' and 'fields' (got "
                        f"{type(data).__name__})")
    try:
        return Mapping.model_validate(data)
    except ValidationError as exc:
        problems = [Problem(str(path), "field '" + ".".join(str(x) for x in e["loc"]) + "'",
                            _fix(e)) for e in exc.errors()]
        raise UserError(f"{path}: the mapping has {len(problems)} problem(s)",
                        problems) from None


def _fix(error: Any) -> str:
    kind, msg = error["type"], error["msg"]
    if kind == "missing":
        return ("missing: name the field of each item that holds it (fields: question, gold "
                "and answer are required)")
    if kind == "extra_forbidden":
        return ("not a mapping field; the fields are format, items, fields (id, question, "
                "gold, answer, category, verdicts, scores), categories, benchmark")
    if kind == "literal_error":
        return f"{msg}: json, jsonl or csv"
    return f"{msg}"


def lookup(value: Any, path: str) -> Any:
    """``value`` at a dotted path (list positions as numbers); None where the path ends."""
    for part in path.split(".") if path else []:
        if isinstance(value, dict):
            value = value.get(part)
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value


def _walk(value: Any, parts: list[str], group: str) -> Iterator[tuple[str, Any]]:
    """Every item under ``parts``, each with the keys "*" passed through (its group)."""
    if not parts:
        if isinstance(value, list):
            yield from ((group, v) for v in value)
        return
    head, rest = parts[0], parts[1:]
    if head == "*":
        pairs = (value.items() if isinstance(value, dict)
                 else enumerate(value) if isinstance(value, list) else ())
        for key, v in pairs:
            yield from _walk(v, rest, f"{group}/{key}" if group else str(key))
    else:
        yield from _walk(lookup(value, head), rest, group)


def verdict(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        return True if word in TRUE_WORDS else False if word in FALSE_WORDS else None
    return None


def text(value: Any) -> str:
    """A field as text: a list of accepted answers (``golds``) joined by " | "."""
    if value is None:
        return ""
    if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        return " | ".join(str(v) for v in value)
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        return None


def _records(path: Path, mapping: Mapping) -> list[tuple[str, Any]]:
    fmt = mapping.format or {".jsonl": "jsonl", ".csv": "csv"}.get(path.suffix.lower(), "json")
    size = path.stat().st_size
    if size > MAX_RESULTS_BYTES:
        raise UserError(f"{path}: {size} bytes, over the {MAX_RESULTS_BYTES} byte limit for a "
                        "results file; split it")
    raw = path.read_bytes()
    try:
        if fmt == "csv":
            rows = list(csv.DictReader(io.StringIO(raw.decode("utf-8-sig"))))
            return [("", r) for r in rows]
        if fmt == "jsonl":
            lines = raw.decode("utf-8-sig").splitlines()
            return [("", loads_guarded(line, what=f"{path} line {n}"))
                    for n, line in enumerate(lines, 1) if line.strip()]
        doc = loads_guarded(raw, what=str(path), max_bytes=MAX_RESULTS_BYTES)
    except (JsonRefused, UnicodeDecodeError, csv.Error) as exc:
        raise UserError(f"{path}: {exc}; give the {fmt} file the publisher released, or set "
                        "'format' in the mapping") from None
    return list(_walk(doc, mapping.items.split(".") if mapping.items else [], ""))


def _some_records(path: Path, mapping: Mapping, source: str) -> list[tuple[str, Any]]:
    """The file's records where the mapping places them; refused when there are none."""
    try:
        records = _records(path, mapping)
    except OSError as exc:
        raise UserError(f"{path}: cannot read the results file ({exc.strerror})") from None
    if not records:
        raise UserError(f"{path}: no items at '{mapping.items or '(the top)'}'; set 'items' in "
                        f"{source} to where the list of results sits")
    return records


def _missing_fields(rec: dict[str, Any], f: Fields, source: str) -> list[str]:
    """What a record lacks of the fields the mapping declares (its gold may be absent)."""
    missing = [f"no field '{getattr(f, name)}' (fields.{name} in {source}); name the field "
               f"that holds the {name}"
               for name in ("question", "answer") if lookup(rec, getattr(f, name)) is None]
    return missing + [f"no verdict field '{v}' (fields.verdicts in {source})"
                      for v in f.verdicts if lookup(rec, v) is None]


def _item(rec: dict[str, Any], f: Fields, ident: str, group: str) -> ClaimItem:
    """One record read through the mapping's fields."""
    category = lookup(rec, f.category) if f.category else None
    scores = {s: n for s in f.scores if (n := _number(lookup(rec, s))) is not None}
    return ClaimItem(
        id=ident, question=text(lookup(rec, f.question)), gold=text(lookup(rec, f.gold)),
        answer=text(lookup(rec, f.answer)),
        category=None if category is None else text(category),
        verdicts=tuple(verdict(lookup(rec, v)) for v in f.verdicts), scores=scores,
        group=group)


def read_mapped(path: Path, mapping: Mapping, *, reader: str = "mapping",
                source: str = "the mapping") -> ClaimSet:
    """The items of ``path`` as ``mapping`` declares them. A declared field absent from an item
    is a problem named with the item and the field, all of them at once (exit 2)."""
    records = _some_records(path, mapping, source)
    f = mapping.fields
    problems: list[Problem] = []
    items: list[ClaimItem] = []
    seen: dict[str, int] = {}
    positions: dict[str, int] = {}
    for group, rec in records:
        pos = positions[group] = positions.get(group, -1) + 1
        where = f"item {group + '/' if group else ''}{pos}"
        if not isinstance(rec, dict):
            problems.append(Problem(str(path), where, "not an object; point 'items' at the list "
                                    f"of results in {source}"))
            continue
        problems.extend(Problem(str(path), where, msg)
                        for msg in _missing_fields(rec, f, source))
        ident = text(lookup(rec, f.id)) if f.id else f"{group}#{pos}" if group else str(pos)
        seen[ident] = seen.get(ident, 0) + 1
        if seen[ident] == 2:
            problems.append(Problem(str(path), where, f"id {ident!r} appears more than once; "
                                    f"name a unique field in fields.id of {source}"))
        items.append(_item(rec, f, ident, group))
    if problems:
        raise UserError(f"{path}: {len(problems)} problem(s) reading it with {source}",
                        problems)
    return ClaimSet(reader=reader, items=tuple(items), inputs=(hash_file(path),),
                    benchmark=mapping.benchmark, labels=dict(mapping.categories))
