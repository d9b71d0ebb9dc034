"""Keep secrets out of everything lens writes: configs are copied into every run directory."""

from __future__ import annotations

import re
from typing import Any

SECRET_KEY = re.compile(
    r"^(api[_-]?key|.*secret.*|.*password.*|passwd|authorization|.*auth[_-]?token|"
    r"access[_-]?token|bearer|private[_-]?key|dsn|connection[_-]?string)$",
    re.IGNORECASE,
)
# scheme://user:password@host → the password part.
_URL_PASSWORD = re.compile(r"(?P<head>[a-z][a-z0-9+.-]*://[^:/@\s]+:)(?P<pw>[^@/\s]+)(?=@)",
                           re.IGNORECASE)
MASK = "***"


def redact_text(text: str) -> str:
    return _URL_PASSWORD.sub(lambda m: m.group("head") + MASK, text)


def redact(value: Any) -> Any:
    """A copy of ``value`` with secret-named fields masked and URL passwords removed."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if isinstance(k, str) and SECRET_KEY.match(k) and isinstance(v, str):
                out[k] = redact_text(v) if k.lower() in ("dsn", "connection_string") else MASK
            else:
                out[k] = redact(v)
        return out
    if isinstance(value, list):
        return [redact(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value
