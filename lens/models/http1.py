"""lens's own HTTP/1.1 client for JSON POSTs to one endpoint: keep-alive connections on asyncio
streams.

Why not aiohttp for everything: at hundreds of calls in flight the client's CPU is what bounds
one process, and aiohttp spends most of its per-request CPU in generic machinery an API call
does not use (cookie jar, tracing hooks, URL objects, header multidicts). Writing a ready-made
request head plus the pre-serialised body to a pooled connection and reading back a
Content-Length or chunked reply costs a fraction of that (``bench/RESULTS.md``, "Runner").

It does what a chat-completions call needs and no more: POST, TLS, keep-alive, replies framed by
Content-Length, chunked encoding or connection close, gzip/deflate bodies. Endpoints reached
through a proxy go through aiohttp (``json_http.JSONPoster``); the openai backend chooses.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import urllib.parse
import zlib
from collections.abc import Mapping

from lens.models.json_http import HTTPReply, TransportError, request_headers

# Reply heads beyond this are not an API's: a misconfigured server or the wrong port.
_HEAD_LIMIT = 256 * 1024
_NO_BODY = frozenset({204, 304})

Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class _NoReply(Exception):
    """The connection was closed in good order (or was already closed) before any byte of a
    reply: on a reused keep-alive connection the server had closed it while idle. A reset is
    not this: it is a fault of the server's, reported for the model stack to retry and count."""


def tls_context() -> ssl.SSLContext:
    """The system's trust store plus certifi's (what the openai SDK trusts), so either transport
    reaches the same servers."""
    ctx = ssl.create_default_context()
    try:
        import certifi
    except ImportError:
        return ctx
    ctx.load_verify_locations(certifi.where())
    return ctx


class HTTP1Poster:
    """POSTs bodies to ``url``; one pool of idle connections per event loop.

    The pool has no cap of its own: the stack's endpoint limiter decides how many requests are
    in flight, and each in-flight request holds one connection.
    """

    def __init__(self, url: str, headers: Mapping[str, str], timeout_s: float | None) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self.url = url
        self.host = parts.hostname
        self.tls = parts.scheme == "https"
        self.port = parts.port or (443 if self.tls else 80)
        self.timeout_s = timeout_s
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        lines = [f"POST {target} HTTP/1.1", f"Host: {parts.netloc.rpartition('@')[2]}"]
        lines += [f"{k}: {v}" for k, v in request_headers(headers).items()]
        lines.append("Accept-Encoding: gzip, deflate")
        self._head = ("\r\n".join(lines) + "\r\n").encode("utf-8")
        self._ssl = tls_context() if self.tls else None
        self._idle: list[Connection] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self.connections_opened = 0

    async def post(self, body: bytes) -> HTTPReply:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            # Connections belong to the loop that opened them; a client reused under a new loop
            # (one anyio.run after another) starts a fresh pool. The old loop took its sockets.
            self._idle, self._loop = [], loop
        request = b"%sContent-Length: %d\r\n\r\n%s" % (self._head, len(body), body)
        try:
            async with asyncio.timeout(self.timeout_s):
                return await self._exchange(request)
        except TimeoutError:
            raise TransportError("request timed out", timeout=True) from None

    async def _exchange(self, request: bytes) -> HTTPReply:
        conn = self._take_idle()
        if conn is not None:
            try:
                return await self._use(conn, request)
            except _NoReply:
                # The keep-alive race every HTTP/1.1 client meets: the server closed the pooled
                # connection while it was idle and never read the request. Once, on a new one.
                pass
        try:
            return await self._use(await self._open(), request)
        except _NoReply:
            raise TransportError("connection failed: the server closed the connection without "
                                 "replying") from None

    async def _use(self, conn: Connection, request: bytes) -> HTTPReply:
        """One exchange on ``conn``, which goes back to the pool only if it can carry another."""
        try:
            reply, keep = await _roundtrip(conn, request)
        except BaseException:
            # Cancelled or failed mid-exchange: the connection's state is unknown.
            _close(conn)
            raise
        if keep:
            self._idle.append(conn)
        else:
            _close(conn)
        return reply

    def _take_idle(self) -> Connection | None:
        while self._idle:
            reader, writer = self._idle.pop()
            if not reader.at_eof() and not writer.is_closing():
                return reader, writer
            writer.close()
        return None

    async def _open(self) -> Connection:
        try:
            conn = await asyncio.open_connection(
                self.host, self.port, ssl=self._ssl,
                server_hostname=self.host if self.tls else None, limit=_HEAD_LIMIT)
        except OSError as exc:
            raise TransportError(f"connection failed: {exc}") from None
        self.connections_opened += 1
        return conn

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        if self._loop is not asyncio.get_running_loop():
            return
        for _, writer in idle:
            writer.close()
        for _, writer in idle:
            with contextlib.suppress(OSError, ssl.SSLError):
                await writer.wait_closed()


def _close(conn: Connection) -> None:
    conn[1].close()


async def _roundtrip(conn: Connection, request: bytes) -> tuple[HTTPReply, bool]:
    """Send ``request`` and read one reply; whether the connection can be reused."""
    reader, writer = conn
    replied = False
    try:
        writer.write(request)
        await writer.drain()
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError as exc:
                if not exc.partial:
                    raise _NoReply from None
                raise TransportError("the reply was cut off in its headers") from None
            replied = True
            version, status, headers = _parse_head(head)
            # Interim replies (100 Continue, 103 Early Hints) precede the real one.
            if not 100 <= status < 200:
                break
        body, framed = await _read_body(reader, status, headers)
    except BrokenPipeError as exc:
        # The peer had closed the connection: the request was not delivered.
        if not replied:
            raise _NoReply from None
        raise TransportError(f"connection failed: {exc}") from None
    except asyncio.IncompleteReadError as exc:
        raise TransportError(f"the reply was cut off: {len(exc.partial)} of {exc.expected} "
                             "bytes") from None
    except asyncio.LimitOverrunError:
        raise TransportError("the reply's headers are too large") from None
    except OSError as exc:
        raise TransportError(f"connection failed: {exc}") from None
    body = _decode(body, headers.get("content-encoding", ""))
    keep = (framed and version == "HTTP/1.1"
            and "close" not in headers.get("connection", "").lower())
    return HTTPReply(status, headers, body), keep


def _parse_head(head: bytes) -> tuple[str, int, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise TransportError(f"malformed reply: status line {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise TransportError(f"malformed reply: header line {line[:80]!r}")
        key = name.strip().lower()
        value = value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return parts[0], int(parts[1]), headers


async def _read_body(reader: asyncio.StreamReader, status: int,
                     headers: dict[str, str]) -> tuple[bytes, bool]:
    """The body, and whether its end was framed (so the connection may carry another reply)."""
    if status in _NO_BODY:
        return b"", True
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return await _read_chunked(reader), True
    length = headers.get("content-length")
    if length is not None:
        if not length.isdigit():
            raise TransportError(f"malformed reply: Content-Length {length[:40]!r}")
        return await reader.readexactly(int(length)), True
    return await reader.read(), False


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    chunks = []
    while True:
        line = await reader.readuntil(b"\r\n")
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise TransportError(f"malformed reply: chunk size {line[:40]!r}") from None
        if size == 0:
            # Trailer fields, if any, end with an empty line.
            while await reader.readuntil(b"\r\n") != b"\r\n":
                pass
            return b"".join(chunks)
        data = await reader.readexactly(size + 2)
        if data[-2:] != b"\r\n":
            raise TransportError("malformed reply: a chunk without its line end")
        chunks.append(data[:-2])


def _decode(body: bytes, encoding: str) -> bytes:
    encoding = encoding.strip().lower()
    if not body or encoding in ("", "identity"):
        return body
    try:
        if encoding in ("gzip", "x-gzip"):
            return zlib.decompress(body, 16 + zlib.MAX_WBITS)
        if encoding == "deflate":
            try:
                return zlib.decompress(body)
            except zlib.error:
                # Some servers send raw deflate without the zlib wrapper.
                return zlib.decompress(body, -zlib.MAX_WBITS)
    except zlib.error as exc:
        raise TransportError(f"the reply's {encoding} body is corrupt: {exc}") from None
    raise TransportError(f"the reply uses an unsupported Content-Encoding {encoding!r}")
