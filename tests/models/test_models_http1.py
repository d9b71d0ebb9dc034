"""lens's HTTP/1.1 client against a real server on loopback that answers each request with
scripted raw bytes: reply framings, keep-alive reuse and its race, faults, TLS, cancellation.
Every test runs on both event loops lens may use."""

from __future__ import annotations

import asyncio
import gzip
import shutil
import socket
import ssl
import struct
import subprocess
import zlib
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from lens import eventloop
from lens.models.http1 import HTTP1Poster
from lens.models.json_http import TransportError

LOOPS = ["asyncio", *(["uvloop"] if eventloop.uvloop_available() else [])]

# What the server does after reading one request: send these bytes, then keep the connection
# open (``"keep"``), close it (``"close"``) or hang without replying (``"hang"``).
Action = tuple[bytes, str]


def ok(body: bytes = b'{"ok": true}', extra: bytes = b"") -> bytes:
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + extra +
            b"Content-Length: %d\r\n\r\n" % len(body) + body)


class RawServer:
    def __init__(self, actions: list[Action], tls: ssl.SSLContext | None = None) -> None:
        self.actions = actions
        self.tls = tls
        self.requests: list[tuple[bytes, bytes]] = []
        self.connections = 0
        self.port = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> RawServer:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0, ssl=self.tls)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    def url(self, scheme: str = "http") -> str:
        host = "localhost" if scheme == "https" else "127.0.0.1"
        return f"{scheme}://{host}:{self.port}/v1/chat/completions"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length:"))
                body = await reader.readexactly(length)
                self.requests.append((head, body))
                reply, then = self.actions.pop(0)
                if then == "hang":
                    await asyncio.sleep(3600)
                if then == "reset":
                    # SO_LINGER with a zero timeout makes close() send a TCP RST.
                    sock = writer.get_extra_info("socket")
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                    struct.pack("ii", 1, 0))
                    break
                # Split the reply to exercise reads across packets.
                for i in range(0, len(reply), 7):
                    writer.write(reply[i:i + 7])
                    await writer.drain()
                if then == "close":
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def run(loop: str, make: Callable[[], Awaitable[None]]) -> None:
    async def main() -> None:
        await make()

    eventloop.run(main, loop=loop)  # type: ignore[arg-type]


@pytest.fixture(params=LOOPS)
def loop(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_request_shape_and_keep_alive_reuse(loop: str) -> None:
    async def main() -> None:
        async with RawServer([(ok(b'{"n": 1}'), "keep"), (ok(b'{"n": 2}'), "keep"),
                              (ok(b'{"n": 3}'), "keep")]) as srv:
            poster = HTTP1Poster(srv.url(), {"Authorization": "Bearer k"}, 5)
            bodies = [await poster.post(b'{"q": %d}' % i) for i in range(3)]
            await poster.aclose()
        assert [r.body for r in bodies] == [b'{"n": 1}', b'{"n": 2}', b'{"n": 3}']
        assert all(r.status == 200 and r.headers["content-type"] == "application/json"
                   for r in bodies)
        assert srv.connections == 1 and poster.connections_opened == 1
        head, body = srv.requests[0]
        lines = head.decode().split("\r\n")
        assert lines[0] == "POST /v1/chat/completions HTTP/1.1"
        assert f"Host: 127.0.0.1:{srv.port}" in lines
        assert "Authorization: Bearer k" in lines and "Content-Length: 8" in lines
        assert "Content-Type: application/json" in lines and body == b'{"q": 0}'

    run(loop, main)


def test_reply_framings(loop: str) -> None:
    chunked = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\n")
    gz = gzip.compress(b'{"zipped": true}')
    deflated = zlib.compress(b'{"deflated": true}')
    interim = b"HTTP/1.1 100 Continue\r\n\r\n" + ok(b"after continue")
    until_close = b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"eof\": 1}"

    async def main() -> None:
        async with RawServer([(chunked, "keep"), (ok(gz, b"Content-Encoding: gzip\r\n"), "keep"),
                              (ok(deflated, b"Content-Encoding: deflate\r\n"), "keep"),
                              (interim, "keep"), (b"HTTP/1.1 204 No Content\r\n\r\n", "keep"),
                              (until_close, "close")]) as srv:
            poster = HTTP1Poster(srv.url(), {}, 5)
            got = [(await poster.post(b"{}")).body for _ in range(6)]
            await poster.aclose()
        assert got == [b"hello, world", b'{"zipped": true}', b'{"deflated": true}',
                       b"after continue", b"", b'{"eof": 1}']
        # Every framed reply left the connection reusable; only read-to-close ended it.
        assert srv.connections == 1

    run(loop, main)


def test_connection_close_is_honoured(loop: str) -> None:
    async def main() -> None:
        async with RawServer([(ok(extra=b"Connection: close\r\n"), "close"),
                              (ok(), "keep")]) as srv:
            poster = HTTP1Poster(srv.url(), {}, 5)
            await poster.post(b"{}")
            await poster.post(b"{}")
            await poster.aclose()
        assert srv.connections == 2

    run(loop, main)


def test_idle_connection_closed_by_the_server_is_replaced_transparently(loop: str) -> None:
    async def main() -> None:
        # The server answers, then drops the kept-alive connection as an idle timeout would.
        async with RawServer([(ok(b"first"), "close"), (ok(b"second"), "keep")]) as srv:
            poster = HTTP1Poster(srv.url(), {}, 5)
            assert (await poster.post(b"{}")).body == b"first"
            await asyncio.sleep(0.05)
            assert (await poster.post(b"{}")).body == b"second"
            await poster.aclose()
        assert srv.connections == 2 and len(srv.requests) == 2

    run(loop, main)


def test_reused_connection_dropped_without_reply_is_retried_once_on_a_new_one(loop: str) -> None:
    async def main() -> None:
        # The keep-alive race: the server drops a pooled connection as a request arrives on it.
        async with RawServer([(ok(b"first"), "keep"), (b"", "close"),
                              (ok(b"second"), "keep")]) as srv:
            poster = HTTP1Poster(srv.url(), {}, 5)
            assert (await poster.post(b"{}")).body == b"first"
            assert (await poster.post(b"{}")).body == b"second"
            await poster.aclose()
        assert srv.connections == 2 and poster.connections_opened == 2

    run(loop, main)


def test_a_reset_is_a_transport_error_even_on_a_reused_connection(loop: str) -> None:
    async def main() -> None:
        async with RawServer([(ok(b"first"), "keep"), (b"", "reset"),
                              (ok(b"never"), "keep")]) as srv:
            poster = HTTP1Poster(srv.url(), {}, 5)
            assert (await poster.post(b"{}")).body == b"first"
            with pytest.raises(TransportError, match="connection failed"):
                await poster.post(b"{}")
            await poster.aclose()
        # A reset is the server's fault: the model stack retries it and counts the retry.
        assert len(srv.requests) == 2

    run(loop, main)


def test_a_fresh_connection_dropped_without_reply_is_not_retried(loop: str) -> None:
    async def main() -> None:
        async with RawServer([(b"", "close"), (ok(b"never"), "keep")]) as srv:
            poster = HTTP1Poster(srv.url(), {}, 5)
            with pytest.raises(TransportError, match="without replying"):
                await poster.post(b"{}")
            await poster.aclose()
        # The retry of a failed call is the model stack's decision (with its back-off).
        assert len(srv.requests) == 1

    run(loop, main)


@pytest.mark.parametrize(("reply", "message"), [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{\"cut", "cut off"),
    (b"HTTP/1.1 200 OK\r\nContent-Len", "cut off in its headers"),
    (b"SMTP ready\r\n\r\n", "malformed reply: status line"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "chunk size"),
    (b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc", "corrupt"),
    (b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 3\r\n\r\nabc",
     "unsupported Content-Encoding"),
])
def test_faults_become_transport_errors(loop: str, reply: bytes, message: str) -> None:
    async def main() -> None:
        async with RawServer([(reply, "close")]) as srv:
            poster = HTTP1Poster(srv.url(), {}, 5)
            with pytest.raises(TransportError, match=message):
                await poster.post(b"{}")
            await poster.aclose()

    run(loop, main)


def test_refused_connection_and_timeout(loop: str) -> None:
    async def main() -> None:
        async with RawServer([]) as srv:
            port = srv.port
        poster = HTTP1Poster(f"http://127.0.0.1:{port}/v1", {}, 5)
        with pytest.raises(TransportError, match="connection failed") as refused:
            await poster.post(b"{}")
        assert not refused.value.timeout
        async with RawServer([(b"", "hang")]) as srv:
            poster = HTTP1Poster(srv.url(), {}, 0.2)
            with pytest.raises(TransportError, match="timed out") as hung:
                await poster.post(b"{}")
            assert hung.value.timeout
            await poster.aclose()

    run(loop, main)


def test_a_cancelled_request_does_not_return_its_connection(loop: str) -> None:
    async def main() -> None:
        async with RawServer([(b"", "hang"), (ok(b"fresh"), "keep")]) as srv:
            poster = HTTP1Poster(srv.url(), {}, None)
            task = asyncio.create_task(poster.post(b"{}"))
            await asyncio.sleep(0.1)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            # The next request must not read the abandoned exchange's reply.
            assert (await poster.post(b"{}")).body == b"fresh"
            await poster.aclose()
        assert srv.connections == 2

    run(loop, main)


def test_pool_is_per_event_loop() -> None:
    async def main(srv_port: int, poster: HTTP1Poster) -> bytes:
        return (await poster.post(b"{}")).body

    async def serve_twice() -> None:
        async with RawServer([(ok(b"one"), "keep"), (ok(b"two"), "keep")]) as srv:
            poster = HTTP1Poster(srv.url(), {}, 5)
            assert (await poster.post(b"{}")).body == b"one"
            # A second loop in another thread, as one anyio.run after another would be.
            loop = asyncio.get_running_loop()
            body = await loop.run_in_executor(None, asyncio.run, main(srv.port, poster))
            assert body == b"two"
        assert poster.connections_opened == 2

    asyncio.run(serve_twice())


def test_bad_url_is_rejected() -> None:
    with pytest.raises(ValueError, match="not an http"):
        HTTP1Poster("ftp://example.org/v1", {}, 5)


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_tls_with_a_trusted_certificate(loop: str, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)

    async def main() -> None:
        async with RawServer([(ok(b"secure"), "keep"), (ok(b"again"), "keep")],
                             tls=server_ctx) as srv:
            # Not trusted yet: the handshake fails with a clear transport error.
            untrusted = HTTP1Poster(srv.url("https"), {}, 5)
            with pytest.raises(TransportError, match=r"connection failed.*CERTIFICATE"):
                await untrusted.post(b"{}")
            monkeypatch.setenv("SSL_CERT_FILE", str(cert))
            poster = HTTP1Poster(srv.url("https"), {}, 5)
            assert (await poster.post(b"{}")).body == b"secure"
            assert (await poster.post(b"{}")).body == b"again"
            await poster.aclose()
        assert poster.connections_opened == 1

    run(loop, main)
