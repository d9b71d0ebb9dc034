"""The Letta server process of one ``letta`` adapter instance (``python -m
lens.adapters.letta_server FD``).

The adapter binds a loopback socket, passes its descriptor as ``FD`` and keeps the write end of
this process's standard input. Letta's FastAPI app is served by uvicorn on that socket, so no port
is chosen twice. When standard input reaches end of file (the adapter closed it, or the adapter's
process died, even by SIGKILL, and the kernel closed it) the server exits at once: it never
outlives the lens process that owns it.
"""

from __future__ import annotations

import os
import socket
import sys
import threading


def _exit_with_parent() -> None:
    try:
        while sys.stdin.buffer.read(1024):
            pass
    finally:
        os._exit(0)


def _sqlite_fixes() -> None:
    """Letta 0.11 declares the creation time of an agent's archive link with the server default
    ``'now()'``, a PostgreSQL function name that SQLite stores as that literal text; reading the
    row back then fails and with it every archival insert. The column gets SQL's own
    CURRENT_TIMESTAMP instead, before Letta creates its tables."""
    from letta.orm.archives_agents import ArchivesAgents
    from sqlalchemy import DefaultClause, func

    column = ArchivesAgents.__table__.c.created_at
    if str(getattr(column.server_default, "arg", "")) == "now()":
        DefaultClause(func.now())._set_parent_with_dispatch(column)


def main(argv: list[str]) -> None:
    if len(argv) != 1 or not argv[0].isdigit():
        raise SystemExit("usage: python -m lens.adapters.letta_server FD")
    threading.Thread(target=_exit_with_parent, name="parent-watch", daemon=True).start()
    sock = socket.socket(fileno=int(argv[0]))
    # Letta writes its OpenAPI schema to the working folder unless told not to (it reads argv).
    sys.argv = ["letta", "--no-generation"]
    import uvicorn

    _sqlite_fixes()
    from letta.server.rest_api.app import app

    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False,
                                           timeout_graceful_shutdown=5))
    server.run(sockets=[sock])


if __name__ == "__main__":
    main(sys.argv[1:])
