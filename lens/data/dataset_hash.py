"""The content hash of a dataset: sha256 of its canonical JSON, fed one item at a time so that a
large dataset is never dumped whole (and a streamed file never held whole) to hash it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel

# A list given as the function that feeds its items, one at a time, to the function it is
# called with (a streamed file's scopes).
ItemFeed = Callable[[Callable[[Any], None]], None]


class CanonicalJson(str):
    """An item's canonical JSON, already made (a spilled scope, lens.data.scope_spill): hashed
    as it is."""


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def content_hash(obj: Any) -> str:
    """sha256 of the canonical JSON form of ``obj``."""
    return hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()


def fields_hash(fields: Mapping[str, object]) -> str:
    """sha256 of the canonical JSON of ``fields``, a list item by item; a list may be given as an
    :data:`ItemFeed`. The same digest as :func:`content_hash` of the dumped fields."""
    h = hashlib.sha256()
    for i, key in enumerate(sorted(fields)):
        h.update(("," if i else "{").encode() + canonical_json(key).encode() + b":")
        value = fields[key]
        if isinstance(value, list) or callable(value):
            _hash_items(h.update, value)
        else:
            h.update(canonical_json(value).encode("utf-8"))
    h.update(b"}")
    return h.hexdigest()


def _hash_items(update: Callable[[bytes], None], items: list[Any] | ItemFeed) -> None:
    count = 0

    def add(item: Any) -> None:
        nonlocal count
        if isinstance(item, CanonicalJson):
            text = str(item)
        else:
            text = canonical_json(item.model_dump(mode="json") if isinstance(item, BaseModel)
                                  else item)
        update((b"," if count else b"") + text.encode("utf-8"))
        count += 1

    update(b"[")
    if callable(items):
        items(add)
    else:
        for item in items:
            add(item)
    update(b"]")
