"""Two or more arms (an adapter of a run) on the same questions, where they differ, and the
``lens compare`` verdicts; refused, with ``lens compare``'s reason, when the conditions differ."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlencode

from pydantic import BaseModel, ConfigDict, Field, ValidationError

import lens.report.documents.fmt as fmt
from lens.core.errors import UserError
from lens.report.arm_selection import Candidate, choose, options_hash, parse_names
from lens.report.documents.document import e
from lens.report.documents.html import clip
from lens.report.foundations.data import RunData
from lens.report.run_comparison import differences, refusal_message
from lens.view.index import Row, RunIndex, Scored
from lens.view.jobs import Piece
from lens.view.pages import detail_html, link, options, piece_html, run_url, shell
from lens.view.query import PAGE_SIZE, QueryError

MatchKey = tuple[str, str, int]


class CompareQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")

    run: list[str] = Field(min_length=1)
    metric: str = ""
    q: str = ""
    type: str = ""
    only: Literal["", "diff"] = ""
    page: int = Field(default=1, ge=1)
    # The arms set side by side and compared, as ``lens compare --arms`` / ``--baseline``.
    arms: str = ""
    baseline: str = ""

    @classmethod
    def parse(cls, params: dict[str, object]) -> CompareQuery:
        try:
            return cls.model_validate(params)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}"
                                 for e in exc.errors())
            raise QueryError(f"bad query parameter ({problems}); pick runs on the run list "
                             "and press 'side by side'") from None


@dataclass(frozen=True)
class ViewArm:
    name: str
    index: RunIndex
    adapter: str
    rows: dict[MatchKey, Row]


def arms_of(indexes: Sequence[RunIndex]) -> list[ViewArm]:
    """Every (run, adapter) arm, named as ``lens compare`` names them."""
    many = len(indexes) > 1
    out = []
    for index in indexes:
        run_id = str(index.manifest.get("run_id") or index.name)
        for adapter in index.adapters():
            rows = {r.match_key: r for r in index.rows.values() if r.adapter == adapter}
            out.append(ViewArm(f"{run_id}:{adapter}" if many else adapter, index, adapter, rows))
    return out


def chosen_arms(indexes: Sequence[RunIndex], query: CompareQuery) -> list[ViewArm]:
    """The arms the query names (``arms``, ``baseline``), by ``lens compare``'s rules; every
    arm, each adapter once, when it names none."""
    every = arms_of(indexes)
    cands = []
    for arm in every:
        cond = arm.index.manifest.get("condition")
        cands.append(Candidate(item=arm, name=arm.name,
                               run_id=str(arm.index.manifest.get("run_id") or arm.index.name),
                               run_dir=arm.index.root.name, label=arm.adapter,
                               identity=(arm.adapter, options_hash(
                                   cond if isinstance(cond, dict) else {}, arm.adapter))))
    try:
        return choose(cands, arms=parse_names(query.arms), baseline=query.baseline or None,
                      flag="query parameter {}".format).arms
    except UserError as exc:
        raise QueryError("; ".join(exc.lines)) from None


def refusal(indexes: Sequence[RunIndex], arms: Sequence[ViewArm]) -> str | None:
    """Why these runs cannot be set side by side (lens compare's own check), or None."""
    runs = [RunData(root=i.root, manifest=i.manifest, rows=[], scores=i.run_scores())
            for i in indexes]
    ids = [r.run_id for r in runs]
    if len(set(ids)) != len(ids):
        return f"the same run is given twice: {', '.join(ids)}"
    try:
        fields, diffs = differences(runs)
    except UserError as exc:
        return str(exc.args[0])
    if fields:
        return "\n".join([*refusal_message(runs, diffs),
                          "(the viewer never sets such runs side by side; `lens compare "
                          "--force` labels every table 'not comparable')"])
    if len(arms) < 2:
        return (f"{indexes[0].name}: only one arm (one adapter in one run); choose another "
                "run, or a run with several adapters")
    return None


def shared_metrics(indexes: Sequence[RunIndex]) -> list[str]:
    names = [i.metric_names() for i in indexes]
    common = set.intersection(*(set(n) for n in names)) if names else set()
    return [m for m in names[0] if m in common] if names else []


def _value(arm: ViewArm, row: Row | None, metric: str | None) -> float | None:
    if row is None or metric is None:
        return None
    s = arm.index.scored(row.key)
    return s.metric(metric) if s else None


def _differs(cells: list[tuple[Row | None, float | None]]) -> bool:
    seen = {(None if r is None else r.status, None if v is None else round(v, 6))
            for r, v in cells}
    return len(seen) > 1


Line = tuple[MatchKey, str, list[tuple[Row | None, float | None]], bool]
_MATRICES: dict[object, list[Line]] = {}
_MATRICES_KEPT = 8
_MATRICES_LOCK = threading.Lock()


def _question_keys(arms: Sequence[ViewArm]) -> list[MatchKey]:
    """Every question any arm asked, once, in the order the arms asked them."""
    return list(dict.fromkeys(k for arm in arms for k in arm.rows))


def _line(arms: Sequence[ViewArm], k: MatchKey, metric: str | None) -> Line:
    """A question's cells (its row and value in each arm), its type and whether they
    differ."""
    cells = [(arm.rows.get(k), _value(arm, arm.rows.get(k), metric)) for arm in arms]
    qtype = next((a.index.question_type(r.key) for a, (r, _) in zip(arms, cells, strict=True)
                  if r is not None), "unknown")
    return (k, qtype, cells, _differs(cells))


def _matrix(indexes: Sequence[RunIndex], arms: Sequence[ViewArm],
            metric: str | None) -> list[Line]:
    """Every question of the arms with its cells and whether they differ; kept until one of
    the runs changes (paging and filtering a large side by side then costs little)."""
    cache_key = (tuple((i.name, i.fingerprint()) for i in indexes), metric,
                 tuple(a.name for a in arms))
    with _MATRICES_LOCK:
        found = _MATRICES.get(cache_key)
    if found is not None:
        return found
    out = [_line(arms, k, metric) for k in _question_keys(arms)]
    with _MATRICES_LOCK:
        while len(_MATRICES) >= _MATRICES_KEPT:
            _MATRICES.pop(next(iter(_MATRICES)))
        _MATRICES[cache_key] = out
    return out


def compare_url(query: CompareQuery, **over: object) -> str:
    params = {**query.model_dump(exclude_defaults=True), "run": query.run, **over}
    params = {k: v for k, v in params.items() if v not in (None, "", 1) or k == "run"}
    return "/compare?" + urlencode(params, doseq=True)


def compare_page(indexes: Sequence[RunIndex], arms: Sequence[ViewArm], query: CompareQuery,
                 verdicts: Piece, job: str) -> str:
    metrics, metric = _chosen_metric(indexes, query)
    matrix = _matrix(indexes, arms, metric)
    lines = _filtered(matrix, query)
    differing = sum(1 for line in matrix if line[3])
    pages = max(1, -(-len(lines) // PAGE_SIZE))
    page = min(query.page, pages)
    shown = lines[(page - 1) * PAGE_SIZE: page * PAGE_SIZE]
    head = "".join(f"<th>{link(run_url(a.index.name), a.name)}</th>" for a in arms)
    body = [_line_html(query, arms, line) for line in shown]
    types = sorted({t for _, t, _, _ in lines} | ({query.type} if query.type else set()))
    out = [
        "<h1>side by side</h1>",
        "<p class='meta'>" + " · ".join(e(a.name) for a in arms)
        + " · <a href='#verdicts'>lens compare's verdicts ↓</a></p>",
        _compare_form(query, metrics, types),
        f"<p id='sbs-count' class='meta'>{differing} of {len(matrix)} questions differ between "
        f"the arms ({metric or 'no shared metric'} or status); {len(lines)} shown by the "
        "filters. Green: the best arm on the question, red: the worst.</p>",
        f"<table class='data' id='sbs'><thead><tr><th>question</th><th>type</th>{head}"
        f"</tr></thead><tbody>{''.join(body)}</tbody></table>",
        f"<div class='pager'>{_pager(query, page, pages)}</div>",
        "<section id='verdicts'>",
        piece_html(verdicts, job, "the paired comparison"), "</section>",
    ]
    return shell("side by side", "".join(out))


def _chosen_metric(indexes: Sequence[RunIndex],
                   query: CompareQuery) -> tuple[list[str], str | None]:
    """The metrics every run has, and the one the page compares (the query's, else the
    first)."""
    metrics = shared_metrics(indexes)
    if query.metric and query.metric not in metrics:
        raise QueryError(f"metric: {query.metric!r} is not a metric every run has "
                         f"({', '.join(metrics) or 'none'})")
    return metrics, query.metric or (metrics[0] if metrics else None)


def _filtered(matrix: list[Line], query: CompareQuery) -> list[Line]:
    """The lines the query's filters keep: differences only, a question type, a text."""
    needle = query.q.strip().lower()
    lines = []
    for line in matrix:
        _, qtype, cells, diff = line
        if query.only == "diff" and not diff:
            continue
        if query.type and qtype != query.type:
            continue
        if needle and not any(r is not None and needle in r.haystack for r, _ in cells):
            continue
        lines.append(line)
    return lines


def _line_html(query: CompareQuery, arms: Sequence[ViewArm], line: Line) -> str:
    """One question's row: its link to the question side by side, its type, a cell per arm."""
    (scope, qid, rep), qtype, cells, diff = line
    values = [v for _, v in cells if v is not None]
    hi, lo = (max(values), min(values)) if values else (None, None)
    tds = [_cell_html(arm, r, v, diff, hi, lo) for arm, (r, v) in zip(arms, cells, strict=True)]
    side = "/compare/question?" + urlencode(
        {"run": query.run, "scope": scope, "qid": qid, "repeat": rep,
         **({"arms": query.arms} if query.arms else {}),
         **({"baseline": query.baseline} if query.baseline else {})}, doseq=True)
    row_cls = " class='differs'" if diff else ""
    return (f"<tr{row_cls}><td>{link(side, qid, **{'class': 'sbs'})}"
            f"<div class='meta'>{e(scope)} · r{rep}</div></td><td>{e(qtype)}</td>"
            + "".join(tds) + "</tr>")


def _cell_class(r: Row, v: float | None, diff: bool, hi: float | None,
                lo: float | None) -> str:
    """Where the arms differ: better for the best value, worse for the worst or an error."""
    if diff and r.status == "error":
        return " class='worse'"
    if diff and hi is not None and hi != lo and v is not None:
        return " class='better'" if v == hi else " class='worse'" if v == lo else ""
    return ""


def _cell_html(arm: ViewArm, r: Row | None, v: float | None, diff: bool,
               hi: float | None, lo: float | None) -> str:
    """One arm's cell: its value and status, green where it is the best arm on a question
    that differs and red where it is the worst (or failed)."""
    if r is None:
        return "<td class='worse'>not asked</td>"
    cls = _cell_class(r, v, diff, hi, lo)
    text = f"{fmt.num(v)} · {r.status}" + (f" · {r.tool_errors} tool errors"
                                          if r.tool_errors else "")
    return (f"<td{cls}>" + link(run_url(arm.index.name, "question", key=r.key), text)
            + "</td>")


def _pager(query: CompareQuery, page: int, pages: int) -> str:
    pager = []
    if page > 1:
        pager.append(link(compare_url(query, page=page - 1), "‹ previous"))
    pager.append(f"<span>page {page} of {pages}</span>")
    if page < pages:
        pager.append(link(compare_url(query, page=page + 1), "next ›"))
    return "".join(pager)


def _compare_form(query: CompareQuery, metrics: list[str], types: list[str]) -> str:
    hidden = "".join(f"<input type='hidden' name='run' value='{e(r)}'>" for r in query.run)
    return ("<form class='filters' method='get' action='/compare' id='filters'>" + hidden
            + f"<label>text<input type='search' name='q' value='{e(query.q)}' id='f-q'>"
              "</label>"
            + f"<label>arms<input type='text' name='arms' value='{e(query.arms)}' id='f-arms' "
              "placeholder='every arm (A,B,…)'></label>"
            + f"<label>baseline<input type='text' name='baseline' value='{e(query.baseline)}' "
              "id='f-baseline' placeholder='(every pair)'></label>"
            + options("metric", "metric", [("", "(first shared)"), *((m, m) for m in metrics)],
                       query.metric)
            + options("type", "question type", [("", "any"), *((t, t) for t in types)],
                       query.type)
            + options("only", "show", [("", "every question"), ("diff", "only differences")],
                       query.only)
            + "<button type='submit' id='f-apply'>apply</button></form>")


def _metric_rows(arms: Sequence[ViewArm], key: MatchKey, s: Scored | None) -> list[str]:
    """One arm's metrics on the question, each with its detail, marked where the arms
    differ."""
    if s is None:
        return []
    others = [a.index.scored(a.rows[key].key) for a in arms if key in a.rows]
    rows = []
    for m in s.metrics:
        vals = {None if o is None else o.metric(m) for o in others}
        cls = " class='differs'" if len(vals) > 1 else ""
        why = detail_html(s.details.of(m)) if m in s.details else ""
        rows.append(f"<tr{cls}><td>{e(m)}</td><td>{e(fmt.num(s.metric(m)))}</td>"
                    f"<td>{why}</td></tr>")
    return rows


def _arm_column(arms: Sequence[ViewArm], arm: ViewArm, key: MatchKey) -> str:
    """One arm's column: status, tool calls, answer and metrics."""
    r = arm.rows.get(key)
    if r is None:
        return f"<div><h3>{e(arm.name)}</h3><p class='fail'>not asked</p></div>"
    rows = _metric_rows(arms, key, arm.index.scored(r.key))
    opened = link(run_url(arm.index.name, "question", key=r.key), "open")
    return (f"<div><h3>{e(arm.name)}</h3><p>{e(r.status)} · {r.tool_calls} tool calls "
            f"({r.tool_errors} errors) · {opened}"
            f"</p><h4>Answer</h4><pre>{e(clip(r.answer or r.error)) or '<i>(empty)</i>'}</pre>"
            "<table class='data'><thead><tr><th>metric</th><th>value</th><th>why</th></tr>"
            f"</thead><tbody>{''.join(rows)}</tbody></table></div>")


def question_side(arms: Sequence[ViewArm], key: MatchKey) -> str:
    """One question across the arms: status, each metric (differences marked), answer."""
    cols = [_arm_column(arms, arm, key) for arm in arms]
    scope, qid, rep = key
    first = next((a.rows[key] for a in arms if key in a.rows), None)
    prompt = first.question if first else ""
    expected = next((a.index.record(a.rows[key]).expected_answer for a in arms
                     if key in a.rows), None)
    shown = ("" if expected is None else
             f"<h4>Expected answer</h4><pre id='expected'>{e(clip(expected))}</pre>")
    return shell(qid, f"<h1>{e(qid)}</h1><p class='meta'>{e(scope)} · r{rep}</p>"
                 f"<pre id='prompt'>{e(clip(prompt))}</pre>{shown}<div class='cols' id='side'>"
                 + "".join(cols) + "</div>")
