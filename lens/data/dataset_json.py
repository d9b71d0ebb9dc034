"""A dataset file's JSON read whole, and the refusals both of lens's readers share (this one and
the streamed reader, :mod:`lens.data.dataset_stream`): a key repeated in one object, a number
JSON does not allow, nesting past :data:`~lens.core.jsonguard.MAX_JSON_DEPTH`."""

from __future__ import annotations

import json
from typing import Any

from lens.core.errors import DatasetError


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
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DatasetError(
            f"{name}: not UTF-8 text (byte {exc.start}); re-save the file as UTF-8"
        ) from None
    try:
        return json.loads(text, parse_constant=_no_constant, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise DatasetError(
            f"{name}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise DatasetError(f"{name}: JSON nested too deeply (a LENS dataset is a few levels "
                           "deep)") from None
    except ValueError as exc:
        # Raised by the hooks above, or by int() for a number over Python's 4,300-digit limit.
        message = str(exc) if isinstance(exc, Refused) else (
            "a number is too long to read (over 4,300 digits)" if "digits" in str(exc)
            else f"unreadable value: {str(exc)[:200]}")
        raise DatasetError(f"{name}: invalid JSON: {message}") from None
