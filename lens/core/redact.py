"""Keep secrets out of everything lens writes or prints.

Two layers. ``redact`` masks secret-named fields and URL passwords in a config before it is
copied into a run directory. The secret registry masks the *values* of the keys a run reads
wherever they turn up: a provider may echo the key in a 401 message, a model may repeat it, an
adapter may put it in an error. Every file writer of a run (records, events, errors, manifest,
reports, model cache) and the process's stdout and stderr pass their text through ``scrub``.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

from lens.core.visible import visible

SECRET_KEY = re.compile(
    r"^(api[_-]?key|.*secret.*|.*password.*|passwd|authorization|.*auth[_-]?token|"
    r"access[_-]?token|bearer|private[_-]?key|dsn|connection[_-]?string)$",
    re.IGNORECASE,
)
# scheme://user:password@host → the password part.
# A match starts where a run of scheme characters starts (``lead``: those before its first
# letter): tried from every position instead, a long run of letters is read to its end from
# each (quadratic: a 1 MB name in a config took minutes).
_URL_PASSWORD = re.compile(r"(?<![a-z0-9+.-])(?P<lead>[0-9+.-]*)"
                           r"(?P<head>[a-z][a-z0-9+.-]*://[^:/@\s]+:)(?P<pw>[^@/\s]+)(?=@)",
                           re.IGNORECASE)
# Environment variables whose values are scrubbed even when no config names them: a run's
# libraries may read them on their own (OPENAI_API_KEY, HF_TOKEN, ...).
_SECRET_ENV_NAME = re.compile(r"(API_?KEY|ACCESS_?KEY|_KEY|TOKEN|SECRET|PASSWORD|PASSWD)$",
                              re.IGNORECASE)
# Shorter values are not scrubbed: masking every "test" or "1234" would mangle answers and
# records while protecting nothing a guess would not find.
MIN_SECRET_CHARS = 8
MASK = "***"


def redact_text(text: str) -> str:
    return _URL_PASSWORD.sub(lambda m: m.group("lead") + m.group("head") + MASK, text)


def shown(value: object, limit: int = 60) -> str:
    """``value`` as an error message may show it: URL passwords and registered secrets masked,
    control characters made visible, cut at ``limit`` characters."""
    text = visible(scrub(redact_text(str(value))))
    return text if len(text) <= limit else text[:limit] + "…"


def quoted(value: object, limit: int = 60) -> str:
    """:func:`shown`, in quotes."""
    return repr(shown(value, limit))


def redact(value: Any) -> Any:
    """A copy of ``value`` with secret-named fields masked and URL passwords removed (in keys
    too: usage is keyed by endpoint)."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            key = redact_text(k) if isinstance(k, str) else k
            if isinstance(k, str) and SECRET_KEY.match(k) and isinstance(v, str):
                out[key] = redact_text(v) if k.lower() in ("dsn", "connection_string") else MASK
            else:
                out[key] = redact(v)
        return out
    if isinstance(value, list):
        return [redact(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value


class _Registry:
    """The secret values this process knows, as one text and one bytes pattern."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: set[str] = set()
        self._text: re.Pattern[str] | None = None
        self._bytes: re.Pattern[bytes] | None = None
        self._longest = 0  # the longest value's length in UTF-8 bytes

    def add(self, value: str) -> None:
        forms = {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
        with self._lock:
            if forms <= self._values:
                return
            self._values |= forms
            ordered = sorted(self._values, key=len, reverse=True)
            self._text = re.compile("|".join(re.escape(v) for v in ordered))
            self._bytes = re.compile(b"|".join(re.escape(v.encode("utf-8")) for v in ordered))
            self._longest = max(len(v.encode("utf-8")) for v in ordered)

    def scrub(self, text: str) -> str:
        pattern = self._text
        return text if pattern is None else pattern.sub(MASK, text)

    def scrub_bytes(self, data: bytes) -> bytes:
        pattern = self._bytes
        return data if pattern is None else pattern.sub(MASK.encode(), data)

    def scrub_chunks(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        """The bytes of ``chunks`` scrubbed as :meth:`scrub_bytes` scrubs them joined, holding
        one chunk and the longest secret's length: a match is decided where the bytes after
        its start cover the longest secret, so one found across a chunk boundary is masked."""
        with self._lock:
            pattern, keep = self._bytes, self._longest - 1
        if pattern is None:
            yield from chunks
            return
        mask = MASK.encode()
        carry = b""
        for chunk in chunks:
            buf = carry + chunk
            cut = len(buf) - keep
            if cut <= 0:
                carry = buf
                continue
            out: list[bytes] = []
            pos = 0
            for m in pattern.finditer(buf):
                if m.start() >= cut:
                    break
                out += (buf[pos:m.start()], mask)
                pos = m.end()
            end = max(cut, pos)
            out.append(buf[pos:end])
            carry = buf[end:]
            yield b"".join(out)
        if carry:
            yield pattern.sub(mask, carry)


_REGISTRY = _Registry()


def register_secret(value: str | None) -> None:
    """Scrub ``value`` from everything this process writes or prints from now on."""
    if value and len(value.strip()) >= MIN_SECRET_CHARS:
        _REGISTRY.add(value.strip())
        if value != value.strip():
            _REGISTRY.add(value)


def scrub(text: str) -> str:
    return _REGISTRY.scrub(text)


def scrub_bytes(data: bytes) -> bytes:
    return _REGISTRY.scrub_bytes(data)


def scrub_chunks(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """:func:`scrub_bytes` over a stream of chunks (a file read piece by piece)."""
    return _REGISTRY.scrub_chunks(chunks)


def register_env_secrets(environ: dict[str, str] | None = None) -> None:
    """Register the values of environment variables named like keys, tokens or passwords."""
    env = os.environ if environ is None else environ
    for name, value in env.items():
        if _SECRET_ENV_NAME.search(name):
            register_secret(value)


def register_config_secrets(config: Any) -> None:
    """Register what a (dumped) config points at or holds: the value of every variable named
    by an ``*_env`` field (``api_key_env`` of the agent, judge and adapters' models), the value
    of every secret-named field, and every password in a URL."""
    for key, value in _walk(config):
        if not isinstance(value, str):
            continue
        if key.endswith("_env") and value:
            register_secret(os.environ.get(value))
        elif SECRET_KEY.match(key):
            register_secret(value)
        for m in _URL_PASSWORD.finditer(value):
            register_secret(m.group("pw"))


def _walk(value: Any, key: str = "") -> Iterable[tuple[str, Any]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(v, str(k))
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v, key)
    else:
        yield key, value


class ScrubbingStream:
    """A text stream that scrubs registered secrets from what is written to it."""

    def __init__(self, inner: TextIO) -> None:
        self._inner = inner

    def write(self, text: str) -> int:
        self._inner.write(scrub(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def scrub_standard_streams() -> None:
    """Route this process's stdout and stderr through the registry (idempotent). Loggers and
    progress bars created later write through them too."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, ScrubbingStream):
            setattr(sys, name, ScrubbingStream(stream))


def protect_process(config: Any) -> None:
    """Everything a process running part of a run needs so that no key it reads leaves it."""
    register_env_secrets()
    register_config_secrets(config)
    scrub_standard_streams()
