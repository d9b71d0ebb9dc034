"""``lens view [RUNS_DIR]``: a local web viewer of the runs under a folder, live while they run."""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib.util
import ipaddress
import socket
import webbrowser
from pathlib import Path
from typing import Any

from lens.core.distribution import install_hint
from lens.core.errors import UserError
from lens.core.visible import visible

DEFAULT_PORT = 8765


def register(sub: Any) -> None:
    p = sub.add_parser("view", help="browse runs in a local web viewer (live while they run)")
    p.add_argument("runs_dir", type=Path, nargs="?", default=Path("runs"), metavar="RUNS_DIR",
                   help="the folder whose run directories are shown (default: runs)")
    p.add_argument("--host", default="127.0.0.1",
                   help="loopback address to listen on (default 127.0.0.1); other addresses "
                        "are refused: the viewer shows transcripts and has no login")
    p.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help=f"port to listen on (default {DEFAULT_PORT}; 0: any free port)")
    p.add_argument("--open", action="store_true", help="open the viewer in the web browser")
    p.set_defaults(handler=_view)


def loopback_problem(host: str) -> str | None:
    """Why ``host`` may not be listened on, or None for a loopback address."""
    if host == "localhost":
        return None
    try:
        loopback = ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        loopback = False
    if loopback:
        return None
    return (f"--host {visible(host)}: the viewer listens on loopback only "
            "(127.0.0.1, ::1 or localhost); it serves transcripts without a "
            "login. To look from another machine, forward the port over SSH "
            "(ssh -L 8765:127.0.0.1:8765 HOST)")


def _view(args: argparse.Namespace) -> int:
    problems = [p for p in [loopback_problem(args.host)] if p]
    if not 0 <= args.port <= 65535:
        problems.append(f"--port {args.port}: must be in 0..65535")
    if not args.runs_dir.is_dir():
        problems.append(f"{visible(args.runs_dir)}: no such folder; give the folder that holds "
                        "your run directories (lens run writes them into its out_dir, runs/ "
                        "by default)")
    missing = [m for m in ("starlette", "uvicorn") if importlib.util.find_spec(m) is None]
    if missing:
        problems.append(f"{', '.join(missing)} not installed: {install_hint('view')}")
    if problems:
        raise UserError(["lens view cannot start:", *(f"  {p}" for p in problems)])
    import uvicorn

    from lens.view.app import build_app

    sock = _listen(args.host, args.port)
    app = build_app(args.runs_dir.resolve(), host=args.host)
    # A request still running when the viewer is stopped is given this long, then dropped.
    config = uvicorn.Config(app, host=args.host, port=args.port, log_level="warning",
                            access_log=False, timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    shown = f"[{args.host}]" if ":" in args.host else args.host

    def announce() -> None:
        port = args.port
        if server.servers:
            port = server.servers[0].sockets[0].getsockname()[1]
        url = f"http://{shown}:{port}/"
        print(f"lens view: {visible(args.runs_dir)} at {url} (Ctrl-C stops it)", flush=True)
        if args.open and not webbrowser.open(url):
            print("lens: no web browser could be started; open the address above", flush=True)

    # uvicorn stops on Ctrl-C and passes the signal on; stopping is this command's end.
    with contextlib.suppress(KeyboardInterrupt), sock:
        _serve(server, announce, sock)
    print("lens view: stopped", flush=True)
    return 0


def _listen(host: str, port: int) -> socket.socket:
    """The viewer's socket, bound here rather than by uvicorn: a port in use is the user's
    to change (one message, exit 2), not a server start-up failure with its tracebacks."""
    address = host.strip("[]")
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    # As uvicorn binds: a port left in TIME_WAIT by a viewer just stopped is free to take.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((address, port))
    except OSError as exc:
        sock.close()
        shown = f"[{address}]" if family == socket.AF_INET6 else address
        if exc.errno == errno.EADDRINUSE:
            raise UserError([f"lens view cannot start: port {port} on {shown} is in use "
                             "(another lens view, or another program)",
                             "  give another --port, or --port 0 for any free port"]) from None
        raise UserError(f"lens view cannot start: cannot listen on {shown}:{port} "
                        f"({exc.strerror})") from None
    return sock


def _serve(server: Any, announce: Any, sock: socket.socket) -> None:
    """Run the server; ``announce`` once it listens (so the port 0 picked is known)."""
    import asyncio

    async def main() -> None:
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started and not task.done():
            await asyncio.sleep(0.05)
        if server.started:
            announce()
        await task

    asyncio.run(main())
