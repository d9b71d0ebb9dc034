"""A pooled JSON-over-HTTP POST for OpenAI-compatible endpoints, on aiohttp.

The body is serialised once by the caller and the reply returned as bytes for one
``json.loads``: no typed models in between. Replies are read up to a size cap, so a broken or
hostile server cannot make lens hold an unbounded body in memory.
"""

from __future__ import annotations

import asyncio
import json
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any, NamedTuple

import aiohttp

from lens.core.distribution import version as lens_version
from lens.models import eager_body_write

# Far above any chat completion (a 128k-token answer is under 1 MiB of JSON), far below memory
# trouble.
DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024


class HTTPReply(NamedTuple):
    status: int
    headers: Mapping[str, str]
    body: bytes


class TransportError(Exception):
    """The request did not produce a complete, acceptable reply.

    ``timeout`` tells a hang from a fault; ``retryable`` is false for faults a new attempt would
    only repeat (a reply over the size cap)."""

    def __init__(self, message: str, *, timeout: bool = False, retryable: bool = True) -> None:
        super().__init__(message)
        self.timeout = timeout
        self.retryable = retryable


class JSONPoster:
    """One connection pool per event loop, opened on first use and closed by ``aclose``.

    The pool has no connection cap of its own: the stack's endpoint limiter is the one place
    that decides how many requests are in flight.
    """

    def __init__(self, url: str, headers: Mapping[str, str], timeout_s: float | None,
                 max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES) -> None:
        self.url = url
        self.headers = request_headers(headers)
        # Only a new connection's connect is timed here: the whole request is timed by the
        # model stack's deadline (lens.models.stack), which every call runs under, and a
        # second, aiohttp-wide deadline armed a timer per request for nothing.
        self.timeout = aiohttp.ClientTimeout(total=None, sock_connect=timeout_s)
        self.proxy = env_proxy(url)
        self.max_response_bytes = max_response_bytes
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _session_for_loop(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop or self._session.closed:
            # A session is bound to the loop that made it; a client reused under a new loop
            # (one anyio.run after another) gets a fresh pool.
            # A request's body written in the turn that sends it, not one turn later behind
            # every ready task (Python 3.11; aiohttp does it itself on 3.12+).
            eager_body_write.install(loop)
            connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300)
            self._session = aiohttp.ClientSession(connector=connector, timeout=self.timeout,
                                                  headers=self.headers)
            self._loop = loop
        return self._session

    async def post(self, body: bytes) -> HTTPReply:
        session = self._session_for_loop()
        try:
            async with session.post(self.url, data=body, proxy=self.proxy) as resp:
                payload = await self._read(resp)
                return HTTPReply(resp.status, resp.headers, payload)
        except TimeoutError:
            raise TransportError("request timed out", timeout=True) from None
        except aiohttp.ClientPayloadError as exc:
            raise TransportError(f"the reply was cut off: {exc}") from None
        except aiohttp.ClientError as exc:
            raise TransportError(f"connection failed: {exc}") from None

    async def _read(self, resp: aiohttp.ClientResponse) -> bytes:
        cap = self.max_response_bytes
        declared = resp.content_length
        if declared is not None:
            if declared > cap:
                resp.close()
                raise self._too_large(f"declares {declared} bytes")
            if resp.headers.get("Content-Encoding", "identity") == "identity":
                # The body ends at its declared length, under the cap: read whole, in one call.
                # A compressed body is read in pieces below, since it can inflate past the cap.
                return await resp.read()
        chunks: list[bytes] = []
        size = 0
        # Without Content-Length (chunked, or ended by closing) or compressed, read in pieces:
        # the reply is stopped at the cap, not after it has all arrived.
        async for chunk in resp.content.iter_chunked(1 << 16):
            size += len(chunk)
            if size > cap:
                resp.close()
                raise self._too_large(f"passed {cap} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    def _too_large(self, what: str) -> TransportError:
        return TransportError(
            f"the reply {what}, over the cap of {self.max_response_bytes} bytes "
            "(raise options.max_response_bytes if the endpoint really sends such replies)",
            retryable=False)

    async def aclose(self) -> None:
        session, self._session = self._session, None
        # A pool of another (finished) loop cannot be closed from this one; its sockets went
        # with that loop.
        if (session is not None and not session.closed
                and self._loop is asyncio.get_running_loop()):
            await session.close()


def request_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The headers of every JSON POST, with the caller's (credentials) on top."""
    return {"Content-Type": "application/json", "Accept": "application/json",
            "User-Agent": f"lens/{lens_version()}", **headers}


def env_proxy(url: str) -> str | None:
    """The proxy that HTTP_PROXY / HTTPS_PROXY / NO_PROXY name for ``url``, as httpx (and so
    the openai SDK) would use it. aiohttp only reads them with ``trust_env``, which also sends
    ``.netrc`` credentials; lens reads the proxy alone, once per endpoint."""
    parts = urllib.parse.urlsplit(url)
    if parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        return None
    return urllib.request.getproxies().get(parts.scheme)


# ensure_ascii=False keeps non-ASCII text as UTF-8 (smaller than \u escapes); the body is sent
# with an application/json content type, which is UTF-8 by definition. One encoder for every
# call: json.dumps builds a new one each time it is given options.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def dumps(obj: Any) -> bytes:
    return _ENCODER.encode(obj).encode()
