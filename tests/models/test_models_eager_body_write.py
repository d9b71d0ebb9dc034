"""aiohttp's request body written in the turn that sends it (lens.models.eager_body_write), through
lens's own transport against real loopback servers: a small body before ``send`` returns, a body
too large for the socket's buffer finished by a task, a cancelled write closing its connection,
and nothing installed where asyncio or the caller already decide."""

from __future__ import annotations

import asyncio
import socket
import sys
import threading
from collections.abc import Iterator
from typing import ClassVar

import aiohttp
import pytest

from lens.models import eager_body_write
from lens.models.json_http import JSONPoster, TransportError
from tests.support.fake_openai import FakeOpenAI, Reply, fake_openai  # noqa: F401

only_311 = pytest.mark.skipif(not eager_body_write.NEEDED,
                              reason="Python 3.12+ starts aiohttp's body writer eagerly itself")


class _RecordingRequest(aiohttp.ClientRequest):
    """Notes the body writer aiohttp kept after ``send``: None when the body was written in
    the turn that sent it."""

    writers: ClassVar[list[object]] = []

    async def send(self, conn):  # type: ignore[no-untyped-def]
        response = await super().send(conn)
        _RecordingRequest.writers.append(self._writer)
        return response


def _poster(url: str) -> JSONPoster:
    return JSONPoster(url, {}, timeout_s=30)


async def _post_recording(poster: JSONPoster, body: bytes) -> int:
    session = poster._session_for_loop()
    session._request_class = _RecordingRequest
    reply = await poster.post(body)
    return reply.status


def test_aiohttp_still_has_the_body_writer_lens_starts() -> None:
    """An aiohttp that renamed its body writer would leave the factory recognising nothing."""
    assert eager_body_write.BODY_WRITER_CODE.co_name == "write_bytes"
    assert eager_body_write.BODY_WRITER_CODE.co_flags & 0x80  # CO_COROUTINE


@only_311
def test_a_small_body_is_written_before_send_returns(fake_openai: FakeOpenAI) -> None:  # noqa: F811
    fake_openai.script(Reply.text("ok"), Reply.text("ok"))
    _RecordingRequest.writers = []

    async def main() -> list[int]:
        poster = _poster(fake_openai.base_url + "/chat/completions")
        try:
            return [await _post_recording(poster, b'{"model": "m", "messages": []}')
                    for _ in range(2)]
        finally:
            await poster.aclose()

    assert asyncio.run(main()) == [200, 200]
    assert _RecordingRequest.writers == [None, None]
    assert fake_openai.requests[0].body == {"model": "m", "messages": []}


def test_without_the_factory_aiohttp_defers_the_write_on_311(fake_openai: FakeOpenAI) -> None:  # noqa: F811
    """The behaviour the factory removes, shown on the same request: a loop with a task factory
    of its own keeps it, and aiohttp's writer is then still running when ``send`` returns on
    Python 3.11."""
    fake_openai.script(Reply.text("ok"))
    _RecordingRequest.writers = []

    def own_factory(loop: asyncio.AbstractEventLoop, coro, **kw):  # type: ignore[no-untyped-def]
        return asyncio.Task(coro, loop=loop, **kw)

    async def main() -> int:
        asyncio.get_running_loop().set_task_factory(own_factory)
        poster = _poster(fake_openai.base_url + "/chat/completions")
        try:
            status = await _post_recording(poster, b"{}")
        finally:
            await poster.aclose()
        assert asyncio.get_running_loop().get_task_factory() is own_factory
        return status

    assert asyncio.run(main()) == 200
    writer = _RecordingRequest.writers[0]
    if eager_body_write.NEEDED:
        assert isinstance(writer, asyncio.Task)
    else:
        assert writer is None  # aiohttp's own eager start on 3.12+


@pytest.fixture()
def slow_reader() -> Iterator[tuple[str, threading.Event, list[int]]]:
    """A loopback HTTP server that reads nothing until told to, then reads the whole request
    and answers 200 with the body's size: a large body fills the socket's buffers first."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.settimeout(60)
    go = threading.Event()
    sizes: list[int] = []

    def serve() -> None:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        with conn:
            if not go.wait(60):
                return
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length"))
            while len(body) < length:
                chunk = conn.recv(1 << 20)
                if not chunk:
                    return
                body += chunk
            sizes.append(len(body))
            reply = b'{"ok": true}'
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: " + str(len(reply)).encode() + b"\r\n\r\n" + reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    host, port = server.getsockname()
    try:
        yield f"http://{host}:{port}/v1/chat/completions", go, sizes
    finally:
        go.set()
        server.close()
        thread.join(timeout=60)


BIG = b'{"text": "' + b"x" * (24 << 20) + b'"}'


async def _until_sent(task: asyncio.Task[int]) -> None:
    """Wait for ``send`` to return (the event), however long a loaded machine takes."""
    while not _RecordingRequest.writers and not task.done():
        await asyncio.sleep(0.01)


@only_311
def test_a_body_larger_than_the_buffers_is_finished_by_a_task(slow_reader) -> None:  # type: ignore[no-untyped-def]
    url, go, sizes = slow_reader
    _RecordingRequest.writers = []

    async def main() -> int:
        poster = _poster(url)
        try:
            task = asyncio.ensure_future(_post_recording(poster, BIG))
            await _until_sent(task)
            # The first step wrote what the socket took; a task writes the rest.
            assert isinstance(_RecordingRequest.writers[0], asyncio.Task)
            go.set()
            return await task
        finally:
            await poster.aclose()

    assert asyncio.run(main()) == 200
    assert sizes == [len(BIG)]  # the whole body arrived, in order, once


@only_311
def test_a_cancelled_write_closes_its_connection(slow_reader) -> None:  # type: ignore[no-untyped-def]
    url, _go, sizes = slow_reader
    _RecordingRequest.writers = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        errors: list[dict[str, object]] = []
        loop.set_exception_handler(lambda _loop, ctx: errors.append(ctx))
        poster = _poster(url)
        try:
            task = asyncio.ensure_future(_post_recording(poster, BIG))
            await _until_sent(task)
            writer = _RecordingRequest.writers[0]
            assert isinstance(writer, asyncio.Task) and not writer.done()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await asyncio.sleep(0)
            # The half-written body's writer ended, and its connection is not pooled for a
            # next request.
            assert writer.done()
            session = poster._session_for_loop()
            assert session.connector is not None
            assert sum(len(v) for v in session.connector._conns.values()) == 0
        finally:
            await poster.aclose()
        assert not [e for e in errors if "never retrieved" in str(e.get("message"))], errors

    asyncio.run(main())
    assert sizes == []


def test_installed_once_only_where_needed() -> None:
    async def main() -> tuple[bool, bool, object]:
        loop = asyncio.get_running_loop()
        first = eager_body_write.install(loop)
        second = eager_body_write.install(loop)
        return first, second, loop.get_task_factory()

    first, second, factory = asyncio.run(main())
    assert first == second == eager_body_write.NEEDED
    assert (factory is not None) == eager_body_write.NEEDED
    if sys.version_info >= (3, 12):
        assert factory is None


def test_other_tasks_keep_asyncio_semantics() -> None:
    """Every task but aiohttp's body writer is asyncio's own: started on the next turn, its
    own current task, named as asked."""

    async def main() -> None:
        eager_body_write.install(asyncio.get_running_loop())
        started: list[str] = []

        async def child() -> asyncio.Task[None] | None:
            started.append("child")
            return asyncio.current_task()  # type: ignore[return-value]

        task = asyncio.get_running_loop().create_task(child(), name="child-task")
        assert started == [] and isinstance(task, asyncio.Task)
        assert task.get_name() == "child-task"
        assert await task is task

    asyncio.run(main())


def test_transport_errors_are_unchanged_with_the_factory() -> None:
    """A refused connection is still a TransportError naming it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    async def main() -> None:
        poster = _poster(f"http://127.0.0.1:{port}/v1/chat/completions")
        try:
            with pytest.raises(TransportError, match="connection failed"):
                await poster.post(b"{}")
        finally:
            await poster.aclose()

    asyncio.run(main())
