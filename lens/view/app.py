"""The viewer's web application (Starlette): pages, their JSON, and the static script.

Every response carries a Content-Security-Policy that allows the viewer's own script and
stylesheet and nothing else (no inline script, no other origin), so the pages make no external
request and text that escaped escaping still could not run. Requests whose Host is not a
loopback name are refused (a DNS-rebinding page cannot read the runs).

Whatever a run folder holds, every page answers: a run that cannot be read is listed with the
reason (see :mod:`lens.view.index`), its report is not computed, and a request that meets an
unreadable record is answered 422 with what is wrong, never 500.
"""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

import lens.view.fragments as fragments
import lens.view.pages as pages
from lens.runs.store import MANIFEST
from lens.view.claims import claims_list, claims_names, claims_page, read_claims_json, summary
from lens.view.files import MAX_FILE_BYTES, Unreadable, inside, read_bytes
from lens.view.index import RunIndex
from lens.view.jobs import Jobs
from lens.view.query import QueryError, QuestionQuery, select
from lens.view.sidebyside import (
    CompareQuery,
    ViewArm,
    arms_of,
    chosen_arms,
    compare_page,
    question_side,
    refusal,
)

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
       "img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
           "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}
LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "::1", "[::1]"]
# Runs up to this many questions get their report within the request (it takes well under a
# second); larger ones answer at once and fill it in when the worker is done.
SMALL_RUN = 2000


class NotFound(Exception):
    pass


class Refused(Exception):
    """Runs that cannot be set side by side; the reason is the message."""


class Runs:
    """The run directories directly under the folder, each with its index (kept between
    requests and refreshed on each)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._lock = threading.Lock()
        self._indexes: dict[str, RunIndex] = {}

    def names(self) -> list[str]:
        # Any manifest.json, a FIFO or a link included: such a run is listed as unreadable
        # with the reason, not left out in silence.
        try:
            found = [p.name for p in self.folder.iterdir()
                     if not p.name.startswith(".") and os.path.lexists(p / MANIFEST)]
        except OSError:
            return []
        return sorted(found, key=lambda n: _mtime(self.folder / n / MANIFEST), reverse=True)

    def get(self, name: str) -> RunIndex:
        if not name or "/" in name or "\\" in name or name.startswith("."):
            raise NotFound(name)
        root = self.folder / name
        if not os.path.lexists(root / MANIFEST):
            raise NotFound(name)
        if not root.resolve().is_relative_to(self.folder.resolve()):
            raise Unreadable(f"{name} is a link to a folder outside {self.folder}; the viewer "
                             "reads only the runs inside the folder it was given")
        with self._lock:
            index = self._indexes.get(name)
            if index is None:
                index = self._indexes[name] = RunIndex(root)
        return index.refresh()


def _mtime(path: Path) -> float:
    try:
        return path.lstat().st_mtime
    except OSError:
        return 0.0


def _html(text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(text, status_code=status, headers=HEADERS)


def _json(data: object, status: int = 200) -> JSONResponse:
    return JSONResponse(data, status_code=status, headers=HEADERS)


def build_app(folder: Path, *, jobs: Jobs | None = None, host: str = "127.0.0.1") -> Starlette:
    """The viewer of the runs under ``folder``, answering requests addressed to a loopback
    name or to ``host`` (the loopback address it listens on)."""
    viewer = Viewer(folder, jobs or Jobs())
    return Starlette(routes=viewer.routes(), lifespan=viewer.lifespan, middleware=[
        Middleware(TrustedHostMiddleware, allowed_hosts=[
            *LOOPBACK_HOSTS, f"[{host}]" if ":" in host and not host.startswith("[") else host])])


class Viewer:
    """The route handlers over one folder of runs and the worker that computes reports."""

    def __init__(self, folder: Path, work: Jobs) -> None:
        self.folder = folder
        self.runs = Runs(folder)
        self.work = work

    def routes(self) -> list[Route]:
        return [
            Route("/", _threaded(self.run_list)),
            Route("/api/runs", _threaded(self.run_list)),
            Route("/runs/{name}", _threaded(self.run_page)),
            Route("/api/runs/{name}/progress", _threaded(self.progress)),
            Route("/runs/{name}/questions", _threaded(self.questions)),
            Route("/runs/{name}/question", _threaded(self.question)),
            Route("/runs/{name}/errors/{file:path}", _threaded(self.error_file)),
            Route("/claims/{name}", _threaded(self.claims)),
            Route("/compare", _threaded(self.compare)),
            Route("/compare/question", _threaded(self.compare_question)),
            Route("/api/job", _threaded(self.job)),
            Route("/static/{file}", _threaded(_asset)),
        ]

    @asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        self.work.start()
        threading.Thread(target=self.read_all, name="lens-view-read", daemon=True).start()
        try:
            yield
        finally:
            self.work.stop()

    def read_all(self) -> None:
        # Read every run once at start, so the first page asked for finds them read.
        for name in self.runs.names():
            try:
                self.runs.get(name)
            except Exception:  # shown on the run list when it is asked for
                continue

    def run_list(self, request: Request) -> Response:
        items, problems = self._run_items()
        checked, claim_problems = self._claim_summaries()
        if request.url.path.startswith("/api/"):
            return _json({"runs": items, "problems": problems + claim_problems,
                          "claims": [{"name": n, **s} for n, s in checked]})
        return _html(pages.run_list(items, str(self.folder), problems,
                                    claims_list(checked, claim_problems)))

    def _run_items(self) -> tuple[list[pages.RunListItem], list[str]]:
        items: list[pages.RunListItem] = []
        problems: list[str] = []
        for name in self.runs.names():
            try:
                index = self.runs.get(name)
                if index.unreadable:
                    problems.append(f"{name}: cannot be read: {'; '.join(index.unreadable)}")
                    continue
                items.append(pages.run_list_item(index))
                problems.extend(f"{name}: {p}" for p in index.problems)
            except NotFound:
                continue
            except Exception as exc:  # one unreadable run must not hide the others
                problems.append(f"{name}: cannot be read ({type(exc).__name__}: {exc})")
        return items, problems

    def _claim_summaries(self) -> tuple[list[tuple[str, dict[str, str]]], list[str]]:
        checked: list[tuple[str, dict[str, str]]] = []
        claim_problems: list[str] = []
        for name in claims_names(self.folder):
            try:
                checked.append((name, summary(read_claims_json(self.folder, name))))
            except Unreadable as exc:
                claim_problems.append(f"{name}: cannot be read: {exc}")
        return checked, claim_problems

    def claims(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in claims_names(self.folder):
            raise NotFound(f"claims folder {name!r}")
        return _html(claims_page(name, read_claims_json(self.folder, name)))

    def run_page(self, request: Request) -> Response:
        index = self.runs.get(request.path_params["name"])
        if index.problems:
            # The report reads the same files without these guards (a FIFO would hold the
            # worker for good, a record outside the run would be shown): it waits for a
            # readable run.
            return _html(pages.run_page(index, None, ""))
        job = "report:" + index.name
        piece = self.work.get(job, index.fingerprint(), fragments.report_fragment,
                              str(index.root), wait=len(index.rows) <= SMALL_RUN)
        return _html(pages.run_page(index, piece, job))

    def progress(self, request: Request) -> Response:
        return _json(pages.progress_data(self.runs.get(request.path_params["name"])))

    def questions(self, request: Request) -> Response:
        index = self.runs.get(request.path_params["name"])
        query = QuestionQuery.parse(request.query_params)
        query.check(index.metric_names())
        return _html(pages.questions_page(index, query, select(index, query)))

    def question(self, request: Request) -> Response:
        index = self.runs.get(request.path_params["name"])
        key = request.query_params.get("key", "")
        row = index.rows.get(key)
        if row is None:
            raise NotFound(f"question {key!r} of run {index.name}")
        return _html(pages.question_page(index, row, index.record(row)))

    def error_file(self, request: Request) -> Response:
        # The tracebacks lens wrote into the run's errors/ folder, as plain text; nothing
        # outside that folder (links followed) is served.
        index = self.runs.get(request.path_params["name"])
        file = request.path_params["file"]
        try:
            path = inside(index.root, "errors/" + file)
            if not path.is_relative_to(inside(index.root, "errors")):
                raise Unreadable(file)
            raw = read_bytes(path)
        except (Unreadable, OSError):
            raise NotFound(f"errors/{file} of run {index.name}") from None
        return PlainTextResponse(raw.decode("utf-8", errors="replace"), headers=HEADERS)

    def _compare_inputs(
            self, request: Request) -> tuple[CompareQuery, list[RunIndex], list[ViewArm]]:
        """The query of a side-by-side page, its runs and the arms it sets side by side;
        raises :class:`Refused` for runs lens compare would not compare."""
        params: dict[str, object] = dict(request.query_params)
        params["run"] = request.query_params.getlist("run")
        query = CompareQuery.parse(params)
        indexes = [self.runs.get(n) for n in query.run]
        for index in indexes:
            if index.problems:
                raise Unreadable(f"run {index.name}: " + "; ".join(index.problems[:3]))
        refused = refusal(indexes, arms_of(indexes))
        if refused is not None:
            raise Refused(refused)
        return query, indexes, chosen_arms(indexes, query)

    def compare(self, request: Request) -> Response:
        query, indexes, arms = self._compare_inputs(request)
        job = "compare:" + "\n".join([*query.run, f"arms={query.arms}",
                                      f"baseline={query.baseline}"])
        piece = self.work.get(job, tuple(i.fingerprint() for i in indexes),
                              fragments.compare_fragment, [str(i.root) for i in indexes],
                              [a.name for a in arms], query.baseline or None,
                              wait=sum(len(i.rows) for i in indexes) <= SMALL_RUN)
        return _html(compare_page(indexes, arms, query, piece, job))

    def compare_question(self, request: Request) -> Response:
        _query, _indexes, arms = self._compare_inputs(request)
        q = request.query_params
        try:
            key = (q["scope"], q["qid"], int(q["repeat"]))
        except (KeyError, ValueError):
            raise QueryError("scope, qid and repeat (a number) name the question") from None
        return _html(question_side(arms, key))

    def job(self, request: Request) -> Response:
        return _json({"ready": self.work.ready(request.query_params.get("name", ""))})


def _asset(request: Request) -> Response:
    from lens.view.assets import VIEW_CSS, VIEW_JS

    if request.path_params["file"] == "view.js":
        return Response(VIEW_JS, media_type="text/javascript", headers=HEADERS)
    if request.path_params["file"] == "view.css":
        return Response(VIEW_CSS, media_type="text/css", headers=HEADERS)
    raise NotFound(request.url.path)


def _threaded(fn: Callable[[Request], Response]) -> Callable[[Request], Awaitable[Response]]:
    """``fn`` run off the event loop, its refusals answered with their status (404, 400,
    422) as a page or, under /api/, as JSON (runs refused side by side: 409, as a page)."""
    async def endpoint(request: Request) -> Response:
        try:
            return await run_in_threadpool(fn, request)
        except NotFound as exc:
            text = f"not found: {exc.args[0] if exc.args else request.url.path}"
            if request.url.path.startswith("/api/"):
                return _json({"error": text}, 404)
            return _html(pages.problem_page("not found", text), 404)
        except QueryError as exc:
            if request.url.path.startswith("/api/"):
                return _json({"error": str(exc)}, 400)
            return _html(pages.problem_page("bad request", str(exc)), 400)
        except Unreadable as exc:
            return _unreadable(request, str(exc))
        except Refused as exc:
            return _html(pages.problem_page("side by side refused", str(exc)), 409)
        except (RecursionError, MemoryError) as exc:
            # Guarded where the files are read; this is the last line, should a value
            # still be too deep or too large to show.
            return _unreadable(request, f"too deeply nested or too large to show "
                                        f"({type(exc).__name__}; files over "
                                        f"{MAX_FILE_BYTES} bytes are not read)")
    return endpoint


def _unreadable(request: Request, text: str) -> Response:
    text = f"cannot be read: {text}"
    if request.url.path.startswith("/api/"):
        return _json({"error": text}, 422)
    return _html(pages.problem_page("cannot be read", text), 422)
