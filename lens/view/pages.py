"""The viewer's pages as HTML. Every text lens did not write passes through
:func:`lens.report.documents.document.e` (control characters made visible, then HTML-escaped);
the report's own content comes from lens.report (its blocks, its question drill-down)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypedDict
from urllib.parse import quote, urlencode

from pydantic import BaseModel

import lens.report.documents.fmt as fmt
from lens.core.visible import visible
from lens.report.documents.document import e
from lens.report.documents.html import clip, question_body
from lens.report.foundations.data import QuestionRow
from lens.runs.records import QuestionRecord
from lens.scoring.foundations.detail import read_detail, shown
from lens.scoring.foundations.types import QuestionScores
from lens.view.index import Progress, Row, RunIndex, Scored
from lens.view.jobs import Piece
from lens.view.query import FIELD_SORTS, STATUS_FILTERS, Page, QuestionQuery

ANSWER_CLIP = 160
# A file of the run's errors/ folder as lens names it in an error ("see errors/x.txt").
ERROR_FILE = re.compile(r"errors/([\w.|:@%+=-]+\.txt)")
DETAIL_ROWS = 50


# -- pieces -----------------------------------------------------------------------------------

def run_url(name: str, *rest: str, **query: object) -> str:
    path = "/runs/" + quote(name, safe="") + "".join("/" + r for r in rest)
    q = {k: v for k, v in query.items() if v not in (None, "")}
    return path + ("?" + urlencode(q, doseq=True) if q else "")


def link(url: str, text: object, **attrs: str) -> str:
    extra = "".join(f' {k}="{e(v)}"' for k, v in attrs.items())
    return f'<a href="{e(url)}"{extra}>{e(text)}</a>'


def table(head: Sequence[str], rows: Iterable[Sequence[str]], table_id: str = "",
          row_classes: Sequence[str] = ()) -> str:
    """A table whose cells are HTML already (each escaped where it was built); no header row
    when ``head`` is empty."""
    tid = f' id="{e(table_id)}"' if table_id else ""
    h = "".join(f"<th>{e(c)}</th>" for c in head)
    body = []
    for i, r in enumerate(rows):
        cls = row_classes[i] if i < len(row_classes) and row_classes[i] else ""
        attr = f' class="{e(cls)}"' if cls else ""
        body.append(f"<tr{attr}>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>")
    thead = f"<thead><tr>{h}</tr></thead>" if head else ""
    return f'<table class="data"{tid}>{thead}<tbody>{"".join(body)}</tbody></table>'


def shell(title: str, body: str, crumbs: Sequence[tuple[str, str]] = ()) -> str:
    nav = " › ".join([link("/", "runs"), *(link(u, t) for u, t in crumbs)])
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{e(title)} · lens view</title>"
            "<link rel='icon' href='data:,'>"
            "<link rel='stylesheet' href='/static/view.css'></head><body>"
            f"<nav class='top'>{nav}</nav>{body}"
            "<script src='/static/view.js'></script></body></html>")


def problem_page(title: str, message: str, crumbs: Sequence[tuple[str, str]] = ()) -> str:
    return shell(title, f"<h1>{e(title)}</h1><pre class='refused'>{e(message)}</pre>", crumbs)


def piece_html(piece: Piece, job: str, what: str) -> str:
    """Content computed in the worker, or a note that it is being computed."""
    if piece.pending and not piece.html:
        return (f"<p class='pending' data-job='{e(job)}' data-empty='1'>computing {e(what)} "
                "(a large run takes a few seconds); the page reloads when it is ready</p>")
    out = []
    if piece.pending or not piece.fresh:
        out.append(f"<p class='pending' data-job='{e(job)}' data-empty='0'>these figures are "
                   "from an earlier state of the run; newer ones are being computed </p>")
    if piece.ok:
        out.append(piece.html)
    else:
        out.append(f"<pre class='refused'>{e(piece.html)}</pre>")
    return "".join(out)


# -- the run list -----------------------------------------------------------------------------

def condition_text(manifest: Mapping[str, Any]) -> str:
    cond = manifest.get("condition")
    cond = cond if isinstance(cond, dict) else {}
    adapters = [str(a.get("label") or a.get("name")) for a in cond.get("adapters") or []
                if isinstance(a, dict)]
    return (f"dataset {cond.get('dataset_id', 'unknown')} · agent "
            f"{cond.get('agent_model', 'unknown')} · judge {cond.get('judge_model') or 'none'} · "
            f"adapters {', '.join(adapters) or 'unknown'} · seed {cond.get('seed', 'unknown')} · "
            f"condition {str(manifest.get('condition_hash') or 'unknown')[:12]}")


def headline(index: RunIndex) -> str:
    """The primary metric's mean per adapter (the run page has the intervals)."""
    metrics = index.metric_names()
    if not metrics:
        return "not scored yet"
    pm = metrics[0]
    parts = []
    for adapter in index.adapters():
        values = [v for r in index.rows.values() if r.adapter == adapter
                  for s in [index.scored(r.key)] if s is not None
                  for v in [s.metric(pm)] if v is not None]
        mean = sum(values) / len(values) if values else None
        parts.append(f"{adapter} {fmt.num(mean)} (n={len(values)})")
    return f"{pm}: " + "; ".join(parts)


def run_status(index: RunIndex) -> str:
    status = str(index.manifest.get("status") or "unknown")
    p = index.progress
    if status == "running" and p.last_ts is not None:
        return f"running (last event {_age(time.time() - p.last_ts)} ago)"
    return status


def _age(seconds: float) -> str:
    s = max(0, int(seconds))
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{s // 60} min"
    return f"{s // 3600} h"


def done_text(p: Progress) -> str:
    """Questions done of the total the run announced; a run that announced none (made by other
    tools) shows its count alone."""
    total = p.questions_total
    return str(len(p.statuses)) if total is None else f"{len(p.statuses)}/{total}"


class RunListItem(TypedDict):
    """A run's line in the list (and in ``/api/runs``)."""

    name: str
    id: str
    status: str
    done: str
    headline: str
    condition: str
    created: str


def run_list_item(index: RunIndex) -> RunListItem:
    """A run's line in the list; ``id`` is its name as the page's attributes hold it (what the
    script matches), and the texts are already made visible, as the page shows them."""
    return {"name": index.name, "id": visible(index.name, multiline=True),
            "status": visible(run_status(index)), "done": visible(done_text(index.progress)),
            "headline": visible(headline(index)),
            "condition": visible(condition_text(index.manifest)),
            "created": visible(str(index.manifest.get("created_at") or "unknown"))}


def run_list(items: Sequence[RunListItem], runs_dir: str, problems: Sequence[str],
             beside: str = "") -> str:
    """The index: the runs, then ``beside`` (the claims folders' section, HTML already)."""
    rows = []
    for it in items:
        name = it["name"]
        cells = [f"<input type='checkbox' name='run' value='{e(name)}' "
                 f"aria-label='{e('compare ' + name)}'>",
                 link(run_url(name), name, **{"class": "run"}), e(it["created"])]
        for f, text in (("status", it["status"]), ("done", it["done"]),
                        ("headline", it["headline"])):
            cells.append(f"<span data-run='{e(name)}' data-field='{f}'>{e(text)}</span>")
        cells.append(f"<span class='meta'>{e(it['condition'])}</span>")
        rows.append(cells)
    body = [f"<h1>lens view</h1><p class='meta'>runs under {e(runs_dir)}</p>"]
    body += [f"<p class='warn'>{e(p)}</p>" for p in problems]
    if not items:
        body.append("<p>No run directories here yet (a run directory holds a "
                    "manifest.json): start one with <code>lens run CONFIG</code>.</p>")
    body.append("<form method='get' action='/compare' id='runs-form'>"
                + table(["", "run", "created", "status", "questions done", "headline",
                         "condition"], rows, table_id="runs")
                + "<button type='submit'>side by side</button> <span class='meta'>two or more "
                  "runs, or one run with several adapters</span></form>")
    body.append(beside)
    return shell("runs", "".join(body))


# -- a run ------------------------------------------------------------------------------------

LIVE_FIELDS = (
    ("live-status", "status"), ("live-units", "units done / started / total"),
    ("live-questions", "questions done"), ("live-outcomes", "answered · empty · errored"),
    ("live-unit-errors", "failed units"), ("live-tool-errors", "tool errors"),
    ("live-rate", "questions per second (last minute)"), ("live-tokens", "agent tokens"),
    ("live-spend", "spend"), ("live-limits", "rate-limit waits (429s) · retries"),
    ("live-last", "last event"),
)


def _outcomes(p: Progress) -> dict[str, int]:
    """Questions done by how they ended: answered, empty_answer, error (and any other)."""
    counts = {"answered": 0, "empty_answer": 0, "error": 0}
    for status in p.statuses.values():
        counts[status] = counts.get(status, 0) + 1
    return counts


def _dict_in(usage: dict[str, Any], key: str) -> dict[str, Any]:
    """A block of the usage event, empty when the run did not report it."""
    block = usage.get(key)
    return block if isinstance(block, dict) else {}


def _agent_cost(rows: Iterable[Row]) -> tuple[float, int]:
    """The agent's cost over the questions with a price, and how many answered questions have
    none."""
    rows = list(rows)
    return (sum(r.cost for r in rows if r.cost is not None),
            sum(1 for r in rows if r.cost is None and r.status != "error"))


def _waits(rate_limited: dict[str, Any]) -> int:
    """The rate-limit waits (429s) of every model together."""
    return sum(int(v) for v in rate_limited.values() if isinstance(v, int | float))


def _spend_text(agent_cost: float, unpriced: int, usage: dict[str, Any]) -> str:
    """The agent's spend, the questions without a price, then each other role's spend."""
    spend = f"agent ${agent_cost:.4f}"
    if unpriced:
        spend += f" (+{unpriced} questions without a price)"
    for role, u in sorted(_dict_in(usage, "by_role").items()):
        if role != "agent" and isinstance(u, dict):
            cost = u.get("cost_usd")
            spend += f" · {role} " + ("unknown" if cost is None else f"${float(cost):.4f}")
    return spend


class UnitCounts(TypedDict):
    total: int | None
    started: int
    done: int
    failed: int


class QuestionCounts(TypedDict):
    total: int | None
    done: int
    answered: int
    empty: int
    errored: int
    already_done: int


class UnitError(TypedDict):
    unit: str
    error: str


class ProgressData(TypedDict):
    """The live panel's figures (``/api/runs/NAME/progress``); ``display`` holds its texts
    by element id."""

    status: str
    units: UnitCounts
    questions: QuestionCounts
    tool_errors: int
    retries: int
    rate_limited: dict[str, Any]  # the run's usage event's block, as the run reported it
    rate_qps: float | None
    agent_tokens: int
    agent_cost_usd: float
    questions_without_price: int
    finished: bool
    events: int
    unit_errors: list[UnitError]
    display: dict[str, str]


def _live_display(index: RunIndex, data: ProgressData, spend: str, waits: int
                  ) -> dict[str, str]:
    """The live panel's texts by element id, from the figures of :func:`progress_data`."""
    p = index.progress
    units, q, rate = data["units"], data["questions"], data["rate_qps"]
    return {
        "live-status": run_status(index),
        "live-units": f"{units['done']} / {units['started']} / "
                      f"{'?' if units['total'] is None else units['total']}",
        "live-questions": done_text(p),
        "live-outcomes": f"{q['answered']} · {q['empty']} · {q['errored']}",
        "live-unit-errors": str(units["failed"]),
        "live-tool-errors": str(data["tool_errors"]),
        "live-rate": "unknown" if rate is None else f"{rate:.2f}",
        "live-tokens": f"{data['agent_tokens']:,}",
        "live-spend": spend,
        "live-limits": (f"{waits} · {data['retries']}" if p.usage else
                        f"not reported by this run · {data['retries']}"),
        "live-nq": str(len(index.rows)),
        "live-last": ("none" if p.last_ts is None
                      else f"{_age(time.time() - p.last_ts)} ago"),
    }


def progress_data(index: RunIndex) -> ProgressData:
    """The live panel: raw numbers and, by element id, the texts the page shows."""
    p = index.progress
    counts = _outcomes(p)
    rows = index.rows.values()
    agent_cost, unknown_cost = _agent_cost(rows)
    limited = _dict_in(p.usage, "rate_limited")
    data: ProgressData = {
        "status": str(index.manifest.get("status") or "unknown"),
        "units": {"total": p.units_total, "started": len(p.units_started),
                  "done": len(p.units_done), "failed": len(p.unit_errors)},
        "questions": {"total": p.questions_total, "done": len(p.statuses),
                      "answered": counts["answered"], "empty": counts["empty_answer"],
                      "errored": counts["error"], "already_done": p.already_done},
        "tool_errors": sum(r.tool_errors for r in rows),
        "retries": sum(r.retries for r in rows), "rate_limited": limited,
        "rate_qps": p.rate(), "agent_tokens": sum(p.tokens.values()),
        "agent_cost_usd": agent_cost, "questions_without_price": unknown_cost,
        "finished": p.finished is not None, "events": p.events,
        "unit_errors": [{"unit": k, "error": v} for k, v in list(p.unit_errors.items())[:20]],
        "display": {},
    }
    display = _live_display(index, data, _spend_text(agent_cost, unknown_cost, p.usage),
                            _waits(limited))
    # Texts a script puts into the page: control characters shown, as on the server's pages.
    data["display"] = {k: visible(v) for k, v in display.items()}
    return data


def live_panel(index: RunIndex) -> str:
    data = progress_data(index)
    q = data["questions"]
    # Without a total (a run made by other tools), a finished run's bar is full.
    total = q["total"] or (q["done"] if index.progress.finished or data["status"] != "running"
                           else None)
    bar = (f"<progress id='live-bar' max='{total}' value='{q['done']}'></progress>"
           if total else "<progress id='live-bar'></progress>")
    rows = [[e(label), f"<span id='{fid}'>{e(data['display'][fid])}</span>"]
            for fid, label in LIVE_FIELDS]
    errors = "".join(f"<li>{e(u['unit'])}: {error_links(index.name, clip(u['error'], 300))}"
                     "</li>" for u in data["unit_errors"])
    return (f"<section class='live' id='live' data-src="
            f"'{e('/api' + run_url(index.name, 'progress'))}' data-updates='0'>"
            f"<b>progress</b> {bar} <span id='live-conn' class='warn'></span>"
            + table([], rows, table_id="live-table")
            + (f"<p class='fail'>failed units:</p><ul>{errors}</ul>" if errors else "")
            + "</section>")


def error_links(name: str, text: str) -> str:
    """``text`` escaped, with each ``errors/….txt`` it names (lens's own "see errors/x.txt")
    a link to that file of the run."""
    out, at = [], 0
    for found in ERROR_FILE.finditer(text):
        out += [e(text[at:found.start()]),
                link(run_url(name, "errors", quote(found.group(1))), found.group(0))]
        at = found.end()
    return "".join(out) + e(text[at:])


def run_page(index: RunIndex, report: Piece | None, job: str) -> str:
    """The run's page; ``report`` None when the run has problems (the report is not computed
    over files the viewer refused)."""
    name = index.name
    adapters = index.adapters()
    links = [f"<a href='{e(run_url(name, 'questions'))}' id='questions-link'>questions "
             f"(<span id='live-nq'>{len(index.rows)}</span>)</a>"]
    for a in adapters:
        links.append(link(run_url(name, "questions", adapter=a), f"{a} only"))
    if len(adapters) > 1:
        links.append(link("/compare?" + urlencode({"run": name}), "side by side of its adapters",
                          id="arms-link"))
    body = [f"<h1>run {e(name)}</h1>",
            f"<p class='meta'>{e(condition_text(index.manifest))}</p>",
            *(f"<p class='warn'>{e(p)}</p>" for p in index.problems),
            live_panel(index), "<p>" + " · ".join(links) + "</p>",
            (f"<p class='meta'>The report below is as of {len(index.rows)} questions; the "
             "panel above follows the run (reload the page for newer figures).</p>"
             if index.manifest.get("status") == "running" else ""),
            "<section id='report'>",
            piece_html(report, job, "the report") if report is not None else
            "<p class='warn'>The report is not computed while the run has the problems listed "
            "above; repair or remove what they name.</p>", "</section>"]
    return shell(f"run {name}", "".join(body), [(run_url(name), name)])


# -- questions --------------------------------------------------------------------------------

def options(name: str, label: str, choices: Sequence[tuple[str, str]], current: str) -> str:
    opts = "".join(f"<option value='{e(v)}'{' selected' if v == current else ''}>{e(t)}"
                   "</option>" for v, t in choices)
    return f"<label>{e(label)}<select name='{e(name)}'>{opts}</select></label>"


def filters_form(index: RunIndex, query: QuestionQuery, action: str) -> str:
    metrics = index.metric_names()
    types = sorted({s.question_type for s in index.scores.values()})
    checkpoints = sorted({r.checkpoint for r in index.rows.values()})
    parts = [
        f"<label>text<input type='search' name='q' value='{e(query.q)}' "
        "placeholder='ids, question, answer, error' id='f-q'></label>",
        options("adapter", "adapter", [("", "any"), *((a, a) for a in index.adapters())],
                 query.adapter),
        options("type", "question type", [("", "any"), *((t, t) for t in types)], query.type),
        options("checkpoint", "checkpoint", [("", "any"), *((str(c), str(c))
                                                            for c in checkpoints)],
                 "" if query.checkpoint is None else str(query.checkpoint)),
        options("status", "status", list(STATUS_FILTERS.items()), query.status),
        options("metric", "metric", [("", "(primary)"), *((m, m) for m in metrics)],
                 query.metric),
        f"<label>min<input class='num' name='min' value='{e(_n(query.min))}'></label>",
        f"<label>max<input class='num' name='max' value='{e(_n(query.max))}'></label>",
        options("sort", "sort by", [("", "run order"), *((m, m) for m in metrics),
                                     *((f, f) for f in FIELD_SORTS)], query.sort),
        options("order", "order", [("asc", "ascending"), ("desc", "descending")], query.order),
        "<button type='submit' id='f-apply'>apply</button>",
        link(action, "clear"),
    ]
    return f"<form class='filters' method='get' action='{e(action)}' id='filters'>" + "".join(
        parts) + "</form>"


def _n(x: float | None) -> str:
    return "" if x is None else f"{x:g}"


def _metric_cell(s: Scored | None, metric: str | None) -> str:
    if metric is None:
        return "not scored"
    return fmt.num(s.metric(metric) if s else None)


def questions_page(index: RunIndex, query: QuestionQuery, page: Page) -> str:
    name = index.name
    metrics = index.metric_names()
    shown = query.metric or (metrics[0] if metrics else None)
    rows = []
    classes = []
    for r in page.rows:
        s = index.scored(r.key)
        status = r.status + (f" · {r.tool_errors} tool errors" if r.tool_errors else "")
        rows.append([
            link(run_url(name, "question", key=r.key), r.qid, **{"class": "qlink"}),
            e(r.adapter), e(r.scope), e(f"r{r.repeat}"), e(index.question_type(r.key)),
            e(r.checkpoint), e(status), e(_metric_cell(s, shown)),
            f"<div class='clip'>{e(clip(r.answer or r.error, ANSWER_CLIP))}</div>"])
        classes.append("fail" if r.status == "error" else "")
    params = query.model_dump(exclude_defaults=True)
    pager = []
    if page.page > 1:
        pager.append(link(run_url(name, "questions", **{**params, "page": page.page - 1}),
                          "‹ previous"))
    pager.append(f"<span>page {page.page} of {page.pages}</span>")
    if page.page < page.pages:
        pager.append(link(run_url(name, "questions", **{**params, "page": page.page + 1}),
                          "next ›", id="next-page"))
    body = [f"<h1>questions of {e(name)}</h1>",
            filters_form(index, query, run_url(name, "questions")),
            f"<p id='qcount' class='meta'>{page.matched} of {page.total} questions match</p>",
            table(["question", "adapter", "scope", "repeat", "type", "checkpoint", "status",
                   shown or "score", "answer"], rows, table_id="questions",
                  row_classes=classes),
            f"<div class='pager'>{''.join(pager)}</div>"]
    return shell(f"questions of {name}", "".join(body),
                 [(run_url(name), name), (run_url(name, "questions"), "questions")])


# -- one question -----------------------------------------------------------------------------

def detail_html(value: Any, depth: int = 0) -> str:
    """A metric's detail as nested tables: a typed block of
    :mod:`lens.scoring.foundations.detail` shows the fields it was given and its extra keys, a
    stored value no model names shows as it is stored; every text escaped."""
    match value:
        case BaseModel():
            return detail_html(shown(value), depth)
        case Mapping():
            return _mapping_html(value, depth)
        case list():
            return _list_html(value, depth)
    text = _scalar(value)
    cls = " class='matched'" if value is True else " class='missed'" if value is False else ""
    return f"<span{cls}>{e(clip(text, 2000))}</span>"


def _mapping_html(value: Mapping[str, Any], depth: int) -> str:
    """A key-value table, the reason or verdict first."""
    if not value:
        return "<i>none</i>"
    keys = sorted(value, key=lambda k: (k not in ("reason", "why", "verdict"), ""))
    rows = "".join(f"<tr><th>{e(k)}</th><td>{detail_html(value[k], depth + 1)}</td></tr>"
                   for k in keys)
    return f"<table class='kv'>{rows}</table>"


def _list_html(value: list[Any], depth: int) -> str:
    """Blocks or mappings as one table (down to a depth), plain values as one line, anything
    else as its JSON."""
    if not value:
        return "<i>none</i>"
    if all(isinstance(v, BaseModel | Mapping) for v in value) and depth < 4:
        return _column_table([shown(v) if isinstance(v, BaseModel) else v for v in value],
                             depth)
    if all(_is_scalar(v) for v in value):
        return e(", ".join(_scalar(v) for v in value))
    text = json.dumps(value, ensure_ascii=False, default=_plain)
    return f"<pre>{e(clip(text, 2000))}</pre>"


def _column_table(rows: list[Mapping[str, Any]], depth: int) -> str:
    """Rows of one kind (a block's list of facts, comparisons, misses) as one table, a
    column per key."""
    cols: list[str] = []
    for v in rows[:DETAIL_ROWS]:
        cols += [k for k in v if k not in cols]
    body = "".join("<tr>" + "".join(f"<td>{detail_html(v.get(c), depth + 1)}</td>"
                                    for c in cols) + "</tr>"
                   for v in rows[:DETAIL_ROWS])
    more = (f"<p class='meta'>… {len(rows) - DETAIL_ROWS} more</p>"
            if len(rows) > DETAIL_ROWS else "")
    head = "".join(f"<th>{e(c)}</th>" for c in cols)
    return f"<table class='kv'><tr>{head}</tr>{body}</table>{more}"


def _is_scalar(v: Any) -> bool:
    return v is None or isinstance(v, str | int | float | bool)


def _plain(v: Any) -> Any:
    """A typed block inside a stored value, for json.dumps."""
    return shown(v) if isinstance(v, BaseModel) else str(v)


def _scalar(v: Any) -> str:
    if v is None:
        return "unknown"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.3f}".rstrip("0").rstrip(".") if abs(v) < 1e6 else f"{v:.4g}"
    return str(v)


def question_page(index: RunIndex, row: Row, record: QuestionRecord) -> str:
    name = index.name
    s = index.scored(row.key)
    metrics = s.metrics if s else {}
    detail = s.details if s else read_detail({})
    other = {k: v for k, v in detail.blocks() if k not in metrics}
    qrow = QuestionRow(record=record, scores=_question_scores(row, s))
    body = [
        f"<h1>{e(record.question_id)}</h1>",
        "<ul class='meta'>" + "".join(f"<li>{e(f)}</li>" for f in _question_facts(row, record, s))
        + "</ul>",
        "<h2>Question</h2>", f"<pre id='prompt'>{e(clip(row.question)) or '<i>(none)</i>'}</pre>",
        "<h2>Metrics and why</h2>",
        table(["metric", "value", "why"], _metric_rows(s), table_id="metrics"),
    ]
    if other:
        body += ["<h2>Other scoring detail (judge verdicts, retrieval, composite)</h2>",
                 f"<div id='other-detail'>{detail_html(other)}</div>"]
    traces = _trace_links(name, record)
    if traces:
        body.append("<p id='tracebacks'>traceback: " + ", ".join(traces) + "</p>")
    body += ["<h2>Answer, tool calls and transcript</h2>",
             f"<div id='drill'>{question_body(qrow, scores=False)}</div>"]
    return shell(record.question_id, "".join(body),
                 [(run_url(name), name), (run_url(name, "questions"), "questions"),
                  (run_url(name, "question", key=row.key), record.question_id)])


def _question_facts(row: Row, record: QuestionRecord, s: Scored | None) -> list[str]:
    """The question's line of facts under its title."""
    return [
        f"adapter {record.adapter}", f"scope {record.scope_id}", f"repeat {record.repeat}",
        f"question type {s.question_type if s else 'unknown'}",
        f"checkpoint {record.checkpoint} (episodes ingested {record.episodes_ingested})",
        f"status {record.status}", f"tool calls {len(record.tool_calls)} "
        f"({record.tool_errors} errors)", f"agent tokens {record.tokens('agent'):,}",
        f"cost {fmt.money(row.cost)}", f"wall {record.wall_s:.2f} s",
        f"memory state {record.memory_state or 'unknown (the adapter does not list)'}",
    ]


def _metric_rows(s: Scored | None) -> list[list[str]]:
    """Each metric of the question with its value and its detail (why)."""
    if s is None:
        return [[e("(not scored)"), e("unknown"), e("no scores.json entry")]]
    detail = s.details
    return [[e(m), e(fmt.num(s.metric(m))),
             detail_html(detail.of(m)) if m in detail else "<i>no detail</i>"]
            for m in s.metrics]


def _trace_links(name: str, record: QuestionRecord) -> list[str]:
    """Links to the traceback files the record's error names, each once."""
    return [link(run_url(name, "errors", quote(f)), "errors/" + f)
            for f in dict.fromkeys(ERROR_FILE.findall(record.error or ""))]


def _question_scores(row: Row, s: Scored | None) -> QuestionScores | None:
    if s is None:
        return None
    return QuestionScores(key=row.key, unit_key=row.unit, adapter=row.adapter,
                          scope_id=row.scope, repeat=row.repeat, question_id=row.qid,
                          question_type=s.question_type, checkpoint=row.checkpoint,
                          status=row.status, metrics=s.metrics, detail=s.detail)
