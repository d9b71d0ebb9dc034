"""A dataset file's JSON read whole, and the refusals both of lens's readers share (this one and
the streamed reader, :mod:`lens.data.dataset_stream`): a key repeated in one object, a number
JSON does not allow, nesting past :data:`~lens.core.jsonguard.MAX_JSON_DEPTH`."""

from __future__ import annotations

import json
from typing import Any

from lens.core.errors import DatasetError
from lens.core.jsonguard import MAX_JSON_DEPTH, JsonRefused, JsonTooDeep, loads_guarded


class Refused(ValueError):
    """JSON a permissive parser would read but lens refuses."""


class TooDeep(Refused):
    """Nesting past :data:`~lens.core.jsonguard.MAX_JSON_DEPTH`: refused at once, never read
    whole."""


def duplicate_key_message(key: str) -> str:
    shown = key if len(key) <= 80 else key[:80] + "…"
    return (f"duplicate key {shown!r} in one object; a reader would keep only one of the two "
            "values")


def not_finite_message(number: str) -> str:
    return f"{number} is not a number JSON allows; write a finite number or null"


def _no_constant(name: str) -> Any:
    raise Refused(not_finite_message(name))


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise Refused(duplicate_key_message(key))
        out[key] = value
    return out


def parse_whole(raw: bytes, name: str) -> Any:
    """The JSON of a dataset file's bytes (a UTF-8 byte order mark allowed); raises
    :class:`DatasetError` naming the file ``name`` and what is wrong."""
    try:
        return loads_guarded(raw, what=name, parse_constant=_no_constant,
                             object_pairs_hook=_unique_keys)
    except JsonTooDeep:
        raise DatasetError(f"{name}: JSON nested too deeply (more than {MAX_JSON_DEPTH} levels; "
                           "a LENS dataset is a few levels deep)") from None
    except JsonRefused as exc:
        raise DatasetError(f"{name}: {_refusal(exc)}") from None


def _refusal(exc: JsonRefused) -> str:
    cause = exc.cause
    if isinstance(cause, UnicodeDecodeError):
        return f"not UTF-8 text (byte {cause.start}); re-save the file as UTF-8"
    if isinstance(cause, json.JSONDecodeError):
        return f"invalid JSON at line {cause.lineno} column {cause.colno}: {cause.msg}"
    if isinstance(cause, Refused):  # the hooks above
        return f"invalid JSON: {cause}"
    if cause is not None and "digits" not in str(cause):
        return f"invalid JSON: unreadable value: {str(cause)[:200]}"
    return f"invalid JSON: {exc.reason}"
