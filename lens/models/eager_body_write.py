"""aiohttp's request-body writer started eagerly on Python 3.11, as aiohttp starts it on 3.12+.

Home-made, for a need measured: aiohttp hands a request's body to a task of its own
(``ClientRequest.write_bytes``). On Python 3.12 and later it creates that task with
``eager_start=True``, so a body of a few kilobytes is written before ``send`` returns; Python
3.11 has no eager tasks, so there the body waits for the next turn of the event loop, behind
every other task that is ready. At hundreds of requests in flight the replies arrive in bursts,
and each of lens's next requests then waits until the whole burst has been handled: at 64
questions in flight against a 100 ms provider, lens kept the provider busy 0.93 of the time with
the deferred write and 0.96 with the eager one on an idle 2-core machine, 0.81 and 0.92 on a
loaded one (bench/RESULTS.md, "aiohttp's body writer started eagerly"). No library offers eager
tasks on 3.11.

:func:`install` sets a task factory on the running loop that starts that one coroutine at once,
in the caller's turn, and leaves every other task to asyncio's own constructor. It is installed
only on Python 3.11 and only on a loop without a task factory of its own; on an aiohttp whose
body writer has another name it recognises nothing and changes nothing (a test fails then).
"""

from __future__ import annotations

import asyncio
import sys
import types
from collections.abc import Coroutine, Generator
from typing import Any

from aiohttp.client_reqrep import ClientRequest

# The code object of the coroutine aiohttp 3.12+ starts eagerly on Python 3.12+.
BODY_WRITER_CODE = ClientRequest.write_bytes.__code__
NEEDED = sys.version_info < (3, 12)


def install(loop: asyncio.AbstractEventLoop) -> bool:
    """Start aiohttp's body writers eagerly on ``loop``; whether the factory is in place."""
    factory = loop.get_task_factory()
    if factory is _eager_body_writer:
        return True
    if not NEEDED or factory is not None:
        return False
    loop.set_task_factory(_eager_body_writer)
    return True


def _eager_body_writer(loop: asyncio.AbstractEventLoop,
                       coro: Coroutine[Any, Any, Any] | Generator[Any, None, Any],
                       **kwargs: Any) -> asyncio.Future[Any]:
    if not isinstance(coro, types.CoroutineType) or coro.cr_code is not BODY_WRITER_CODE:
        return asyncio.Task(coro, loop=loop, **kwargs)
    # The first step now, as an eager task takes it; aiohttp checks ``done()`` on what it gets
    # and keeps only a writer still running, as it does with an eager task.
    try:
        pending = coro.send(None)
    except StopIteration as stop:
        done: asyncio.Future[Any] = loop.create_future()
        done.set_result(stop.value)
        return done
    except BaseException as exc:  # handed over as the task's outcome
        failed: asyncio.Future[Any] = loop.create_future()
        failed.set_exception(exc)
        return failed
    return asyncio.Task(_resumed(coro, pending), loop=loop, **kwargs)


@types.coroutine
def _resumed(coro: Coroutine[Any, Any, Any], pending: Any) -> Generator[Any, Any, Any]:
    """The rest of ``coro``, suspended at ``pending`` (the future its first step awaited), as a
    task runs it: the task waits for ``pending``, then the coroutine goes on; a cancellation
    while waiting is thrown into the coroutine, which closes its connection and re-raises."""
    try:
        yield pending
    except BaseException as exc:  # thrown into the coroutine it belongs to
        try:
            pending = coro.throw(exc)
        except StopIteration as stop:
            return stop.value
        return (yield from _resumed(coro, pending))
    # A started coroutine, driven on from where it waited, as a task would.
    return (yield from coro)
