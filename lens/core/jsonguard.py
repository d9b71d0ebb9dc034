"""The one guard for JSON from outside lens (datasets, import sources, bundles, requests to the
model gateway): bounded size and nesting depth, refused in linear time before a parser could
exhaust memory, recursion or CPU.

Two readers use it: :func:`loads_guarded` for a document read whole, and :class:`TokenChunks`,
the file wrapper that feeds ijson's streaming parser.
"""

from __future__ import annotations

import json
import re
from typing import IO, Any

# Nesting deeper than this is refused: lens's documents are a few levels deep (free-form
# ``meta`` a few more), and building a value nested 100,000 deep exhausts memory.
MAX_JSON_DEPTH = 64
# ijson builds the events of a whole read buffer, each with its path, before lens sees the
# first: a buffer of brackets costs the square of its size (64 kB of "[" is gigabytes of
# paths). A small buffer lets the depth check stop such a file within milliseconds.
STREAM_BUFFER = 4096
# One string or number longer than this is refused while streaming: no field of a LENS dataset
# holds a quarter of it (an episode's 2,000,000 characters are at most 12 MB escaped).
MAX_TOKEN_BYTES = 32 * 1024 * 1024

# The rest of a JSON string after its opening quote, through its closing quote; possessive,
# so a long string is matched in one pass without backtracking.
_STRING_REST = re.compile(rb'(?:[^"\\]++|\\.)*+"', re.S)
# The rest of a bare token (number, true, false, null) at a chunk's end.
_BARE_REST = re.compile(rb'[^\s\[\]{},:"]*+')
# Every escape of a chunk (whole strings only, so each backslash starts an escape or is
# escaped): a surrogate pair whole, a high or a low surrogate alone, or any other escape.
_ESCAPES = re.compile(rb'\\(?:(u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})'
                      rb'|(u[dD][89a-fA-F][0-9a-fA-F]{2})|.)', re.S)
# A string, or a bracket: what depth counting sees of a document.
_DEPTH_TOKENS = re.compile(r'"(?:[^"\\]++|\\.)*+"|[\[\]{}]', re.S)


class JsonRefused(ValueError):
    """JSON refused by the guard; ``status`` is the HTTP status a server answers with (413 for
    a body over its size, 400 for the rest). ``reason`` is the message without the name of what
    was read, and ``cause`` the parser's own error (a ``UnicodeDecodeError``, a
    ``json.JSONDecodeError``, or a hook's or ``int()``'s ``ValueError``) or None, so a reader
    with its own format's wording can say it in that wording."""

    def __init__(self, message: str, status: int = 400, *, reason: str | None = None,
                 cause: Exception | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.reason = message if reason is None else reason
        self.cause = cause


class JsonTooDeep(JsonRefused):
    """Nesting past the depth limit: caught apart by readers that name their format in it."""


def too_deep_message(limit: int = MAX_JSON_DEPTH) -> str:
    return f"JSON nested more than {limit} levels deep; repair the file or export it again"


def check_depth(text: str, limit: int = MAX_JSON_DEPTH) -> None:
    """Raise :class:`JsonRefused` when ``text`` nests brackets deeper than ``limit`` (brackets
    inside strings do not count); one linear pass."""
    depth = 0
    for m in _DEPTH_TOKENS.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > limit:
                raise JsonTooDeep(too_deep_message(limit))
        elif c in "]}":
            depth -= 1


def loads_guarded(data: bytes | str, *, what: str, max_bytes: int | None = None,
                  max_depth: int = MAX_JSON_DEPTH, **kwargs: Any) -> Any:
    """``json.loads`` for untrusted input: refuses a document over ``max_bytes`` (status 413),
    nested deeper than ``max_depth`` (:class:`JsonTooDeep`), not UTF-8 or not JSON (status
    400), naming ``what``. ``kwargs`` go to ``json.loads`` (a hook that refuses raises a
    ``ValueError``, kept as the refusal's ``cause``)."""
    size = len(data)
    if max_bytes is not None and size > max_bytes:
        raise JsonRefused(f"{what} is {size} bytes, over the {max_bytes} byte limit", 413)
    try:
        text = data.decode("utf-8-sig") if isinstance(data, bytes) else data
    except UnicodeDecodeError as exc:
        reason = f"not UTF-8 text (byte {exc.start})"
        raise JsonRefused(f"{what} is {reason}", reason=reason, cause=exc) from None
    check_depth(text, max_depth)
    try:
        return json.loads(text, **kwargs)
    except json.JSONDecodeError as exc:
        reason = f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        raise JsonRefused(f"{what}: {reason}", reason=reason, cause=exc) from None
    except RecursionError:  # a hook's own recursion; the depth check bounds the parser's
        raise JsonTooDeep(too_deep_message(max_depth)) from None
    except JsonRefused:
        raise
    except ValueError as exc:
        # An integer over Python's 4,300-digit conversion limit, or a hook's own refusal.
        reason = ("a number is too long to read (over 4,300 digits)" if "digits" in str(exc)
                  else "a value cannot be read")
        raise JsonRefused(f"{what}: {reason}", reason=reason, cause=exc) from None


def find_lone_surrogate(data: bytes) -> str | None:
    """The message for the first ``\\uD800``–``\\uDFFF`` escape of ``data`` (one JSON text)
    that is not half of a pair, or None: ``json.loads`` takes one into a string no UTF-8
    writer can hold."""
    if b"\\" not in data:
        return None
    for m in _ESCAPES.finditer(data):
        if m.group(2) is not None:
            return lone_surrogate_message(m.group(2).decode("ascii"), m.start())
    return None


def lone_surrogate_message(escape: str, at: int) -> str:
    return (f"a lone surrogate escape \\{escape} at byte {at}: half of a UTF-16 pair, not a "
            "character (UTF-8 cannot hold it); replace it with the character meant or remove "
            "it")


class TokenChunks:
    """A binary file handed to ijson in chunks of about :data:`STREAM_BUFFER` bytes that never
    end inside a string or number. yajl re-reads a token cut by a chunk's end from its start
    each time more arrives, so a string spread over n small chunks costs n times its length;
    whole tokens in a chunk keep the parse linear, while the small chunks keep bracket floods
    cheap. A token over ``max_token`` bytes raises :class:`JsonRefused`.

    With ``refuse_lone_surrogates``, a ``\\uD800``–``\\uDFFF`` escape outside a surrogate
    pair (no character; yajl reads it as ``?`` where a whole-file reader refuses it) is handed
    on as an invalid escape, so the parser stops at that very string, and
    :attr:`lone_surrogate` says what it was."""

    def __init__(self, fh: IO[bytes], max_token: int = MAX_TOKEN_BYTES, *,
                 refuse_lone_surrogates: bool = False) -> None:
        self._fh = fh
        self._buf = b""
        self._eof = False
        self._max_token = max_token
        self._surrogates = refuse_lone_surrogates
        self._offset = 0  # bytes handed to the parser so far
        self.lone_surrogate: str | None = None

    def _fill(self, size: int) -> bool:
        """Have at least ``size`` bytes buffered (fewer only at the end of the file)."""
        while len(self._buf) < size and not self._eof:
            more = self._fh.read(max(size - len(self._buf), STREAM_BUFFER))
            if not more:
                self._eof = True
            self._buf += more
        return len(self._buf) >= size

    def _too_long(self, start: int, what: str) -> JsonRefused:
        return JsonRefused(f"a JSON {what} of over {self._max_token} bytes (at byte "
                           f"{start} of this chunk); no field lens reads is that long")

    def _end_of(self, start: int, pattern: re.Pattern[bytes], what: str) -> int:
        """Where the token starting at ``start`` ends, reading on until it does."""
        while True:
            m = pattern.match(self._buf, start)
            if pattern is _STRING_REST:
                if m is not None:
                    return m.end()
            elif m is not None and (m.end() < len(self._buf) or self._eof):
                return m.end()
            if self._eof:
                return len(self._buf)  # unterminated at the end of the file: yajl names it
            if len(self._buf) - start > self._max_token:
                raise self._too_long(start, what)
            self._fill(2 * len(self._buf) + STREAM_BUFFER)

    def read(self, n: int = STREAM_BUFFER) -> bytes:
        self._fill(n)
        end = min(n, len(self._buf))
        i = 0
        while True:
            q = self._buf.find(b'"', i, end)
            if q < 0:
                break
            close = self._end_of(q + 1, _STRING_REST, "string")
            i = close
            end = max(end, close)
        if end and self._fill(end + 1):
            end = self._end_of(end, _BARE_REST, "number or word")
        chunk, self._buf = self._buf[:end], self._buf[end:]
        if self._surrogates and self.lone_surrogate is None and b"\\" in chunk:
            chunk = self._break_lone_surrogate(chunk)
        self._offset += len(chunk)
        return chunk

    def _break_lone_surrogate(self, chunk: bytes) -> bytes:
        for m in _ESCAPES.finditer(chunk):
            if m.group(2) is not None:
                self.lone_surrogate = lone_surrogate_message(m.group(2).decode("ascii"),
                                                             self._offset + m.start())
                # "\X" is no JSON escape: the parser fails inside this string.
                return chunk[:m.start() + 1] + b"X" + chunk[m.start() + 2:]
        return chunk
