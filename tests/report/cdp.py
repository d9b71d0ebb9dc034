"""A minimal Chrome DevTools Protocol client over ``--remote-debugging-pipe``.

Chromium reads NUL-terminated JSON commands on fd 3 and writes replies and events on fd 4, so a
real headless browser can be driven with nothing but the standard library: no webdriver, no
websocket package, no browser download.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--window-size=1200,1600")


class CDPError(RuntimeError):
    pass


class PipeBrowser:
    def __init__(self, binary: str, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="lens-chromium-")
        cmd_read, self._cmd_write = os.pipe()
        self._resp_read, resp_write = os.pipe()
        # Move the child's ends above 4 so that placing them on 3 and 4 cannot clobber them.
        cmd_read, resp_write = (self._high(cmd_read), self._high(resp_write))
        # bash (dash takes single-digit fds only) puts the pipe ends on fds 3 and 4, where
        # Chromium expects them.
        script = (f'exec 3<&{cmd_read} 4>&{resp_write} {cmd_read}<&- {resp_write}>&-; '
                  'exec "$@"')
        argv = [binary, *FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-pipe",
                "about:blank"]
        # Chromium's own log goes to a file: a pipe nobody reads could fill and stall it.
        self._log_path = Path(self.profile) / "chromium.log"
        self._log = open(self._log_path, "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(["bash", "-c", script, "bash", *argv],
                                     pass_fds=(cmd_read, resp_write),
                                     stdout=subprocess.DEVNULL, stderr=self._log)
        os.close(cmd_read)
        os.close(resp_write)
        self._buf = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None

    @staticmethod
    def _high(fd: int) -> int:
        moved = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
        os.close(fd)
        return moved

    # -- transport ------------------------------------------------------------------------------
    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CDPError("timed out waiting for the browser")
            ready, _, _ = select.select([self._resp_read], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._resp_read, 1 << 16)
            if not chunk:
                err = self._log_path.read_text(errors="replace")[-2000:]
                raise CDPError(f"the browser closed its pipe: {err}")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, params: dict[str, Any] | None = None, *,
             session: bool = True) -> dict[str, Any]:
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._cmd_write, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise CDPError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def wait_event(self, method: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        for ev in self.events:
            if ev["method"] == method:
                return ev
        while True:
            msg = self._read_message(deadline)
            if "method" in msg:
                self.events.append(msg)
                if msg["method"] == method:
                    return msg

    # -- page ---------------------------------------------------------------------------------
    def open_page(self) -> None:
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)
        attached = self.send("Target.attachToTarget",
                             {"targetId": target["targetId"], "flatten": True}, session=False)
        self.session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable")

    def navigate(self, url: str) -> None:
        self.events = [e for e in self.events if e["method"] != "Page.loadEventFired"]
        self.send("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        res = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                             "awaitPromise": True})
        if "exceptionDetails" in res:
            raise CDPError(f"evaluate failed: {res['exceptionDetails']}")
        return res["result"].get("value")

    def type_text(self, text: str) -> None:
        self.send("Input.insertText", {"text": text})

    def click(self, selector: str) -> None:
        """A real mouse click at the centre of the element."""
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); "
            "e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect(); "
            "return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1],
                                                   "button": "left", "clickCount": 1})

    def screenshot(self, path: Path) -> None:
        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        path.write_bytes(base64.b64decode(data))

    def console_errors(self) -> list[str]:
        """Errors the page logged: console.error, uncaught exceptions, refused loads, CSP."""
        out = []
        for ev in self.events:
            p = ev.get("params", {})
            if ev["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(" ".join(str(a.get("value", a.get("description"))) for a in p["args"]))
            elif ev["method"] == "Runtime.exceptionThrown":
                out.append(str(p.get("exceptionDetails", {}).get("text")))
            elif ev["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(str(p["entry"].get("text")))
        return out

    def close(self) -> None:
        with contextlib.suppress(CDPError, OSError):
            self.send("Browser.close", session=False)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        for fd in (self._cmd_write, self._resp_read):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._log.close()
        shutil.rmtree(self.profile, ignore_errors=True)


CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser")


def chromium() -> str | None:
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


@contextlib.contextmanager
def headless_browser() -> Iterator[PipeBrowser]:
    """A page in headless Chromium, closed however the test ends. Without Chromium the test is
    skipped, except in CI (``CI`` set), where a missing browser fails it."""
    import pytest

    binary = chromium()
    if binary is None:
        reason = "Chromium is not installed (apt-get install -y chromium)"
        if os.environ.get("CI"):
            pytest.fail(f"browser test cannot run in CI: {reason}")
        pytest.skip(reason)
    b = PipeBrowser(binary, timeout=60)
    try:
        b.open_page()
        yield b
    finally:
        b.close()
