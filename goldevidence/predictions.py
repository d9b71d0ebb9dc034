"""The prediction contract, and reading predictions in every format GoldEvidenceBench writes.

A prediction is ``{id, value, support_ids}`` (``support_id`` alone, or beside an empty list, is
accepted), or ``{id, output}`` (also ``text`` or ``completion``) whose text holds that JSON.
Optional fields the grader uses: ``presented_ids`` (the ids the harness put in front of the
model, for the gold-presence decomposition), ``usage`` (``prompt_tokens``/``completion_tokens``),
``passes`` and ``wall_s``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_MISSING = object()


def extract_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text`` (bare, fenced, or embedded in prose), else None."""
    text = text.strip()
    try:
        obj = json.loads(text)
        if isinstance(obj, dict):
            return obj
    except json.JSONDecodeError:
        pass
    decoder = json.JSONDecoder()
    for m in re.finditer(r"\{", text):
        try:
            obj, _ = decoder.raw_decode(text, m.start())
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and ("value" in obj or "support_ids" in obj):
            return obj
    return None


def norm_value(v: Any) -> str | None:
    """Canonical text of a value: trimmed and unquoted; ``null``/``none`` to None; comma lists
    sorted (set members and report lists have no order).

    "unknown" stays a value: it is an admission, not the null a cleared key has."""
    if v is None:
        return None
    if isinstance(v, bool):
        v = str(v).lower()
    if isinstance(v, list):
        v = ",".join(str(x) for x in v)
    s = str(v).strip().strip('"').strip()
    if not s or s.lower() in ("null", "none"):
        return None
    if "," in s:
        s = ",".join(sorted(p.strip() for p in s.split(",") if p.strip()))
    return s


@dataclass
class Prediction:
    value: str | None = None
    value_missing: bool = False
    support_ids: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    presented_ids: list[str] | None = None
    tokens: int | None = None
    passes: int | None = None
    wall_s: float | None = None


_WRAPPERS = ("output", "text", "completion")


def _answer_body(raw: Mapping[str, object], errors: list[str]) -> Mapping[str, object]:
    """The object holding value and ids: the prediction itself, or the JSON in its text."""
    if any(f in raw for f in ("value", "support_ids", "support_id")):
        return raw
    text = next((t for f in _WRAPPERS if isinstance(t := raw.get(f), str) and t), None)
    if text is None:
        return raw
    found = extract_json_object(text)
    if found is None:
        errors.append("unparseable_output")
        return {}
    return found


def _support_ids(body: Mapping[str, object], errors: list[str]) -> list[str]:
    """Cited ids in the order given. Repeats are kept (they lengthen the scored list, which is
    what support bloat measures) and counted as an error."""
    ids = body.get("support_ids")
    if ids is None or ids == []:
        one = body.get("support_id")
        ids = [one] if one else []
    if isinstance(ids, str):
        ids = [ids]
    if not isinstance(ids, list):
        errors.append("invalid_support_ids")
        return []
    out = [s for s in (str(x).strip().strip("[]").strip() for x in ids if x is not None) if s]
    if len(set(out)) < len(out):
        errors.append("duplicate_support_ids")
    return out


def parse_prediction(raw: Mapping[str, object] | None) -> Prediction:
    """Normalise one prediction; problems become ``errors``, never exceptions."""
    if raw is None:
        return Prediction(value_missing=True, errors=["missing_prediction"])
    p = Prediction()
    body = _answer_body(raw, p.errors)
    value = body.get("value", _MISSING)
    if value is _MISSING:
        p.value_missing = True
        if "unparseable_output" not in p.errors:
            p.errors.append("missing_value")
    else:
        p.value = norm_value(value)
    p.support_ids = _support_ids(body, p.errors)
    presented = raw.get("presented_ids")
    if isinstance(presented, list):
        p.presented_ids = [str(x) for x in presented]
    _read_usage(raw, p)
    return p


def _read_usage(raw: Mapping[str, object], p: Prediction) -> None:
    usage = raw.get("usage")
    if isinstance(usage, dict):
        p.tokens = int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0))
    elif isinstance(tokens := raw.get("tokens"), int):
        p.tokens = tokens
    if isinstance(passes := raw.get("passes"), int):
        p.passes = passes
    if isinstance(wall_s := raw.get("wall_s"), int | float):
        p.wall_s = float(wall_s)
