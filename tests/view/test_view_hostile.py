"""``lens view`` against hostile run folders, through the real command on loopback: it serves
nothing outside the runs folder, answers every page in bounded time whatever a run folder holds
(FIFOs, devices, corrupt, mistyped or deeply nested files), never deadlocks under concurrent
requests, and stops with its worker on SIGINT or SIGTERM."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlencode

import pytest

from lens.view.jobs import Jobs
from tests.conftest import ROOT
from tests.report.runfactory import RunSpec, make_run
from tests.support.signals import as_from_a_terminal
from tests.view.server import get, lens_view, require_view_extra

# Every page of a hostile run must answer within this. A blocked read never answers, so any
# finite bound catches it; the slowest page takes 0.6 s on an idle 2-core machine, and 120 s
# leaves room for a load of 8 many times over.
ANSWER_S = 120.0


def _children(pid: int) -> set[int]:
    """Every live descendant of ``pid``, read from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: the fields follow its last ")".
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z":
            parents[int(entry.name)] = int(fields[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _pages(name: str, key: str = "") -> list[str]:
    q = urlencode({"key": key})
    return ["/", "/api/runs", f"/runs/{name}", f"/api/runs/{name}/progress",
            f"/runs/{name}/questions", f"/runs/{name}/question?{q}"]


def _first_key(base: str, name: str) -> str:
    status, _, body = get(f"{base}/runs/{name}/questions")
    assert status == 200, body[:2000]
    found = re.search(r"question\?key=([^\"'&]+)", body)
    assert found, body[:3000]
    from urllib.parse import unquote
    return unquote(found.group(1).replace("&amp;", "&"))


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def _write_lines(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _rewrite_record(root: Path, change) -> None:  # type: ignore[no-untyped-def]
    """Change the first record of ``root`` and point its question_done event at the new bytes
    (appended to records.jsonl, as a later commit of the question would be)."""
    events = _lines(root / "events.jsonl")
    done = next(e for e in events if e.get("kind") == "question_done")
    records = root / done["record"]
    with open(records, "rb") as fh:
        fh.seek(done["offset"])
        record = json.loads(fh.read(done["length"]))
    changed = change(record)
    text = changed if isinstance(changed, str) else json.dumps(changed)
    data = text.encode() + b"\n"
    offset = records.stat().st_size
    with open(records, "ab") as fh:
        fh.write(data)
    done["offset"], done["length"] = offset, len(data)
    _write_lines(root / "events.jsonl", events)


def _run(folder: Path, name: str) -> Path:
    """A small finished run in ``folder/name``."""
    return make_run(folder, RunSpec(name=name, scopes=1, questions_per_scope=3)).rename(
        folder / name)


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    secret = tmp_path_factory.mktemp("outside") / "secret.jsonl"
    record = {"unit_key": "u", "question_id": "stolen", "adapter": "SECRET-ADAPTER",
              "scope_id": "s", "status": "answered", "answer": "THE-SECRET-TEXT"}
    secret.write_text(json.dumps(record) + "\n", encoding="utf-8")
    return secret


def _absolute_record(root: Path, secret: Path) -> None:
    events = _lines(root / "events.jsonl")
    size = secret.stat().st_size
    events.append({"seq": 10**6, "ts": "2026-01-01T00:00:00+00:00", "kind": "question_done",
                   "key": "u|stolen", "unit": "u", "question_id": "stolen",
                   "status": "answered", "record": str(secret), "offset": 0, "length": size})
    _write_lines(root / "events.jsonl", events)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory, outside: Path):
    """A runs folder of one good run and one run per hostile case, served."""
    require_view_extra()
    folder = tmp_path_factory.mktemp("runs")
    _run(folder, "good")

    absolute = _run(folder, "absolute")
    _absolute_record(absolute, outside)
    linked = _run(folder, "linked")
    (linked / "escape.jsonl").symlink_to(outside)
    events = _lines(linked / "events.jsonl")
    events.append({**events[-1], "key": "u|stolen", "record": "escape.jsonl", "offset": 0,
                   "length": outside.stat().st_size})
    _write_lines(linked / "events.jsonl", events)

    fifo = _run(folder, "fifo")
    (fifo / "events.jsonl").unlink()
    os.mkfifo(fifo / "events.jsonl")
    fifo_scores = _run(folder, "fifoscores")
    (fifo_scores / "scores.json").unlink()
    os.mkfifo(fifo_scores / "scores.json")
    device = _run(folder, "device")
    (device / "events.jsonl").unlink()
    (device / "events.jsonl").symlink_to("/dev/zero")
    huge = _run(folder, "huge")
    with open(huge / "manifest.json", "r+b") as fh:  # sparse: no disk used
        fh.seek(8 * 1024**3)
        fh.write(b"}")
    empty = folder / "empty"
    empty.mkdir()
    (empty / "manifest.json").write_bytes(b"")
    corrupt = _run(folder, "corrupt")
    (corrupt / "manifest.json").write_bytes(b"\xff\xfe{not json")
    (corrupt / "scores.json").write_text("[1, 2", encoding="utf-8")
    mistyped = _run(folder, "mistyped")
    (mistyped / "manifest.json").write_text('["a list"]', encoding="utf-8")

    wrong_repeat = _run(folder, "wrongrepeat")
    _rewrite_record(wrong_repeat, lambda r: {**r, "repeat": "x"})
    wrong_calls = _run(folder, "wrongcalls")
    _rewrite_record(wrong_calls, lambda r: {**r, "tool_calls": 5})
    traced = _run(folder, "traced")
    (traced / "errors").mkdir()
    (traced / "errors" / "u_1.q.txt").write_text("Traceback: the adapter raised",
                                                  encoding="utf-8")
    _rewrite_record(traced, lambda r: {**r, "status": "error", "answer": "",
                                       "error": "ValueError: boom (see errors/u_1.q.txt)"})
    deep = _run(folder, "deep")
    _rewrite_record(deep, lambda r: '{"answer": ' + "[" * 100_000 + "]" * 100_000 + "}")
    deep_event = _run(folder, "deepevent")
    with open(deep_event / "events.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"kind": "usage", "x": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    deep_scores = _run(folder, "deepscores")
    (deep_scores / "scores.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with lens_view(folder) as base:
        yield base, folder


def _timed_get(url: str) -> tuple[int, str, float]:
    t0 = time.monotonic()
    status, _, body = get(url)
    return status, body, time.monotonic() - t0


def test_a_record_outside_the_runs_folder_is_not_served(hostile, outside: Path) -> None:
    base, _ = hostile
    for name, named in (("absolute", outside.name), ("linked", "escape.jsonl")):
        for page in _pages(name, "u|stolen"):
            status, body, _ = _timed_get(base + page)
            assert "THE-SECRET-TEXT" not in body and "SECRET-ADAPTER" not in body, (name, page)
            assert status < 500, (name, page, body[:1000])
        status, body, _ = _timed_get(f"{base}/runs/{name}")
        assert named in body and "outside the run directory" in body, body[:3000]


def test_every_page_of_every_hostile_run_answers_in_bounded_time(hostile) -> None:
    base, folder = hostile
    names = sorted(p.name for p in folder.iterdir())
    for name in names:
        for page in _pages(name, "x"):
            status, body, took = _timed_get(base + page)
            assert took < ANSWER_S, (name, page, took)
            assert status < 500, (name, page, status, body[:2000])
    status, _, data = get(base + "/api/runs")
    listed = json.loads(data)
    unreadable = " ".join(listed["problems"])
    for name, why in [("fifo", "not a regular file"), ("fifoscores", "not a regular file"),
                      ("device", "outside the run directory"), ("huge", "bytes"),
                      ("empty", "manifest.json"), ("corrupt", "manifest.json"),
                      ("mistyped", "not a JSON object"),
                      ("deepevent", "nested more than 64 levels"),
                      ("deepscores", "nested more than 64 levels")]:
        assert re.search(rf"{name}: .*{why}", unreadable), (name, unreadable)
    assert "good" in {r["name"] for r in listed["runs"]}


def test_a_mistyped_record_is_named_and_its_run_still_shown(hostile) -> None:
    base, _ = hostile
    for name, field in [("wrongrepeat", "repeat"), ("wrongcalls", "tool_calls"),
                        ("deep", "nested")]:
        status, body, _ = _timed_get(f"{base}/runs/{name}")
        assert status == 200, body[:2000]
        assert "records.jsonl" in body and field in body, (name, body[:4000])
        status, body, _ = _timed_get(f"{base}/runs/{name}/questions")
        assert status == 200, body[:2000]
        status, _, data = get(base + "/api/runs")
        assert any(name in p and field in p for p in json.loads(data)["problems"]), data


class _FailsAtOnce:
    """A worker pool whose every job has failed by the time ``submit`` returns: the widest
    form of a report job that fails at once (its callback then runs in the submitting thread)."""

    def submit(self, fn, *args):  # type: ignore[no-untyped-def]
        future: Future[object] = Future()
        future.set_exception(RuntimeError("the report failed at once"))
        return future

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        pass


class _FailingJobs(Jobs):
    def start(self) -> None:
        self._pool = _FailsAtOnce()  # type: ignore[assignment]


@contextlib.contextmanager
def _served_in_process(folder: Path, jobs: Jobs) -> Iterator[str]:
    """The viewer's app on a real loopback server in this process (so its worker pool can be
    the one above)."""
    import uvicorn

    from lens.view.app import build_app

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(build_app(folder, jobs=jobs), host="127.0.0.1",
                                           port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def _status_within(url: str, timeout: float) -> int | str:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status
    except urllib.error.HTTPError as err:
        return err.code
    except OSError as exc:
        return f"no answer: {exc}"


def test_concurrent_requests_on_failing_report_jobs_never_deadlock(tmp_path: Path) -> None:
    """Runs whose report job fails at once, asked for by many clients at once: every page
    answers (no lock is held while a finished job's callback runs)."""
    require_view_extra()
    names = [_run(tmp_path, f"run{i}").name for i in range(6)]
    with _served_in_process(tmp_path, _FailingJobs(min_interval_s=0.0)) as base:
        urls = [f"{base}/runs/{n}" for n in names for _ in range(4)] + [f"{base}/"] * 4
        with ThreadPoolExecutor(max_workers=12) as pool:
            statuses = list(pool.map(lambda u: _status_within(u, ANSWER_S), urls))
        assert statuses == [200] * len(urls), statuses
        page = get(f"{base}/runs/{names[0]}")[2]
        assert "the report failed at once" in page


def test_an_errors_file_is_served_from_its_run_only(hostile, outside: Path) -> None:
    base, folder = hostile
    errors = folder / "good" / "errors"
    errors.mkdir(exist_ok=True)
    (errors / "u1.txt").write_text("Traceback: boom <b>", encoding="utf-8")
    (errors / "out.txt").symlink_to(outside)
    status, headers, body = get(f"{base}/runs/good/errors/u1.txt")
    assert status == 200 and body == "Traceback: boom <b>"
    assert headers["content-type"].startswith("text/plain")
    # The error of a record names its traceback as lens writes it; the page links it.
    key = _first_key(base, "traced")
    status, _, body = get(f"{base}/runs/traced/question?" + urlencode({"key": key}))
    assert status == 200, body[:2000]
    found = re.search(r"href=\"(/runs/traced/errors/[^\"]+)\"", body)
    assert found, body[:4000]
    status, _, text = get(base + found.group(1).replace("&amp;", "&"))
    assert status == 200 and text == "Traceback: the adapter raised", (found.group(1), text)
    for bad in ("out.txt", "..%2Fmanifest.json", "%2Fetc%2Fpasswd", "missing.txt"):
        status, _, body = get(f"{base}/runs/good/errors/{bad}")
        assert status == 404 and "THE-SECRET-TEXT" not in body, (bad, status, body[:500])


def _start(folder: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "lens", "view", str(folder), *extra],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **as_from_a_terminal())
    assert proc.stdout is not None
    line = proc.stdout.readline()
    found = re.search(r"(http://127\.0\.0\.1:\d+)/", line)
    if not found:
        proc.kill()
        raise AssertionError(f"lens view did not start: {line!r} {proc.communicate()}")
    return proc, found.group(1)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_viewer_and_its_workers(tmp_path: Path, sig: signal.Signals) -> None:
    require_view_extra()
    _run(tmp_path, "one")
    fifo = _run(tmp_path, "two")
    (fifo / "events.jsonl").unlink()
    os.mkfifo(fifo / "events.jsonl")
    proc, base = _start(tmp_path, "--port", "0")
    try:
        status, _, body = get(base + "/runs/one")  # starts a report job in the worker
        assert status == 200, body[:2000]
        workers = _children(proc.pid)
        assert workers, "the viewer started no worker process"
        proc.send_signal(sig)
        # The viewer ends its workers within 4 s by design (terminate, then kill), and exits
        # in about 1 s idle; one that waited on the worker blocked by the fifo would never
        # exit, so the bound only needs to be finite, and 120 s is far from both.
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"lens view still running 120 s after {sig.name}") from None
        deadline = time.monotonic() + 60  # a worker may take a moment to be reaped
        while any(_alive(p) for p in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = {p for p in workers if _alive(p)}
        assert not left, f"left running after {sig.name}: {left}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_a_port_in_use_is_one_clear_message(tmp_path: Path) -> None:
    require_view_extra()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        done = subprocess.run([sys.executable, "-m", "lens", "view", str(tmp_path), "--port",
                               str(port)], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=60)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr + done.stdout
    assert f"port {port}" in done.stderr and "--port" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) <= 3, done.stderr


def test_the_commands_own_errors_print_line_breaks(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "lens", "view", str(tmp_path / "nope"),
                           "--host", "10.0.0.1"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    assert "␊" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) >= 3, done.stderr
